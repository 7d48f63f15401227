"""Peak memory of the harness against the number of attempts already written.

Runs an instant agent for 1k, 10k and 50k attempts (100 tasks, repeated to that
many attempts) and prints the harness process's peak RSS after each run, measured in a fresh
subprocess per size so earlier sizes cannot inflate later ones. Flat figures mean the
cost of an attempt does not depend on how many came before it.

    .venv/bin/python benchmarks/memory.py [--sizes 1000,10000,50000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

AGENT = '''
TRAJECTORY = [{"type": "tool", "tool": "read_file", "args": {"path": "x.md"}, "error": False,
               "result": "r" * 200} for _ in range(10)]
def run_task(task, options):
    return {"answer": "yes " * 50, "steps": 10, "tokens": 100, "trajectory": TRAJECTORY}
'''

CHILD = """
import json, resource, sys, time
from pathlib import Path
from agent_eval.run.config import RunConfig
from agent_eval.run.runner import execute, prepare
root, repeats = Path(sys.argv[1]), int(sys.argv[2])
config = RunConfig(agent=str(root / "agent.py"), tasks=str(root / "suite.json"),
                   repeats=repeats, out=root / "r.json", trajectory_dir=root / "traj")
start = time.perf_counter()
execute(prepare(config))
peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": time.perf_counter() - start, "peak_mb": peak_kb / 1024}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,50000")
    args = parser.parse_args()
    print(f"{'attempts':>9} {'wall s':>8} {'ms/attempt':>11} {'harness peak RSS MB':>20}")
    for size in (int(x) for x in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)
            (root / "agent.py").write_text(AGENT)
            tasks = [{"id": f"t{i}", "task": "say yes", "expect_in_answer": ["yes"]}
                     for i in range(100)]  # fmt: skip
            suite = {"name": "m", "version": "1", "tasks": tasks}
            (root / "suite.json").write_text(json.dumps(suite))
            repeats = max(1, size // 100)
            done = subprocess.run([sys.executable, "-c", CHILD, scratch, str(repeats)],
                                  capture_output=True, text=True, check=True)  # fmt: skip
            figures = json.loads(done.stdout.splitlines()[-1])
        print(f"{size:>9} {figures['seconds']:>8.1f} {1000 * figures['seconds'] / size:>11.2f} "
              f"{figures['peak_mb']:>20.1f}")


if __name__ == "__main__":
    main()
