"""Worker processes in sandboxes: one bubblewrap sandbox per slot, attempts forked inside.

A zygote cannot fork into a namespace, so each slot's worker is a fresh interpreter
exec'd inside its own sandbox; it imports what the zygote would have and then forks a
copy per attempt as usual, so the sandbox's start (a few milliseconds, and the worker's
imports) is paid once per slot, not once per attempt. The slot's folder is its only
writable place: its attempts' workspaces, and its private /tmp and HOME, all emptied
before each attempt. With ``--sandbox-network model`` the model endpoint is reached
through a relay (agent_eval.sandbox.relay) and options["base_url"] names its inside end.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from agent_eval.errors import ConfigError
from agent_eval.processes import kill_group
from agent_eval.results import SandboxUsed
from agent_eval.run.executors.zygote import NO_BACKGROUND_THREADS
from agent_eval.sandbox.bwrap import Sandbox, bwrap_binary, unavailable
from agent_eval.sandbox.relay import Endpoint, ModelRelay

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
        self, sandbox: Sandbox, preload: list[str], scratch: Path, base_url: str | None
    ) -> None:
        self._sandbox, self._preload, self._scratch = sandbox, preload, scratch
        self._processes: dict[int, subprocess.Popen[bytes]] = {}
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
        command = [
            sys.executable,
            "-m",
            "agent_eval.run.executors.agent_host",
            str(fd),
            *self._preload,
        ]
        readonly: list[tuple[str, str]] = []
        if self._relay is not None and self._endpoint is not None:
            command = [sys.executable, "-m", "agent_eval.sandbox.inside", INSIDE_SOCKET,
                       str(self._endpoint.inside_port), "--", *command]  # fmt: skip
            readonly.append((self._relay.path, INSIDE_SOCKET))
        cwd = os.getcwd()
        home = str(folder / "home")
        argv = self._sandbox.argv(
            command,
            writable=[str(folder)],
            readonly=readonly,
            tmp=str(folder / "tmp"),
            cwd=cwd if self._sees(cwd) else str(folder),
            hosts_file=self._hosts,
        )
        env = {**self._sandbox.environment(home), **NO_BACKGROUND_THREADS}
        process = subprocess.Popen(
            argv,
            pass_fds=(fd,),
            stdin=subprocess.DEVNULL,
            stdout=2,  # a worker's prints go to stderr, never into the console layout
            start_new_session=True,  # Ctrl-C is the parent's; one killpg ends the sandbox
            env=env,
        )
        theirs.close()
        with self._lock:
            self._processes[process.pid] = process
        return process.pid, Connection(mine.detach())

    def _sees(self, folder: str) -> bool:
        return any(os.path.realpath(folder) == os.path.realpath(k) for k in self._sandbox.keep)

    def reap(self, pid: int) -> int | None:
        """Wait for a sandbox that is ending; its worker's exit code (-N for signal N)."""
        with self._lock:
            process = self._processes.pop(pid, None)
        if process is None:
            return None
        code = process.wait()
        return -(code - 128) if 128 < code < 128 + 65 else code  # bwrap reports 128+N

    def close(self) -> None:
        """End every sandbox still running, and the relay."""
        with self._lock:
            left, self._processes = list(self._processes.values()), {}
        for process in left:
            kill_group(process.pid)
            process.wait()
        if self._relay is not None:
            self._relay.close()


def resolve(
    mode: str,
    network: str,
    hide: list[Path | None],
    keep: list[Path | None],
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
    )
    return sandbox, SandboxUsed(applied="bwrap", network=network)


def visible_folder(cwd: Path) -> Path | None:
    """The current folder, to be seen read-only inside, unless it is the home folder or
    holds it (then only what the agent needs is shown)."""
    here, home = cwd.resolve(), Path.home().resolve()
    return None if here == Path("/") or home.is_relative_to(here) else here
