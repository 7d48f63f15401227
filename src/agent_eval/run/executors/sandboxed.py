"""Worker processes in sandboxes: the slots share one bubblewrap sandbox, attempts forked inside.

The sandbox runs a zygote (run/executors/zygote.py) that imports the harness once and
forks each slot's worker, which confines itself to its slot before any agent code runs
(agent_eval.sandbox.slot): its own folder, in RAM of at most ``Sandbox.workspace_mb``
(its attempts' workspaces, /tmp and HOME, all emptied before each attempt), its own
/dev/shm and loopback, and a Landlock domain that keeps it from the other slots'
processes. The worker sends a descriptor of its folder out, and the slot's path here
becomes a link to that descriptor, through which the parent makes and scores the
workspaces. The descriptor keeps the folder after the worker ends (killed mid attempt),
until the slot's next worker starts. Where the kernel's Landlock cannot keep slots
apart (before Linux 6.12), each slot has a sandbox of its own instead.
With ``--sandbox-network model`` the model endpoint is reached through a relay
(agent_eval.sandbox.relay) that accepts on each slot's loopback, and options["base_url"]
names its inside end. Each slot's processes are in a pids cgroup of its own where one
can be made (agent_eval.sandbox.pids), and what the sandbox prints passes through the
run's redactor.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import threading
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from agent_eval.errors import AgentLoadError, ConfigError
from agent_eval.redaction import Redactor
from agent_eval.results import SandboxUsed
from agent_eval.run.executors.zygote import NO_BACKGROUND_THREADS, Zygote
from agent_eval.run.workspace import scratch_parent, slot_folder, slot_logs
from agent_eval.sandbox import (
    TRUST_STORE_ENV,
    Endpoint,
    ModelRelay,
    Sandbox,
    bwrap_binary,
    can_be_private,
    pids,
    slot,
    unavailable,
)


def inside_options(options: dict[str, Any], sandbox: Sandbox) -> dict[str, Any]:
    """The options as a sandboxed agent sees them: base_url names the relay's inside end."""
    endpoint = Endpoint.parse(str(options.get("base_url") or ""))
    if sandbox.network != "model" or endpoint is None:
        return options
    return {**options, "base_url": endpoint.base_url}


