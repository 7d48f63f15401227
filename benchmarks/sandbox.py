"""What the kernel sandbox costs: one bwrap start, one sandboxed worker, one attempt.

Three figures, each the median of --runs runs:

- one bubblewrap start with the namespaces a run uses (PID, network...), running
  /bin/true: the price a sandbox per attempt would pay every time;
- a run's start-up with and without the sandbox (the worker exec'd in its sandbox and
  importing the harness there, against a fork of the warmed-up zygote);
- the steady per-attempt cost of `--sandbox on` against `--sandbox off`: part26's tasks
  with an instant in-process agent, `--isolation attempt`, so each attempt is a fork
  inside the slot's sandbox. Wall time, and the CPU of the processes the run reaps
  (a sandboxed worker killed at the end dies in its namespace unreaped by us, so its
  CPU is not counted: compare the wall figures).

    .venv/bin/python benchmarks/sandbox.py [--repeats 40] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agent_eval.run.observers import EachAttempt
from agent_eval.run.runner import execute, prepare
from agent_eval.run.settings import RunConfig
from agent_eval.sandbox.bwrap import Sandbox, bwrap_binary, unavailable

AGENT = """
def run_task(task, options):
    return {"answer": "02:00 04:00 sunday 4000", "steps": 1, "tokens": 10}
"""


def bwrap_start(runs: int) -> tuple[float, float]:
    """Median wall and CPU milliseconds of one sandbox running /bin/true."""
    binary = bwrap_binary()
    assert binary is not None
    with tempfile.TemporaryDirectory() as folder:
        sandbox = Sandbox(binary, network="model")
        argv = sandbox.argv(["/bin/true"], writable=[folder], tmp=folder, cwd="/")
        walls, cpus = [], []
        for _ in range(runs):
            before, clock = _children_cpu(), time.perf_counter()
            subprocess.run(argv, check=True)
            walls.append(time.perf_counter() - clock)
            cpus.append(_children_cpu() - before)
    return statistics.median(walls) * 1000, statistics.median(cpus) * 1000


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_run(sandbox: str, repeats: int, folder: Path) -> tuple[float, float, float]:
    """(start-up seconds, wall seconds, CPU seconds) of one run of part26 x repeats."""
    agent = folder / "instant.py"
    agent.write_text(AGENT, encoding="utf-8")
    config = RunConfig(agent=str(agent), tasks="part26", repeats=repeats,
                       trajectory_dir=folder / f"traj-{sandbox}-{repeats}-{time.time_ns()}",
                       sandbox=sandbox)  # fmt: skip
    prepared = prepare(config)
    first: list[float] = []
    before, clock = os.times(), time.perf_counter()
    execute(prepared, EachAttempt(lambda _row: first or first.append(time.perf_counter())))
    wall = time.perf_counter() - clock
    after = os.times()
    cpu = sum(after[:4]) - sum(before[:4])  # this process and every child it reaped
    return first[0] - clock, wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    why = unavailable()
    if why is not None:
        sys.exit(f"the sandbox cannot start here: {why}")
    wall, cpu = bwrap_start(20)
    print(f"one bwrap start (/bin/true, PID and network namespaces): {wall:.1f} ms wall, "
          f"{cpu:.1f} ms CPU (median of 20)")  # fmt: skip
    attempts = 15 * args.repeats
    figures: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(args.runs):
            for mode in ("off", "on"):
                # Two sizes: their difference is the steady cost, start-up taken out.
                small = one_run(mode, max(1, args.repeats // 4), Path(folder))
                large = one_run(mode, args.repeats, Path(folder))
                extra = attempts - 15 * max(1, args.repeats // 4)
                per_wall = (large[1] - small[1]) / extra * 1000
                per_cpu = (large[2] - small[2]) / extra * 1000
                figures.setdefault(mode, []).append((per_wall, per_cpu))
                figures.setdefault(mode + "-start", []).append((large[0] * 1000, 0.0))
    for mode in ("off", "on"):
        starts = statistics.median(s for s, _ in figures[mode + "-start"])
        walls = statistics.median(w for w, _ in figures[mode])
        cpus = statistics.median(c for _, c in figures[mode])
        print(f"--sandbox {mode:3}: start-up to the first attempt {starts:6.1f} ms; "
              f"per attempt {walls:.2f} ms wall, {cpus:.2f} ms CPU "
              f"(median of {args.runs}, {attempts} attempts)")  # fmt: skip
    cost_wall = statistics.median(w for w, _ in figures["on"]) - statistics.median(
        w for w, _ in figures["off"]
    )
    cost_cpu = statistics.median(c for _, c in figures["on"]) - statistics.median(
        c for _, c in figures["off"]
    )
    print(f"the sandbox's cost per attempt: {cost_wall:+.2f} ms wall, {cost_cpu:+.2f} ms CPU")
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
