"""Make the course-harness fixtures of this folder by running the course harness itself.

    python tests/results/data/make_course_fixtures.py [--course PATH/agent-eval.py]

The course harness (by default ../shared/course/agent-eval.py from the repository's root)
runs as a program, never imported, on the deterministic agents of course_agents/ and the
suite course-suite.json, in a scratch folder, so that the files name no folder of this
machine. It writes:

- course-results.json: steady.py, 2 repeats, labels given (quant, engine, notes);
- course-results-b.json: steady.py --option fix=1, 2 repeats, another quantisation;
- course-results-raises.json: raises.py, 1 repeat, a price per million tokens;
- course-labbook.jsonl: the three runs' labbook lines, in that order.

Trajectory files are not kept: the results files name them, as a course file copied
without its trajectories folder does.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
COURSE = ROOT.parent / "shared" / "course" / "agent-eval.py"
RUNS = {
    "course-results.json": ["--agent", "steady.py", "--repeats", "2", "--quant", "Q4_K_M",
                            "--engine", "llama.cpp", "--engine-version", "b4500",
                            "--notes", "baseline"],
    "course-results-b.json": ["--agent", "steady.py", "--repeats", "2", "--option", "fix=1",
                              "--quant", "Q8_0", "--engine", "llama.cpp",
                              "--engine-version", "b4500", "--notes", "the fix"],
    "course-results-raises.json": ["--agent", "raises.py", "--cost-per-million", "2"],
}  # fmt: skip
LABBOOK = "course-labbook.jsonl"


def run_course(course: Path, folder: Path, out: str, flags: list[str]) -> str:
    """One course-harness run in ``folder``; its console output. Exit 2 (some attempt
    failed) is expected of these agents; anything else is an error."""
    done = subprocess.run(
        [sys.executable, str(course), *flags, "--tasks", "course-suite.json",
         "--model", "local/chat", "--out", out, "--labbook", LABBOOK],
        cwd=folder, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    if done.returncode not in (0, 2):
        raise SystemExit(f"the course harness failed on {out}:\n{done.stdout}{done.stderr}")
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--course", type=Path, default=COURSE, help="the course's agent-eval.py")
    args = parser.parse_args()
    if not args.course.is_file():
        raise SystemExit(f"no course harness at {args.course}; give --course PATH")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for source in (*(HERE / "course_agents").glob("*.py"), HERE / "course-suite.json"):
            shutil.copy(source, folder / source.name)
        for number, (out, flags) in enumerate(RUNS.items()):
            if number:
                time.sleep(1.1)  # the course's run id is its start to the second
            run_course(args.course, folder, out, flags)
            shutil.copy(folder / out, HERE / out)
            print(f"wrote {out}")
        shutil.copy(folder / LABBOOK, HERE / LABBOOK)
        print(f"wrote {LABBOOK}")


if __name__ == "__main__":
    main()