class SandboxedWorkers:
    """Starts each slot's worker in the sandbox; the Worker's starter, as a Zygote is."""

    def __init__(
        self,
        sandbox: Sandbox,
        preload: list[str],
        scratch: Path,
        base_url: str | None,
        redact: Redactor | None = None,
        slots: int = 1,
    ) -> None:
        """``slots`` folders are made in ``scratch`` (workspace.slot_folder). With a
        ``redact`` that knows secrets, what the workers print (the agent's prints,
        tracebacks, bubblewrap's own words) passes through it on its way to stderr."""
        self._sandbox, self._preload, self._scratch = sandbox, preload, scratch
        self._redact = redact
        self._folders = [slot_folder(scratch, n) for n in range(max(1, slots))]
        self._shared = len(self._folders) > 1 and slot.scopes_slots()
        self._zygotes: dict[Path, Zygote] = {}
        """The zygote that forks each slot's workers: one for all, or one per slot."""
        self._inner: dict[int, tuple[Zygote, int]] = {}
        """Each worker's zygote and its pid there, by its pid here."""
        self._private: dict[Path, int] = {}
        """The descriptor of each slot's private folder, from its latest worker."""
        self._caps: dict[Path, pids.ProcessCap | None] = {}
        """Each slot's pids cgroup, where one can be made: the bound on its processes
        that holds for root, whom RLIMIT_NPROC does not bind."""
        pids.remove_stale()
        self._lock = threading.Lock()
        self._starting = threading.Lock()
        self._relay: ModelRelay | None = None
        self._endpoint = Endpoint.parse(base_url or "") if sandbox.network == "model" else None
        self._hosts: str | None = None
        if self._endpoint is not None:
            # Whatever the run's base_url names at slot start: a server, or a proxy in front.
            self._relay = ModelRelay(self._endpoint)
            if self._endpoint.name is not None:  # a name resolves to the relay's inside end
                hosts = scratch / "hosts"
                hosts.write_text(f"127.0.0.1\tlocalhost {self._endpoint.name}\n", "ascii")
                self._hosts = str(hosts)
        # The first slot's sandbox starts now, in this thread: bubblewrap dies with the
        # thread that started it (--die-with-parent), and the first worker is started
        # in a thread that ends once it is built.
        self._zygote(self._folders[0])

    def fork(self, folder: Path | None = None) -> tuple[int, Connection]:
        """Start a worker for the slot of ``folder``: forked in the sandbox, confined to
        the slot, its folder's descriptor and pid received here."""
        if folder is None or folder not in self._folders:
            raise ValueError(f"a sandboxed worker needs one of its slots' folders, not {folder}")
        zygote = self._zygote(folder)
        mine, theirs = socket.socketpair()
        mine.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)  # before the worker sends
        inner = zygote.start_worker(theirs, self._slot(folder))
        theirs.close()
        try:
            handle, pid, listeners = slot.receive_folder(mine)
        except (EOFError, OSError) as exc:  # it printed why, through the redactor
            mine.close()
            code = zygote.reap(inner)
            raise AgentLoadError(f"the sandbox could not start the worker of {folder.name} "
                                 f"(exit code {code}): {exc}") from exc  # fmt: skip
        self._link(folder, handle)
        if self._relay is not None:
            self._relay.serve(folder, listeners)
        self._join_cap(folder, pid)
        mine.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 0)
        with self._lock:
            self._inner[pid] = (zygote, inner)
        return pid, Connection(mine.detach())

    def _zygote(self, folder: Path) -> Zygote:
        """The zygote that forks this slot's workers, its sandbox started on first use."""
        key = self._folders[0] if self._shared else folder
        with self._starting:  # one sandbox per key, though slots start side by side
            zygote = self._zygotes.get(key)
            if zygote is None:
                served = self._folders if self._shared else [folder]
                env = {**self._sandbox.environment(str(folder / "home")), **NO_BACKGROUND_THREADS}
                zygote = Zygote(self._preload, preload_first=len(served) > 1,
                                redact=self._redact, env=env,
                                sandbox=lambda command: self._argv(command, served))  # fmt: skip
                self._zygotes[key] = zygote
        return zygote

    def _argv(self, command: list[str], folders: list[Path]) -> list[str]:
        logs = [(str(slot_logs(f)), f"{slot.LOGS_INSIDE}/{f.name}") for f in folders]
        return self._sandbox.argv(command, writable=logs, slots=[str(f) for f in folders],
                                  cwd="/", hosts_file=self._hosts)  # fmt: skip

    def _slot(self, folder: Path) -> slot.Slot:
        cwd = os.getcwd()
        return slot.Slot(
            folder=str(folder),
            workspace_mb=self._sandbox.workspace_mb,
            shm_mb=self._sandbox.shm_mb,
            logs=folder.name,
            own_network=self._sandbox.network != "host",
            relay_port=None if self._endpoint is None else self._endpoint.inside_port,
            in_tmp=self._sandbox.mounts_in_tmp,
            cwd=cwd if self._sandbox.shows(cwd) else None,
            shared=self._shared,
        )

    def _link(self, folder: Path, handle: int) -> None:
        """Make ``folder`` here a link to the slot's new private folder, and let its
        last one go."""
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

    def _join_cap(self, folder: Path, pid: int) -> None:
        """Put the slot's worker in its pids cgroup before it runs any agent code (it
        waits for its spec, which is sent once this returns)."""
        if folder not in self._caps:
            self._caps[folder] = self._cap(folder)
        cap = self._caps[folder]
        if cap is not None:
            with contextlib.suppress(OSError):  # gone already: its start says why
                cap.join(pid)

    def _cap(self, folder: Path) -> pids.ProcessCap | None:
        if pids.controller() is None:
            return None
        run = self._scratch.name.rpartition("-")[2]
        try:
            return pids.ProcessCap(f"{run}-{folder.name}", self._sandbox.processes)
        except OSError:  # the probe could, this one cannot: RLIMIT_NPROC still applies
            return None

    def reap(self, pid: int) -> int | None:
        """Wait for a worker that is ending; its exit code (-N for signal N)."""
        with self._lock:
            found = self._inner.pop(pid, None)
        if found is None:
            return None
        zygote, inner = found
        return zygote.reap(inner)

    def close(self) -> None:
        """End every sandbox still running (and the workers in them), and the relay."""
        with self._starting, self._lock:
            zygotes, self._zygotes = list(self._zygotes.values()), {}
            private, self._private = list(self._private.values()), {}
            caps, self._caps = [c for c in self._caps.values() if c is not None], {}
        for zygote in zygotes:
            zygote.close()
        for handle in private:
            os.close(handle)
        for cap in caps:
            cap.remove()
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
    why = unavailable() or _no_place_for_slots()
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
    return sandbox, SandboxUsed(applied="bwrap", network=network, max_workspace_mb=workspace_mb)


def _no_place_for_slots() -> str | None:
    """Why the slots' folders cannot be private, in a few words; None when they can."""
    parent = scratch_parent()
    if can_be_private(parent):
        return None
    return (f"the run's scratch folder would be in /tmp ({parent}), which each slot "
            "replaces with its own: set TMPDIR to a folder outside /tmp")  # fmt: skip


def trust_stores() -> list[Path]:
    """The folders of the certificates the environment says to trust (SSL_CERT_FILE's
    folder, SSL_CERT_DIR), to be seen read-only inside, as the variables are; never the
    root or a folder that holds the home folder."""
    shown = [visible_folder(folder) for folder in _trust_store_folders().values()]
    return [folder for folder in shown if folder is not None]


def unshown_trust_stores() -> list[str]:
    """The trust-store variables whose folder the sandbox will not show (the root, or one
    that holds the home folder), each as ``NAME path``: inside, they trust nothing."""
    return [f"{name} {os.environ[name]}" for name, folder in _trust_store_folders().items()
            if visible_folder(folder) is None]  # fmt: skip


def _trust_store_folders() -> dict[str, Path]:
    named = {name: Path(os.environ[name]) for name in TRUST_STORE_ENV if os.environ.get(name)}
    return {name: path if path.is_dir() else path.parent
            for name, path in named.items() if path.exists()}  # fmt: skip


def visible_folder(folder: Path) -> Path | None:
    """``folder`` (the current one), to be seen read-only inside, unless it is the root,
    the home folder or holds it (then only what the agent needs is shown)."""
    here, home = folder.resolve(), Path.home().resolve()
    return None if here == Path("/") or home.is_relative_to(here) else here
