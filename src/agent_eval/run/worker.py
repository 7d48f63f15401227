"""Attempts run in worker processes, so an agent that hangs, exits or crashes costs
one attempt, never the run.

A worker, forked from a warmed-up zygote (run/zygote.py), imports the agent and calls
build() once (run/agent_host.py). With isolation ``attempt`` it then runs each attempt
in a fork of itself, a fresh copy of the built state; with ``worker`` it runs them in
turn in its own process, and state carries over. The parent waits with the attempt's
time budget: past it, or when the process running the attempt dies, the parent kills
that process and records why. A lost copy costs nothing; a lost worker is started
afresh, with its own build(), for the next attempt.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Literal

from agent_eval.errors import AgentLoadError
from agent_eval.run.agent_host import exit_reason
from agent_eval.run.zygote import Zygote

Isolation = Literal["attempt", "worker"]
HOST_GRACE = 5.0
"""How long a worker may take to report an attempt's copy killed before it is killed too."""


@dataclass(frozen=True)
class Outcome:
    """What one attempt produced, from the parent's side of the pipe."""

    reply: dict[str, Any] | None
    """The validated reply (AgentReply fields), or None when the attempt failed."""
    error: str | None = None
    """Why there is no reply, in one line."""
    failure: str | None = None
    """agent_error or over_budget when there is no reply."""
    infra: dict[str, Any] | None = None
    """The agent's account of a model endpoint failure, for retries."""


class Worker:
    """The parent's handle on one worker process; restarts it after a fault."""

    def __init__(
        self,
        zygote: Zygote,
        spec: str,
        options: dict[str, Any],
        memory_mb: int | None,
        isolation: Isolation = "attempt",
        on_fallback: Callable[[str], None] | None = None,
    ) -> None:
        self._zygote = zygote
        self._args = (spec, options, memory_mb, isolation)
        self._isolation = isolation
        self._on_fallback = on_fallback
        self._pid: int | None = None
        self._conn: Connection | None = None
        self._copy: int | None = None
        """The process running the current attempt when the worker forks one per attempt."""
        self._lock = threading.Lock()
        """The dispatcher thread and a second Ctrl-C can both end the process at once:
        whoever takes the pid first reaps it, and only once."""
        self._forks = False
        self._spent = False
        """The built state has served an attempt and must not serve another (fallback)."""
        self._closing = False
        self.fallback: str | None = None
        """Why attempts cannot run in copies of the built worker, when they cannot."""
        self.close_warning: str | None = None

    def start(self) -> None:
        """Fork a worker from the zygote and wait for build(); AgentLoadError if it fails."""
        pid, conn = self._zygote.fork()
        with self._lock:
            self._pid, self._conn = pid, conn
        self._closing = self._spent = False
        try:
            conn.send(self._args)
            status, *detail = conn.recv()
        except (EOFError, OSError):
            status, detail = "failed", [f"agent {self._args[0]}: {self._death()}"]
        if status != "ready":
            self.kill()
            raise AgentLoadError(detail[0])
        hazard = detail[1]
        self._forks = self._isolation == "attempt" and hazard is None
        if hazard is not None:
            self.fallback = hazard
            if self._on_fallback is not None:
                self._on_fallback(hazard)

    def ready(self) -> None:
        """Have a built worker waiting for the next attempt. When attempts cannot run in
        copies of it, that is a fresh worker each time: the last one is closed first."""
        if self._conn is not None and self._spent:
            self.close()
        if self._conn is None:
            self.start()

    def run(self, task: str, options: dict[str, Any], timeout: float | None) -> Outcome:
        """One attempt, bounded by ``timeout`` seconds even if the agent never returns."""
        self.ready()
        conn = self._conn
        if conn is None:
            raise RuntimeError("worker did not start")  # start() raises before this
        deadline = None if timeout is None else time.monotonic() + timeout
        self._spent = self._isolation == "attempt" and not self._forks
        try:
            conn.send(("run", task, options))
            message = _next(conn, deadline)
            if self._forks and message is not None and message[0] == "forked":
                with self._lock:
                    self._copy = message[1]
                message = _next(conn, deadline)
            if message is None:
                self._stop_attempt()
                return Outcome(None, f"no reply within {timeout:g}s; stopped", "over_budget")
        except (EOFError, OSError):
            reason = self._death()
            self.kill()
            return Outcome(None, reason, "agent_error")
        with self._lock:
            self._copy = None
        if not (isinstance(message, tuple) and len(message) == 3):
            self.kill()
            return Outcome(None, f"worker sent {message!r} instead of a reply", "agent_error")
        kind, value, infra = message
        if kind == "reply":
            return Outcome(value, infra=infra)
        if kind == "over_budget" and not self._forks:
            self.kill()  # after a MemoryError the process is not worth trusting
        return Outcome(None, value, kind)

    def _stop_attempt(self) -> None:
        """End an attempt that overran: its copy, or the whole worker when it has none."""
        with self._lock:
            copy, self._copy = self._copy, None
        conn = self._conn
        if copy is None or conn is None:
            self.kill()
            return
        _kill_group(copy)
        try:
            if conn.poll(HOST_GRACE):
                conn.recv()  # the worker's account of the copy's death: already known
                return
        except (EOFError, OSError):
            pass
        self.kill()

    def ask_to_close(self) -> None:
        """Ask the agent to close() without waiting: asking every worker before close()
        waits on any lets them all close at once."""
        if self._conn is not None and not self._closing:
            self._closing = True
            with contextlib.suppress(OSError):
                self._conn.send(("close",))

    def close(self) -> None:
        """Have the agent close(), wait for it, then end the process."""
        self.ask_to_close()
        if self._conn is not None:
            try:
                if self._conn.poll(30):
                    self.close_warning = self.close_warning or self._conn.recv()[1]
            except (EOFError, OSError):
                pass
        self.kill()

    def kill(self) -> None:
        """End the process and everything it started, now, whatever it is doing."""
        with self._lock:
            pid, conn, copy = self._pid, self._conn, self._copy
            self._pid = self._conn = self._copy = None
        if copy is not None:
            _kill_group(copy)
        if pid is not None:
            _kill_group(pid)
            self._zygote.reap(pid)
        if conn is not None:
            conn.close()

    def _death(self) -> str:
        """Why the worker died, from its exit code; the process is reaped here."""
        with self._lock:
            pid, self._pid = self._pid, None
        return exit_reason(None if pid is None else self._zygote.reap(pid))


def _next(conn: Connection, deadline: float | None) -> Any:
    """The next message, or None when ``deadline`` passes first."""
    left = None if deadline is None else max(0.0, deadline - time.monotonic())
    return conn.recv() if conn.poll(left) else None


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        try:
            os.killpg(pid, signal.SIGKILL)
        except PermissionError:  # not yet its own group leader: the pid alone
            os.kill(pid, signal.SIGKILL)
