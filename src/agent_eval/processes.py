"""Child processes in a group of their own: started, waited on with a timeout, and ended
together with anything they left running.

A command started with ``start_new_session=True`` leads its own process group, so one
signal reaches it and every process it started. The tools' ``run_command``, the suites'
command checks, the command agent, the sandbox reaper and the executors all end their
children through :func:`kill_group`; the two that run a command to its end with output
to a file share :func:`run_in_group`; whoever sizes work to the machine asks
:func:`usable_cores`. This module imports nothing of the package.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO


def usable_cores() -> int:
    """How many cores this process may run on (its CPU affinity where the system has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def kill_group(pid: int, sig: int = signal.SIGKILL, *, or_process: bool = False) -> None:
    """Send ``sig`` to the process group that ``pid`` leads; nothing when it is gone.

    With ``or_process``, a ``pid`` not yet leader of its own group (it has not called
    setsid) gets the signal alone. Only for a child not yet reaped: a reaped pid may
    already name another process."""
    with contextlib.suppress(ProcessLookupError):
        try:
            os.killpg(pid, sig)
        except PermissionError:
            if or_process:
                os.kill(pid, sig)


def run_in_group(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    output: IO[bytes],
    grace: float = 0.0,
) -> int | None:
    """Run ``argv`` in its own process group, nothing on stdin, stdout and stderr to
    ``output``; its exit code, or None when ``timeout`` seconds passed and it was stopped.

    Past the timeout the command gets SIGTERM and ``grace`` seconds to finish (none when
    ``grace`` is 0). Then the whole group is killed, on every path, so nothing it started
    in the background outlives the call."""
    # A file rather than a pipe: the child never blocks on a full pipe, and endless
    # output is bounded by the timeout alone.
    process = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=output,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        code: int | None = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        code = None
        if grace > 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=grace)
    kill_group(process.pid)
    process.wait()
    return code
