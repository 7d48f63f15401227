"""Peak memory of the harness against the number of attempts already written.

Runs an instant agent for 1k, 10k and 50k attempts (100 tasks, repeated to that
many attempts), each size in a fresh subprocess so earlier sizes cannot inflate later
ones. It prints the harness process's resident memory as the run passes 10%, 50% and
100% of its attempts, and its peak RSS over the whole run, writing the results file
included. Flat figures mean the cost of an attempt does not depend on how many came
before it.

    .venv/bin/python benchmarks/memory.py [--sizes 1000,10000,50000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

AGENT = """
TRAJECTORY = [{"type": "tool", "tool": "read_file", "args": {"path": "x.md"}, "error": False,
               "result": "r" * 200} for _ in range(10)]
def run_task(task, options):
    return {"answer": "yes " * 50, "steps": 10, "tokens": 100, "trajectory": TRAJECTORY}
"""

CHILD = """
import json, resource, sys, time
from pathlib import Path
from agent_eval.run.settings import RunConfig
from agent_eval.run.observers import EachAttempt
from agent_eval.run.runner import execute, prepare
root, repeats = Path(sys.argv[1]), int(sys.argv[2])
config = RunConfig(agent=str(root / "agent.py"), tasks=str(root / "suite.json"),
                   repeats=repeats, out=root / "r.json", trajectory_dir=root / "traj",
                   allow_empty_workspace=True)
prepared = prepare(config)
marks, seen = {}, [0]

def resident_mb():
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024

def on_attempt(row):
    seen[0] += 1
    for share in (0.1, 0.5, 1.0):
        if seen[0] == int(share * prepared.attempts):
            marks[share] = resident_mb()

start = time.perf_counter()
execute(prepared, EachAttempt(on_attempt))
peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": time.perf_counter() - start, "peak_mb": peak_kb / 1024,
                  "marks": [marks[share] for share in (0.1, 0.5, 1.0)]}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,50000")
    args = parser.parse_args()
    print(
        f"{'attempts':>9} {'wall s':>8} {'ms/attempt':>11} {'RSS MB at 10%':>14} "
        f"{'50%':>6} {'100%':>6} {'peak RSS MB':>12}"
    )
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
        at_10, at_50, at_100 = figures["marks"]
        print(
            f"{size:>9} {figures['seconds']:>8.1f} {1000 * figures['seconds'] / size:>11.2f} "
            f"{at_10:>14.1f} {at_50:>6.1f} {at_100:>6.1f} {figures['peak_mb']:>12.1f}"
        )


if __name__ == "__main__":
    main()
