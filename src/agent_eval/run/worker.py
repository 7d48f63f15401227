"""Attempts run in worker processes, so an agent that hangs, exits or crashes costs
one attempt, never the run.

A worker, forked from a warmed-up zygote (run/zygote.py), imports the agent, calls
build() once, then answers one attempt at a time over a socket. The parent waits with
the attempt's time budget: past it, or when the worker dies, the parent kills it,
records why, and starts a fresh worker for the next attempt.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import threading
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from agent_eval.agents.entry import AgentMisbehaved, coerce_reply, load_agent
from agent_eval.agents.outage import describe as describe_outage
from agent_eval.agents.outage import find_outage
from agent_eval.errors import AgentLoadError
from agent_eval.run.zygote import Zygote


@dataclass(frozen=True)
class Outcome:
    """What one attempt produced, from the parent's side of the pipe."""

    reply: dict[str, Any] | None
    """The validated reply (AgentReply fields), or None when the attempt failed."""
    error: str | None = None
    """Why there is no reply, in one line."""
    failure: str | None = None
    """agent_error, over_budget or infra_error when there is no reply."""
    infra: dict[str, Any] | None = None
    """The agent's account of a model endpoint failure, for retries."""


def main(fd: int) -> None:
    """Worker process entry: read the agent spec from the parent, then serve attempts."""
    conn = Connection(fd)
    spec, options, memory_mb = conn.recv()
    _serve(conn, spec, options, memory_mb)


def _serve(conn: Connection, spec: str, options: dict[str, Any], memory_mb: int | None) -> None:
    """The worker's main loop: build once, then run attempts until told to close."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    if memory_mb is not None:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        agent = load_agent(spec)
        if agent.build is not None:
            agent.build(options)
    except AgentLoadError as exc:
        conn.send(("failed", str(exc)))
        return
    except Exception as exc:
        conn.send(("failed", f"agent {spec}: build() failed: {exc!r}"))
        return
    conn.send(("ready", agent.scaffold))
    while True:
        try:
            message = conn.recv()
        except EOFError:
            break
        if message[0] == "close":
            if agent.close is not None:
                try:
                    agent.close()
                except Exception as exc:
                    conn.send(("closed", f"agent close() failed: {exc!r}"))
                    return
            conn.send(("closed", None))
            return
        conn.send(_attempt(agent.run_task, message[1], message[2], memory_mb))


def _attempt(
    run_task: Any, task: str, options: dict[str, Any], memory_mb: int | None
) -> tuple[str, Any, Any]:
    try:
        raw = run_task(task, options)
        infra = raw.get("infra_error") if isinstance(raw, dict) else None
        return ("reply", coerce_reply(raw).model_dump(mode="json"), infra)
    except MemoryError:
        return ("over_budget", f"memory over --max-memory-mb {memory_mb}", None)
    except AgentMisbehaved as exc:
        return ("agent_error", str(exc), None)
    except (Exception, SystemExit) as exc:  # an agent's crash is its failure, not ours...
        outage = find_outage(exc)
        if outage is not None:  # ...unless its HTTP client says the endpoint failed
            return ("infra_error", describe_outage(exc, outage), outage.as_infra())
        return ("agent_error", f"run_task raised {type(exc).__name__}: {exc}", None)


class Worker:
    """The parent's handle on one worker process; restarts it after a fault."""

    def __init__(
        self, zygote: Zygote, spec: str, options: dict[str, Any], memory_mb: int | None
    ) -> None:
        self._zygote = zygote
        self._args = (spec, options, memory_mb)
        self._pid: int | None = None
        self._conn: Connection | None = None
        self._lock = threading.Lock()
        """The dispatcher thread and a second Ctrl-C can both end the process at once:
        whoever takes the pid first reaps it, and only once."""
        self._closing = False
        self.close_warning: str | None = None

    def start(self) -> None:
        """Fork a worker from the zygote and wait for build(); AgentLoadError if it fails."""
        pid, conn = self._zygote.fork()
        with self._lock:
            self._pid, self._conn = pid, conn
        try:
            conn.send(self._args)
            status, detail = conn.recv()
        except (EOFError, OSError):
            status, detail = "failed", f"agent {self._args[0]}: {self._death()}"
        if status != "ready":
            self.kill()
            raise AgentLoadError(detail)

    def run(self, task: str, options: dict[str, Any], timeout: float | None) -> Outcome:
        """One attempt, bounded by ``timeout`` seconds even if the agent never returns."""
        if self._conn is None:
            self.start()
        conn = self._conn
        if conn is None:
            raise RuntimeError("worker did not start")  # start() raises before this
        try:
            conn.send(("run", task, options))
            if not conn.poll(timeout):
                self.kill()
                return Outcome(None, f"no reply within {timeout:g}s; stopped", "over_budget")
            message = conn.recv()
        except (EOFError, OSError):
            reason = self._death()
            self.kill()
            return Outcome(None, reason, "agent_error")
        if not (isinstance(message, tuple) and len(message) == 3):
            self.kill()
            return Outcome(None, f"worker sent {message!r} instead of a reply", "agent_error")
        kind, value, infra = message
        if kind == "reply":
            return Outcome(value, infra=infra)
        if kind == "over_budget":
            self.kill()  # after a MemoryError the process is not worth trusting
        return Outcome(None, value, kind, infra)

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
                    self.close_warning = self._conn.recv()[1]
            except (EOFError, OSError):
                pass
        self.kill()

    def kill(self) -> None:
        """End the process and everything it started, now, whatever it is doing."""
        with self._lock:
            pid, conn, self._pid, self._conn = self._pid, self._conn, None, None
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                try:
                    os.killpg(pid, signal.SIGKILL)
                except PermissionError:  # not yet its own group leader: the pid alone
                    os.kill(pid, signal.SIGKILL)
            self._zygote.reap(pid)
        if conn is not None:
            conn.close()

    def _death(self) -> str:
        """Why the worker died, from its exit code; the process is reaped here."""
        with self._lock:
            pid, self._pid = self._pid, None
        code = None if pid is None else self._zygote.reap(pid)
        if code is None:
            return "agent process is gone"
        if code < 0:
            return f"agent process killed by {signal.Signals(-code).name}"
        return f"agent process exited with code {code} (sys.exit or os._exit in the agent?)"
