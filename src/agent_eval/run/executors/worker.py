"""Attempts run in worker processes, so an agent that hangs, exits or crashes costs
one attempt, never the run.

A worker, forked from a warmed-up zygote (run/executors/zygote.py), imports the agent and calls
build() once (run/executors/agent_host.py). With isolation ``attempt`` it then runs each attempt
in a fork of itself, a fresh copy of the built state; with ``worker`` it runs them in
turn in its own process, and state carries over. The parent waits with the attempt's
time budget: past it, or when the process running the attempt dies, the parent kills
that process and records why. A lost copy costs nothing; a lost worker is started
afresh, with its own build(), for the next attempt.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from multiprocessing import reduction
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Protocol

from agent_eval.agents import AgentMisbehaved, anchored, coerce_reply
from agent_eval.errors import AgentLoadError
from agent_eval.processes import kill_group
from agent_eval.records import AgentReply
from agent_eval.run.attempt import Outcome
from agent_eval.run.executors.agent_host import NotAMessage, exit_reason, receive
from agent_eval.run.settings import Isolation

HOST_GRACE = 5.0
"""How long a worker may take to report an attempt's copy killed before it is killed too."""
CLOSE_WAIT = 30.0
"""How long an agent's close() may take before its worker is killed."""


class Starter(Protocol):
    """What starts worker processes: the zygote (forks), or a sandbox (execs)."""

    def fork(self, folder: Path | None = None) -> tuple[int, Connection]: ...

    def reap(self, pid: int) -> int | None: ...


