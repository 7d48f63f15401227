"""Wall time of a real agent against a model endpoint with fixed latency, by concurrency.

builtin:minimal runs part26 (15 tasks x 20 repeats) against the scripted model server
with 100 ms per reply: each attempt searches once, then answers, so two model calls.
The server is `agent-eval mock-model` in its own process, so the endpoint does not
share the harness's interpreter (or its GIL); the harness is what is measured.

For each concurrency N the ideal is model calls x latency / N. Every level is run twice,
with all the repeats and with just enough repeats to give every worker an attempt, and
a line through the two points splits the wall time into a fixed part (start-up: the
zygote, N workers and their build(), plus the last, partly filled round) and a steady
ratio: extra wall time per extra ideal second once the run is going.

Each run's outputs go to --scratch, by default a RAM-backed folder when the machine has
one, so that the figures are the harness's and not the disk's (benchmarks/RESULTS.md,
executors: on a disk without a journal, one run's deleted files make the next run's new
files cost more).

    .venv/bin/python benchmarks/concurrency.py [--repeats 20] [--latency 0.1] [--levels 1,8,32]
        [--isolation attempt|worker] [--scratch DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from agent_eval.run.runner import execute, prepare
from agent_eval.run.settings import ISOLATIONS, Isolation, RunConfig
from agent_eval.suite import load_suite

SCRIPT = {
    "replies": [
        {"tool_calls": [{"name": "search_documents", "arguments": {"query": "backup window"}}]},
        {"content": "The backup window runs from 02:00 to 04:00 every Sunday."},
    ]
}


@dataclass(frozen=True)
class Timing:
    """One run: its attempts and model calls, wall seconds, and the CPU seconds of harness
    and server."""

    attempts: int
    calls: int
    wall: float
    cpu: float
    server_cpu: float


@contextmanager
def mock_model(script: Path, latency: float) -> Iterator[tuple[str, int, list[int]]]:
    """`agent-eval mock-model` on a free port; yields its URL, its pid and, after, its count."""
    command = [sys.executable, "-m", "agent_eval", "mock-model", "--script", str(script),
               "--port", "0", "--latency", str(latency)]  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    served: list[int] = []
    try:
        first = server.stdout.readline() if server.stdout else ""
        found = re.search(r"on (http://\S+/v1)", first)
        if found is None:
            raise RuntimeError(f"mock-model did not report its address: {first!r}")
        yield found.group(1), server.pid, served
    finally:
        server.send_signal(signal.SIGINT)
        out, _ = server.communicate(timeout=30)
        count = re.search(r"served (\d+) request", out)
        served.append(int(count.group(1)) if count else -1)


MEMORY = Path("/dev/shm")


def add_scratch_option(parser: argparse.ArgumentParser) -> None:
    """--scratch: where each run writes its results, journal and trajectories."""
    default = str(MEMORY) if MEMORY.is_dir() else None
    parser.add_argument("--scratch", default=default,
                        help="the folder for each run's outputs (default: /dev/shm when "
                        "there is one, else the system temporary folder)")  # fmt: skip


def cpu_seconds() -> float:
    """CPU used by this process and every descendant it has waited for (the zygote and,
    through it, the workers; the server is waited for only after the measurement)."""
    own, children = (resource.getrusage(who) for who in
                     (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))  # fmt: skip
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def process_cpu(pid: int) -> float:
    """CPU seconds a live process has used so far (Linux), or NaN."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return math.nan
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed_run(
    script: Path, latency: float, level: int, repeats: int, isolation: Isolation,
    scratch_in: str | None,
) -> Timing:  # fmt: skip
    """One harness run; the server starts before and stops after the timed part."""
    with mock_model(script, latency) as (base_url, server, served), \
            tempfile.TemporaryDirectory(dir=scratch_in) as scratch:  # fmt: skip
        config = RunConfig(
            agent="builtin:minimal", tasks="part26", repeats=repeats,
            base_url=base_url, model="mock", concurrency=level, isolation=isolation,
            out=Path(scratch) / "r.json", trajectory_dir=Path(scratch) / "traj",
        )  # fmt: skip
        prepared = prepare(config)
        cpu, server_cpu = cpu_seconds(), process_cpu(server)
        start = time.perf_counter()
        execute(prepared)
        wall = time.perf_counter() - start
        cpu, server_cpu = cpu_seconds() - cpu, process_cpu(server) - server_cpu
    return Timing(prepared.attempts, served[0], wall, cpu, server_cpu)


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


COLUMNS = ("concurrency", "calls", "wall s", "ideal s", "ratio", "fixed s", "steady",
           "cpu ms/attempt", "server ms/call")  # fmt: skip
NOTES = """\
ideal = calls x latency / concurrency; ratio = wall / ideal
fixed, steady: a second run at the same concurrency with tasks x ceil(N/tasks) attempts
  (every worker gets one) gives a line wall = fixed + steady x ideal; fixed is start-up
  (zygote, workers, build()) and the last round; steady is the ratio once running
cpu ms/attempt: the harness's processes (this one, the zygote, the workers), fixed part
  included; server ms/call: the scripted server's process, on the same cores"""


def main() -> None:
    # The server is stopped with SIGINT (it then prints how many requests it served). A
    # shell's background job starts with SIGINT ignored, which a child would inherit;
    # with a handler installed here, children start with the default instead.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--levels", default="1,8,32")
    parser.add_argument("--isolation", choices=ISOLATIONS, default="attempt")
    add_scratch_option(parser)
    args = parser.parse_args()
    tasks = len(load_suite("part26").suite.tasks)
    print(f"builtin:minimal, part26 {tasks} tasks x {args.repeats} repeats, "
          f"{1000 * args.latency:.0f} ms per model reply, server in its own process, "
          f"--isolation {args.isolation}")  # fmt: skip
    print(f"outputs in {args.scratch or tempfile.gettempdir()}")
    print(f"load average before: {load_average()}")
    print(" ".join(f"{c:>{max(len(c), 7)}}" for c in COLUMNS))
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "script.json"
        script.write_text(json.dumps(SCRIPT), encoding="utf-8")
        for level in (int(x) for x in args.levels.split(",")):
            short = timed_run(script, args.latency, level, math.ceil(level / tasks),
                              args.isolation, args.scratch)  # fmt: skip
            full = timed_run(script, args.latency, level, args.repeats, args.isolation,
                             args.scratch)  # fmt: skip
            ideal, ideal_short = (t.calls * args.latency / level for t in (full, short))
            steady = (full.wall - short.wall) / (ideal - ideal_short)
            row = (level, full.calls, f"{full.wall:.2f}", f"{ideal:.2f}",
                   f"{full.wall / ideal:.2f}", f"{full.wall - steady * ideal:.2f}",
                   f"{steady:.2f}", f"{1000 * full.cpu / full.attempts:.1f}",
                   f"{1000 * full.server_cpu / full.calls:.2f}")  # fmt: skip
            print(" ".join(f"{v!s:>{max(len(c), 7)}}" for c, v in zip(COLUMNS, row, strict=True)))
    print(f"load average after: {load_average()}")
    print(NOTES)


if __name__ == "__main__":
    main()
