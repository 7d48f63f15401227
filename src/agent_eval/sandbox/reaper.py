"""End every process below this one: a subreaper and the loop that empties it.

A process that sets PR_SET_CHILD_SUBREAPER adopts every orphan below it, so a daemon
that double-forks and calls setsid, which leaves its process group and session, still
becomes our child when its parents die, and :func:`end_strays` can kill it. Workers use
it after each attempt; `python -m agent_eval.sandbox.reaper -- COMMAND...` runs a
command this way when there is no sandbox (whose PID namespace does the same): it exits
with COMMAND's status once nothing COMMAND started is left, and on SIGTERM ends them all.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Collection
from types import FrameType

from agent_eval.processes import kill_group

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> None:
    """Adopt every orphan below this process (Linux; elsewhere nothing happens)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def children(of: int | None = None) -> list[int]:
    """The child processes of process ``of`` (this one by default), zombies included
    (empty without /proc)."""
    found: list[int] = []
    process = f"/proc/{'self' if of is None else of}"
    try:
        tasks = os.listdir(f"{process}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            found.extend(int(pid) for pid in _read(f"{process}/task/{task}/children").split())
        except OSError:
            continue
    return found


def _read(path: str) -> bytes:
    """A small file's bytes, with no file object: a worker lists children after each
    fork, when every object it touches costs a page copied (86 faults with open())."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def end_strays(keep: Collection[int]) -> None:
    """Kill and reap every child of this process not in ``keep``, until none is left.
    Each one reaped hands its own children to us (we are their subreaper), so the loop
    reaches them all, however deep."""
    while True:
        strays = [pid for pid in children() if pid not in keep]
        if not strays:
            return
        for pid in strays:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in strays:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


def main(command: list[str]) -> int:
    become_subreaper()
    process = subprocess.Popen(command, start_new_session=True)

    def stop(_signal: int, _frame: FrameType | None) -> None:
        kill_group(process.pid)
        end_strays(())
        os._exit(128 + signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    code = process.wait()
    kill_group(process.pid)  # the group first: then its members orphan
    end_strays(())
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    if sys.argv[1:2] != ["--"] or len(sys.argv) < 3:
        print("usage: python -m agent_eval.sandbox.reaper -- COMMAND...", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[2:]))