class Worker:
    """The parent's handle on one worker process; restarts it after a fault."""

    def __init__(
        self,
        zygote: Starter,
        spec: str,
        options: dict[str, Any],
        memory_mb: int | None,
        isolation: Isolation = "attempt",
        on_fallback: Callable[[str], None] | None = None,
        folder: Path | None = None,
        limits: tuple[int | None, int | None, str | None] = (None, None, None),
        ahead: bool = False,
        copy_ahead: bool = False,
    ) -> None:
        """``folder`` is the slot's scratch folder, where its attempts' workspaces are
        made; ``limits`` the processes and file size (MB) an attempt may have, and in a
        sandbox the slot's folder as its copies see it;
        ``ahead``: whether the worker makes each copy before its attempt asks, and
        ``copy_ahead`` whether such a copy copies ahead the pages it will write
        (agent_host.AttemptSetup)."""
        self._zygote = zygote
        self.folder = folder
        self._spec = spec
        # the worker's current folder may be another (a sandbox that does not show this one)
        self._args = (anchored(spec), options, memory_mb, isolation, tuple(AgentReply.model_fields),
                      limits, (ahead, copy_ahead))  # fmt: skip
        self._ahead = ahead
        self._isolation = isolation
        self._on_fallback = on_fallback
        self._pid: int | None = None
        self._conn: Connection | None = None
        self._lock = threading.Lock()
        """The dispatcher thread and a second Ctrl-C can both end the process at once:
        whoever takes the pid first reaps it, and only once."""
        self._spares: deque[tuple[int, Connection]] = deque()
        """Copies the worker made ready, by pid, with the connection to each."""
        self._ended: dict[int, int] = {}
        """Exit codes of copies that ended without replying, by pid."""
        self._forks = False
        self._spent = False
        """The built state has served an attempt and must not serve another (fallback)."""
        self._closing = False
        self.close_warning: str | None = None

    def start(self) -> None:
        """Fork a worker from the zygote and wait for build(); AgentLoadError if it fails."""
        pid, conn = self._zygote.fork(self.folder)
        with self._lock:
            self._pid, self._conn = pid, conn
        self._closing = self._spent = False
        try:
            conn.send(self._args)
            status, *detail = _notice(conn)
        except NotAMessage as exc:
            status, detail = "failed", [f"agent {self._spec}: {exc}"]
        except (EOFError, OSError):
            status, detail = "failed", [f"agent {self._spec}: {self._death()}"]
        if status != "ready":
            self.kill()
            raise AgentLoadError(detail[0])
        hazard = detail[1]  # why attempts cannot run in copies of this worker, if they cannot
        self._forks = self._isolation == "attempt" and hazard is None
        if hazard is not None and self._on_fallback is not None:
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
        if self._forks:
            return self._run_in_copy(conn, task, options, timeout, deadline)
        try:
            conn.send(("run", task, options))
            message = _next(conn, deadline)
        except NotAMessage as exc:
            self.kill()
            return Outcome(None, str(exc), "agent_error")
        except (EOFError, OSError):
            reason = self._death()
            self.kill()
            return Outcome(None, reason, "agent_error")
        if message is None:
            self.kill()
            return Outcome(None, f"no reply within {timeout:g}s; stopped", "over_budget")
        if isinstance(message, tuple) and message[:1] == ("over_budget",):
            self.kill()  # after a MemoryError the process is not worth trusting
        return self._outcome(message)

    def _run_in_copy(
        self,
        conn: Connection,
        task: str,
        options: dict[str, Any],
        timeout: float | None,
        deadline: float | None,
    ) -> Outcome:
        """The attempt in the copy of the built worker that is ready for it."""
        try:
            pid, copy = self._take_copy(conn)
        except NotAMessage as exc:
            self.kill()
            return Outcome(None, str(exc), "agent_error")
        except (EOFError, OSError):
            reason = self._death()
            self.kill()
            return Outcome(None, reason, "agent_error")
        try:
            copy.send(("run", task, options))
            message = _next(copy, deadline)
        except NotAMessage as exc:
            self._end_copy(conn, copy, pid)
            return Outcome(None, str(exc), "agent_error")
        except (EOFError, OSError):
            copy.close()
            return Outcome(None, exit_reason(self._copy_ended(conn, pid)), "agent_error")
        if message is None:
            self._end_copy(conn, copy, pid)
            return Outcome(None, f"no reply within {timeout:g}s; stopped", "over_budget")
        copy.close()
        self._copy_ended(conn, pid)  # nothing the attempt started still runs when it is scored
        return self._outcome(message)

    def _end_copy(self, conn: Connection, copy: Connection, pid: int) -> None:
        """End a copy that is still running, and wait until the worker says it ended.
        The worker ends it: the copy is its child, and in a sandbox ``pid`` is a pid of
        the sandbox's own namespace, which here may name any other process."""
        with contextlib.suppress(OSError):
            conn.send(("kill", pid))
        copy.close()
        self._copy_ended(conn, pid)

    def _outcome(self, message: Any) -> Outcome:
        if not (isinstance(message, tuple) and len(message) == 3):
            self.kill()
            return Outcome(None, f"worker sent {message!r} instead of a reply", "agent_error")
        kind, value, infra = message
        if kind == "agent_error":
            return Outcome(None, value, kind, traceback=infra if isinstance(infra, list) else None)
        if kind != "reply":
            return Outcome(None, value, kind, infra)
        try:
            return Outcome(coerce_reply(value), infra=infra)
        except AgentMisbehaved as exc:
            return Outcome(None, str(exc), "agent_error")

    def _take_copy(self, conn: Connection) -> tuple[int, Connection]:
        """The copy the worker made ready, asked for now unless it makes them ahead
        (waiting while it is still being forked)."""
        if not self._spares and not self._ahead:
            conn.send(("copy",))
        while not self._spares:
            self._read_notice(conn)
        return self._spares.popleft()

    def _copy_ended(self, conn: Connection, pid: int) -> int | None:
        """The exit code of a copy that ended without replying, as the worker saw it; None
        (and the worker killed) when the worker does not say within HOST_GRACE."""
        deadline = time.monotonic() + HOST_GRACE
        try:
            while pid not in self._ended:
                if not conn.poll(max(0.0, deadline - time.monotonic())):
                    break
                self._read_notice(conn)
        except (EOFError, OSError):
            pass
        if pid in self._ended:
            return self._ended.pop(pid)
        self.kill()
        return None

    def _read_notice(self, conn: Connection) -> None:
        """One of the worker's notices about its copies: one made ready, or one ended."""
        message = _notice(conn)
        if message[0] == "copy":
            self._spares.append((message[1], Connection(reduction.recv_handle(conn))))
        elif message[0] == "ended":
            self._ended[message[1]] = message[2]

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
        conn, deadline = self._conn, time.monotonic() + CLOSE_WAIT
        try:
            while conn is not None and conn.poll(max(0.0, deadline - time.monotonic())):
                message = _notice(conn)
                if message[0] == "closed":
                    self.close_warning = self.close_warning or message[1]
                    break
                if message[0] == "copy":  # made ready, never needed
                    os.close(reduction.recv_handle(conn))
        except (EOFError, OSError):
            pass
        self.kill()

    def kill(self) -> None:
        """End the process and everything it started, now, whatever it is doing."""
        with self._lock:
            pid, conn = self._pid, self._conn
            self._pid = self._conn = None
            spares, self._spares = self._spares, deque()
        # Its copies, the one running included, end with it: they become the zygote's,
        # which ends them when it reaps the worker, or they die with the sandbox's PID
        # namespace. Their pids are never signalled from here (see _run_in_copy).
        for _, spare_conn in spares:
            spare_conn.close()
        if pid is not None:
            kill_group(pid, or_process=True)
            self._zygote.reap(pid)
        if conn is not None:
            conn.close()

    def _death(self) -> str:
        """Why the worker died, from its exit code; the process is reaped here."""
        with self._lock:
            pid, self._pid = self._pid, None
        return exit_reason(None if pid is None else self._zygote.reap(pid))


NOTICES = {"ready": 3, "failed": 2, "copy": 2, "ended": 3, "closed": 2}
"""What a worker tells the parent besides replies, by kind: how many items each has."""


def _notice(conn: Connection) -> tuple[Any, ...]:
    """The worker's next notice; NotAMessage when it is none (agent code in the worker
    may have written it)."""
    message = receive(conn)
    kind = message[0] if isinstance(message, tuple) and message else None
    if isinstance(kind, str) and len(message) == NOTICES.get(kind):
        return tuple(message)
    raise NotAMessage(f"the agent's worker sent {message!r:.80} instead of a notice")


def _next(conn: Connection, deadline: float | None) -> Any:
    """The next message, or None when ``deadline`` passes first."""
    left = None if deadline is None else max(0.0, deadline - time.monotonic())
    return receive(conn) if conn.poll(left) else None
