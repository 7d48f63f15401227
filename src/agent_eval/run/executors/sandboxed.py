"""Worker processes in sandboxes: one bubblewrap sandbox per slot, attempts forked inside.

A zygote cannot fork into a namespace, so each slot's worker is a fresh interpreter
exec'd inside its own sandbox; it imports what the zygote would have and then forks a
copy per attempt as usual, so the sandbox's start (a few milliseconds, and the worker's
imports) is paid once per slot, not once per attempt. The slot's folder is its only
writable place: its attempts' workspaces, and its private /tmp and HOME, all emptied
before each attempt. It exists only inside the sandbox, in RAM of at most
``Sandbox.workspace_mb``: the worker sends a descriptor of it out, and the slot's path
here becomes a link to that descriptor, through which the parent makes and scores the
workspaces. The descriptor keeps the folder after the sandbox ends (a worker killed mid
attempt), until the slot's next sandbox starts. With ``--sandbox-network model`` the
model endpoint is reached through a relay (agent_eval.sandbox.relay) and
options["base_url"] names its inside end.
Each sandbox starts in a pids cgroup of its own where one can be made
(agent_eval.sandbox.pids), and what it prints passes through the run's redactor.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import threading
from multiprocessing import reduction
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from agent_eval.errors import ConfigError
from agent_eval.processes import kill_group
from agent_eval.redaction import Redactor, copy_redacted, write_all
from agent_eval.results import SandboxUsed
from agent_eval.run.executors.agent_host import PRIVATE_FLAG
from agent_eval.run.executors.zygote import NO_BACKGROUND_THREADS
from agent_eval.run.workspace import SLOT_LOGS, scratch_parent, slot_logs
from agent_eval.sandbox import (
    Endpoint,
    ModelRelay,
    Sandbox,
    bwrap_binary,
    can_be_private,
    pids,
    unavailable,
)

INSIDE_SOCKET = "/run/agent-eval/model.sock"
"""Where the relay's unix socket is bound inside every sandbox."""


def inside_options(options: dict[str, Any], sandbox: Sandbox) -> dict[str, Any]:
    """The options as a sandboxed agent sees them: base_url names the relay's inside end."""
    endpoint = Endpoint.parse(str(options.get("base_url") or ""))
    if sandbox.network != "model" or endpoint is None:
        return options
    return {**options, "base_url": endpoint.base_url}


