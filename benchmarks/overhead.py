"""Harness overhead per attempt, with an instant in-process agent.

The agent returns at once with a 10-record trajectory, so everything measured is the
harness: worker round trip, fresh workspace, scoring, trajectory file, journal line.
It runs part26's 15 tasks x 100 repeats, next to the course harness's plain loop doing
the same work (re-typed below as the baseline: call, score, write one trajectory).
Start-up (the zygote and the worker, until the first attempt is kept) is shown apart
from the steady state, and each figure is the median of --runs runs. Both isolation
modes run: `attempt` (the default: every attempt in a fresh copy of the built worker)
and `worker` (a worker's attempts share its process). The CPU figure counts every
process of the run (the harness, the zygote, the worker and the copies), so it moves
less with other load on the machine than wall time does.

    .venv/bin/python benchmarks/overhead.py [--repeats 100] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from agent_eval.run.observers import EachAttempt
from agent_eval.run.runner import execute, prepare
from agent_eval.run.settings import ISOLATIONS, Isolation, RunConfig
from agent_eval.suite import load_suite

AGENT = """
SCAFFOLD_NAME = "instant"
TRAJECTORY = [{"type": "tool", "tool": "read_file", "args": {"path": "x.md"}, "error": False,
               "result": "r" * 200, "seconds": 0.0} for _ in range(10)]

def run_task(task, options):
    return {"answer": "02:00 04:00 sunday 4000", "steps": 10, "tokens": 100,
            "trajectory": TRAJECTORY}
"""


def course_loop(tasks: list[dict[str, object]], repeats: int, folder: Path) -> float:
    """The course harness's shape: call the agent, check the answer, write a trajectory."""
    namespace: dict[str, object] = {}
    exec(AGENT, namespace)  # the same instant agent, in-process
    run_task = namespace["run_task"]
    start = time.perf_counter()
    for task in tasks:
        for attempt in range(1, repeats + 1):
            reply = run_task(task["task"], {})  # type: ignore[operator]
            answer = reply["answer"].lower()
            ok = all(s.lower() in answer for s in task.get("expect_in_answer", []))  # type: ignore[attr-defined]
            if task.get("expect_regex"):
                ok = ok and re.search(str(task["expect_regex"]), answer, re.I) is not None
            path = folder / f"{task['id']}-r{attempt}.jsonl"
            with path.open("w") as handle:
                handle.write(json.dumps({"meta": {"task": task["id"]}}) + "\n")
                for record in reply["trajectory"]:
                    handle.write(json.dumps(record) + "\n")
                handle.write(json.dumps({"passed": ok}) + "\n")
    return time.perf_counter() - start


def ours(repeats: int, root: Path, isolation: Isolation) -> tuple[float, float, float]:
    """(wall seconds, seconds until the first attempt was kept, CPU seconds of every
    process of the run) for one run."""
    agent = root / "instant.py"
    agent.write_text(AGENT)
    config = RunConfig(agent=str(agent), tasks="part26", repeats=repeats, out=root / "r.json",
                       trajectory_dir=root / "traj", isolation=isolation)  # fmt: skip
    prepared = prepare(config)
    first: list[float] = []
    before = os.times()
    start = time.perf_counter()
    execute(prepared, EachAttempt(lambda row: first or first.append(time.perf_counter())))
    wall, after = time.perf_counter() - start, os.times()
    cpu = sum(after[:4]) - sum(before[:4])  # user and system, ours and reaped children's
    return wall, first[0] - start, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    raw = json.loads(load_suite("part26").path.read_text())["tasks"]
    attempts = len(raw) * args.repeats
    print(
        f"attempts: {len(raw)} tasks x {args.repeats} repeats = {attempts}; median of "
        f"{args.runs} runs; python {sys.version.split()[0]}"
    )
    # The same work with files on the working disk and on a RAM-backed folder: the gap
    # is the disk's cost of creating one small file per attempt, which both loops pay.
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for label, base in (("disk", None), ("tmpfs", "/dev/shm")):
        if base and not Path(base).is_dir():
            continue
        for isolation in ISOLATIONS:
            walls, starts, cpus = [], [], []
            for _ in range(args.runs):
                with tempfile.TemporaryDirectory(dir=base) as scratch:
                    wall, start_up, cpu = ours(args.repeats, Path(scratch), isolation)
                walls.append(wall)
                starts.append(start_up)
                cpus.append(cpu)
            wall, start_up, cpu = (statistics.median(x) for x in (walls, starts, cpus))
            steady = (wall - start_up) / (attempts - 1)
            print(
                f"[{label}] agent-eval, --isolation {isolation:<7}: {wall:5.2f} s "
                f"{attempts / wall:6.0f}/s {1000 * wall / attempts:5.2f} ms/attempt with "
                f"start-up ({start_up:.2f} s), {1000 * steady:5.2f} ms after it; "
                f"cpu {1000 * cpu / attempts:5.2f} ms/attempt"
            )
        theirs = []
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory(dir=base) as scratch:
                theirs.append(course_loop(raw, args.repeats, Path(scratch)))
        course = statistics.median(theirs)
        print(
            f"[{label}] course loop, in-process: {course:5.2f} s {attempts / course:6.0f}/s "
            f"{1000 * course / attempts:5.2f} ms/attempt"
        )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
