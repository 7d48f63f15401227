"""A bound on a sandbox's processes that holds for root too: a pids cgroup.

RLIMIT_NPROC counts a user's processes, and the kernel never applies it to root, so a
fork bomb run as root inside a sandbox would meet no limit. A pids cgroup counts the
processes and threads in it, whoever owns them: each sandbox starts inside one of its
own, whose ``pids.max`` is the sandbox's limit, and a fork past it fails with EAGAIN.
That needs a pids controller this process may write to: cgroup v1's pids hierarchy, or a
cgroup v2 subtree with the pids controller delegated. Where there is none, the limit is
RLIMIT_NPROC's alone (see :func:`unavailable`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from pathlib import Path

PREFIX = "agent-eval-"
"""The name of every cgroup made here begins so, then the making process's id."""


@functools.cache
def controller() -> Path | None:
    """The pids cgroup below which this process may make the sandboxes' cgroups: its
    own in cgroup v1; in v2, its own or its parent (a systemd scope's slice), whichever
    delegates the pids controller to its children and lets us move processes there."""
    for line in _read("/proc/self/cgroup").splitlines():
        _, controllers, relative = line.split(":", 2)
        v1 = "pids" in controllers.split(",")
        if not v1 and controllers:
            continue
        mount = _mount_of("cgroup" if v1 else "cgroup2", "pids" if v1 else None)
        if mount is None:
            continue
        folder = mount / relative.lstrip("/")
        if v1:
            return folder if _can_make_below(folder) else None
        for candidate in (folder, folder.parent):
            delegated = "pids" in _read(str(candidate / "cgroup.subtree_control")).split()
            movable = os.access(candidate / "cgroup.procs", os.W_OK)  # the common ancestor
            if delegated and movable and _can_make_below(candidate):
                return candidate
    return None


def unavailable() -> str | None:
    """Why processes are bounded by RLIMIT_NPROC alone here (None: a pids cgroup binds)."""
    if controller() is not None:
        return None
    return "no writable pids cgroup (cgroup v1 pids hierarchy or a delegated v2 subtree)"


class ProcessCap:
    """A pids cgroup for one slot: its worker joins it before running agent code, and
    it is removed once the run is over."""

    def __init__(self, name: str, limit: int) -> None:
        root = controller()
        if root is None:
            raise OSError(unavailable())
        self.limit = limit
        self.folder = root / f"{PREFIX}{os.getpid()}-{name}"
        self.folder.mkdir(exist_ok=True)
        (self.folder / "pids.max").write_text(str(limit), "ascii")

    def join(self, pid: int) -> None:
        """Move process ``pid`` into the cgroup: whatever it starts from then on is in it."""
        (self.folder / "cgroup.procs").write_text(str(pid), "ascii")

    def events(self) -> int:
        """How many forks the limit has refused (0 where the kernel does not say)."""
        for line in _read(str(self.folder / "pids.events")).splitlines():
            key, _, count = line.partition(" ")
            if key == "max" and count.strip().isdigit():
                return int(count)
        return 0

    def remove(self, wait: float = 2.0) -> None:
        """Remove the cgroup once its last process has gone (their exit is reaped by the
        kernel a moment after the sandbox's first process ends)."""
        deadline = time.monotonic() + wait
        while True:
            try:
                self.folder.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() > deadline:
                    return  # left for remove_stale on the next run
                time.sleep(0.01)


def remove_stale() -> None:
    """Remove the empty cgroups of runs whose process no longer exists."""
    root = controller()
    if root is None:
        return
    with contextlib.suppress(OSError), os.scandir(root) as entries:
        for entry in entries:
            if not entry.name.startswith(PREFIX) or not entry.is_dir(follow_symlinks=False):
                continue
            pid = entry.name.removeprefix(PREFIX).partition("-")[0]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                with contextlib.suppress(OSError):
                    os.rmdir(entry.path)


def _read(path: str) -> str:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def _mount_of(fstype: str, option: str | None) -> Path | None:
    """Where a cgroup filesystem of ``fstype`` (with ``option`` among its super options,
    for v1) is mounted, as this process sees it."""
    for line in _read("/proc/self/mountinfo").splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] != fstype:
            continue
        if option is None or option in tail[2].split(","):
            return Path(fields[4].replace("\\040", " "))
    return None


def _can_make_below(folder: Path) -> bool:
    probe = folder / f"{PREFIX}{os.getpid()}-probe"
    try:
        probe.mkdir(exist_ok=True)
        ok = (probe / "pids.max").exists() and os.access(probe / "cgroup.procs", os.W_OK)
        probe.rmdir()
    except OSError:
        return False
    return ok