class SandboxedWorkers:
    """Starts each worker in a sandbox of its own; the Worker's starter, as a Zygote is."""

    def __init__(
        self,
        sandbox: Sandbox,
        preload: list[str],
        scratch: Path,
        base_url: str | None,
        redact: Redactor | None = None,
    ) -> None:
        """With a ``redact`` that knows secrets, what the workers print (the agent's
        prints, tracebacks, bubblewrap's own words) passes through it on its way to
        stderr, as a zygote's workers' does."""
        self._sandbox, self._preload, self._scratch = sandbox, preload, scratch
        self._redact = redact if redact else None
        self._processes: dict[int, subprocess.Popen[bytes]] = {}
        self._pumps: dict[int, threading.Thread] = {}
        self._private: dict[Path, int] = {}
        """The descriptor of each slot's private folder, from its latest sandbox."""
        self._caps: dict[int, pids.ProcessCap] = {}
        """Each sandbox's pids cgroup, where one can be made: the bound on its processes
        that holds for root, whom RLIMIT_NPROC does not bind."""
        pids.remove_stale()
        self._lock = threading.Lock()
        self._relay: ModelRelay | None = None
        self._endpoint = Endpoint.parse(base_url or "") if sandbox.network == "model" else None
        self._hosts: str | None = None
        if self._endpoint is not None:
            # Whatever the run's base_url names at slot start: a server, or a proxy in front.
            self._relay = ModelRelay(str(scratch / "model.sock"), self._endpoint)
            if self._endpoint.name is not None:  # a name resolves to the relay's inside end
                hosts = scratch / "hosts"
                hosts.write_text(f"127.0.0.1\tlocalhost {self._endpoint.name}\n", "ascii")
                self._hosts = str(hosts)

    def fork(self, folder: Path | None = None) -> tuple[int, Connection]:
        """Start a worker in a new sandbox bound to the slot's ``folder``."""
        if folder is None:
            raise ValueError("a sandboxed worker needs its slot's folder")
        mine, theirs = socket.socketpair()
        fd = theirs.fileno()
        private = can_be_private(str(folder))
        host = [sys.executable, "-m", "agent_eval.run.executors.agent_host", str(fd)]
        command = [*host, *([PRIVATE_FLAG, str(folder)] if private else []), *self._preload]
        readonly: list[tuple[str, str]] = []
        if self._relay is not None and self._endpoint is not None:
            command = [sys.executable, "-m", "agent_eval.sandbox.inside", INSIDE_SOCKET,
                       str(self._endpoint.inside_port), "--", *command]  # fmt: skip
            readonly.append((self._relay.path, INSIDE_SOCKET))
        logs = (str(slot_logs(folder)), str(folder / SLOT_LOGS))
        cwd = os.getcwd()
        argv = self._sandbox.argv(
            command,
            writable=[logs] if private else [str(folder), logs],
            readonly=readonly,
            private=str(folder) if private else None,
            tmp=None if private else str(folder / "tmp"),
            cwd=cwd if self._sees(cwd) else str(folder),
            hosts_file=self._hosts,
        )
        env = {**self._sandbox.environment(str(folder / "home")), **NO_BACKGROUND_THREADS}
        cap = self._cap(folder)
        process = subprocess.Popen(
            argv if cap is None else cap.command(argv),
            pass_fds=(fd,),
            stdin=subprocess.DEVNULL,
            # a worker's prints go to stderr, never into the console layout
            stdout=subprocess.PIPE if self._redact else 2,
            stderr=subprocess.STDOUT if self._redact else None,
            start_new_session=True,  # Ctrl-C is the parent's; one killpg ends the sandbox
            env=env,
        )
        theirs.close()
        with self._lock:
            self._processes[process.pid] = process
            if cap is not None:
                self._caps[process.pid] = cap
            if self._redact is not None and process.stdout is not None:
                pump = threading.Thread(
                    target=copy_redacted,
                    args=(process.stdout, self._redact.stream(write_all(2))),
                    name=f"sandbox-output-{process.pid}",
                    daemon=True,
                )
                pump.start()
                self._pumps[process.pid] = pump
        conn = Connection(mine.detach())
        if private:
            self._receive_private(folder, conn)
        return process.pid, conn

    def _receive_private(self, folder: Path, conn: Connection) -> None:
        """Make ``folder`` here a link to the new sandbox's private folder, and let the
        last sandbox's go. A sandbox that ended before sending one says why when the
        worker's start reads from ``conn``."""
        try:
            handle = reduction.recv_handle(conn)
        except (EOFError, OSError):
            return
        if folder.is_dir() and not folder.is_symlink():
            shutil.rmtree(folder)  # the slot's folder as slot_folder made it: never used
        link = folder.with_name(f"{folder.name}.link")
        with contextlib.suppress(FileNotFoundError):
            link.unlink()
        link.symlink_to(f"/proc/{os.getpid()}/fd/{handle}")
        link.replace(folder)
        with self._lock:
            last, self._private[folder] = self._private.get(folder), handle
        if last is not None:
            os.close(last)

    def _cap(self, folder: Path) -> pids.ProcessCap | None:
        if pids.controller() is None:
            return None
        run = self._scratch.name.rpartition("-")[2]
        try:
            return pids.ProcessCap(f"{run}-{folder.name}", self._sandbox.processes)
        except OSError:  # the probe could, this one cannot: RLIMIT_NPROC still applies
            return None

    def _sees(self, folder: str) -> bool:
        return any(os.path.realpath(folder) == os.path.realpath(k) for k in self._sandbox.keep)

    def reap(self, pid: int) -> int | None:
        """Wait for a sandbox that is ending; its worker's exit code (-N for signal N)."""
        with self._lock:
            process = self._processes.pop(pid, None)
        if process is None:
            return None
        code = process.wait()
        self._drain(pid)
        return -(code - 128) if 128 < code < 128 + 65 else code  # bwrap reports 128+N

    def _drain(self, pid: int) -> None:
        """Let a finished sandbox's last words through (its PID namespace is gone, so
        nothing inside still holds the pipe), and remove its cgroup."""
        with self._lock:
            pump = self._pumps.pop(pid, None)
            cap = self._caps.pop(pid, None)
        if pump is not None:
            pump.join(1.0)
        if cap is not None:
            cap.remove()

    def close(self) -> None:
        """End every sandbox still running, and the relay."""
        with self._lock:
            left, self._processes = list(self._processes.values()), {}
        for process in left:
            kill_group(process.pid)
            process.wait()
            self._drain(process.pid)
        with self._lock:
            private, self._private = list(self._private.values()), {}
        for handle in private:
            os.close(handle)
        if self._relay is not None:
            self._relay.close()


def resolve(
    mode: str,
    network: str,
    hide: list[Path | None],
    keep: list[Path | None],
    workspace_mb: int = Sandbox.workspace_mb,
) -> tuple[Sandbox | None, SandboxUsed]:
    """The run's sandbox for ``--sandbox mode``, and how the results record it.

    ``on`` where bubblewrap cannot start is a ConfigError; ``auto`` then runs without,
    and the record says why (the run prints it as a Note).
    """
    if mode == "off":
        return None, SandboxUsed(applied="none", reason="--sandbox off")
    why = unavailable()
    binary = bwrap_binary()
    if why is not None or binary is None:
        if mode == "on":
            raise ConfigError(f"--sandbox on: {why}; or give --sandbox off to run unconfined")
        return None, SandboxUsed(applied="none", reason=why)
    sandbox = Sandbox(
        binary=binary,
        network=network,
        hide=tuple(sorted({str(p.resolve()) for p in hide if p is not None})),
        keep=tuple(sorted({str(p.resolve()) for p in keep if p is not None and p.exists()})),
        workspace_mb=workspace_mb,
    )
    capped = can_be_private(os.path.join(scratch_parent(), "slot"))
    return sandbox, SandboxUsed(applied="bwrap", network=network,
                                max_workspace_mb=workspace_mb if capped else None)  # fmt: skip


def visible_folder(cwd: Path) -> Path | None:
    """The current folder, to be seen read-only inside, unless it is the home folder or
    holds it (then only what the agent needs is shown)."""
    here, home = cwd.resolve(), Path.home().resolve()
    return None if here == Path("/") or home.is_relative_to(here) else here
