"""What an attempt costs in a fresh copy of the built worker, and where the copy's pages go.

builtin:minimal is built in this process as a worker builds it (one-threaded maths, the
collector frozen), against `agent-eval mock-model` in its own process. Then, on the
same two-turn task:

- attempts run in this process one after another: the attempt's own CPU, as with
  ``--isolation worker``;
- each attempt runs in a fresh fork that then exits, as with the default isolation: the
  child's CPU and page faults (its rusage), and this process's CPU per fork;
- the same, forked with libc's fork() instead of os.fork(), so that none of Python's
  at-fork handlers run (the child reseeds `random` and renews its model client's pool,
  as those handlers would): what the handlers themselves add;
- forks that run no attempt and exit, by os.fork() and by libc's fork(): what a copy
  costs before its attempt begins;
- one fork is stopped after its attempt, and the pages it wrote (present in memory and
  mapped by it alone, /proc/PID/pagemap) are counted by the mapping they lie in.

    .venv/bin/python benchmarks/copy_pages.py [--attempts 100]
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import platform
import random
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from concurrency import mock_model

from agent_eval.agents import load_agent
from agent_eval.models import client
from agent_eval.run.executors.copy_ahead import written_ranges
from agent_eval.run.executors.zygote import NO_BACKGROUND_THREADS

TASK = "Use a tool, then say what 1 + 2 is."
SCRIPT = {
    "rules": [
        {"turn": 0, "reply": {"tool_calls": [{"name": "search_documents",
                                              "arguments": {"query": "sum"}}]}},
    ],
    "default": {"content": "The answer is 3."},
}  # fmt: skip


def in_this_process(run: Callable[[], object], attempts: int) -> float:
    """Median CPU ms of one attempt run here."""
    spent = []
    for _ in range(attempts):
        start = time.process_time()
        run()
        spent.append((time.process_time() - start) * 1000)
    return statistics.median(spent)


def in_forks(
    run: Callable[[], object], attempts: int, fork: Callable[[], int], after: Callable[[], None]
) -> tuple[float, float, float]:
    """Median CPU ms and page faults of a child that runs one attempt and exits, and this
    process's mean CPU ms per fork."""
    spent, faults = [], []
    start = time.process_time()
    for _ in range(attempts):
        pid = fork()
        if pid == 0:
            after()
            run()
            os._exit(0)
        _, _, usage = os.wait4(pid, 0)
        spent.append((usage.ru_utime + usage.ru_stime) * 1000)
        faults.append(usage.ru_minflt)
    own = (time.process_time() - start) / attempts * 1000
    return statistics.median(spent), statistics.median(faults), own


def renew_as_hooks_would() -> None:
    """What Python's own at-fork handlers do that a copy needs: a new random seed and
    its own connections."""
    random.seed()
    client._renew_pools()


def pages_written(run: Callable[[], object]) -> Counter[str]:
    """The pages one copy wrote during its attempt, by the kind of mapping they lie in."""
    pid = os.fork()
    if pid == 0:
        run()
        os.kill(os.getpid(), signal.SIGSTOP)
        os._exit(0)
    os.waitid(os.P_PID, pid, os.WSTOPPED)
    try:
        ranges = written_ranges(pid)
        maps = [_mapping(line) for line in Path(f"/proc/{pid}/maps").read_text().splitlines()]
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    kinds: Counter[str] = Counter()
    for address, length in ranges:
        for start, end, kind in maps:
            if start <= address < end:
                kinds[kind] += length // os.sysconf("SC_PAGE_SIZE")
                break
    return kinds


def _mapping(line: str) -> tuple[int, int, str]:
    fields = line.split()
    start, end = (int(address, 16) for address in fields[0].split("-"))
    path = fields[5] if len(fields) > 5 else ""
    name = os.path.basename(path)
    if name.startswith("libpython") or path == os.path.realpath(sys.executable):
        kind = "the interpreter's own data (static types, small ints, runtime state)"
    elif path == "[heap]":
        kind = "the C heap (malloc'd objects, dict and list storage)"
    elif path == "[stack]":
        kind = "the stack"
    elif not path:  # neighbouring arenas merge into one mapping, so no finer split
        kind = "anonymous memory (pymalloc's object arenas, large mallocs)"
    else:
        kind = "other libraries' data"
    return start, end, kind


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--attempts", type=int, default=100, help="Attempts per measure.")
    args = parser.parse_args(argv)
    if args.attempts < 1:
        parser.error("--attempts takes 1 or more")
    os.environ.update(NO_BACKGROUND_THREADS)
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        (work / "script.json").write_text(json.dumps(SCRIPT))
        (work / "docs").mkdir()
        (work / "docs" / "notes.md").write_text("The sum of 1 and 2 is 3.\n")
        with mock_model(work / "script.json", 0.0) as (url, _, _):
            options = {"workspace": str(work / "docs"), "base_url": url,
                       "model": "ae-model", "api_key": "dummy"}  # fmt: skip
            agent = load_agent("builtin:minimal")
            assert agent.build is not None
            agent.build(options)

            def run() -> object:
                return agent.run_task(TASK, dict(options))

            for _ in range(5):  # what a worker's build() would have warmed, not more
                run()
            gc.freeze()
            here = in_this_process(run, args.attempts)
            libc_fork = ctypes.PyDLL(None).fork
            forked = in_forks(run, args.attempts, os.fork, lambda: None)
            bare = in_forks(run, args.attempts, libc_fork, renew_as_hooks_would)
            idle = in_forks(lambda: None, args.attempts, os.fork, lambda: None)
            idle_bare = in_forks(lambda: None, args.attempts, libc_fork, lambda: None)
            kinds = pages_written(run)
    print(f"python {platform.python_version()}, builtin:minimal, a two-turn task, "
          f"{args.attempts} attempts each, load {os.getloadavg()[0]:.2f}")  # fmt: skip
    print(f"in this process:         {here:6.2f} ms CPU per attempt")
    for label, (cpu, faults, own) in (("in a fresh os.fork():", forked),
                                      ("in a fresh libc fork():", bare)):  # fmt: skip
        print(f"{label:24} {cpu:6.2f} ms CPU per attempt in the child, {faults:.0f} page "
              f"faults; {own:.2f} ms CPU per fork in the parent")  # fmt: skip
    for label, (cpu, faults, _) in (("no attempt, os.fork():", idle),
                                    ("no attempt, libc fork():", idle_bare)):  # fmt: skip
        print(f"{label:24} {cpu:6.2f} ms CPU in the child, {faults:.0f} page faults")
    print(f"pages one copy wrote in its attempt: {sum(kinds.values())}")
    for kind, pages in kinds.most_common():
        print(f"  {pages:6}  {kind}")


if __name__ == "__main__":
    main()
