"""Inside a worker process: import the agent, call build() once, then serve attempts.

With isolation ``attempt`` each attempt runs in a fork of the built process, so it starts
from the state build() left and whatever it changes dies with it; the built process runs
no agent code again until close(). With ``worker`` the attempts run in turn in the built
process itself and its state carries from one to the next, as in the course harness.

A fork copies memory, not threads or child processes: when build() leaves either
running, a copy would lack them, so the host says why (`fork_hazard`) and runs its
attempts in-process; the parent then gives each attempt a fresh worker of its own.

Messages, parent to host: ``(spec, options, memory_mb, isolation)`` once, then
``("run", task, options)`` per attempt and ``("close",)`` at the end. Host to parent:
``("ready", scaffold, hazard)`` or ``("failed", reason)``; per attempt ``("forked", pid)``
when it forks, then ``(kind, value, infra)``; ``("closed", warning)`` at the end.
"""

from __future__ import annotations

import contextlib
import gc
import os
import resource
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from agent_eval.agents.entry import AgentMisbehaved, coerce_reply, load_agent
from agent_eval.errors import AgentLoadError

RunTask = Callable[[str, dict[str, Any]], Any]
Reply = tuple[str, Any, Any]
"""(kind, value, infra): kind is reply, agent_error or over_budget."""


def main(fd: int) -> None:
    """Worker process entry: read the agent spec from the parent, then serve attempts."""
    conn = Connection(fd)
    spec, options, memory_mb, isolation = conn.recv()
    _serve(conn, spec, options, memory_mb, isolation)


def _serve(
    conn: Connection, spec: str, options: dict[str, Any], memory_mb: int | None, isolation: str
) -> None:
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
    hazard = fork_hazard() if isolation == "attempt" else None
    forks = isolation == "attempt" and hazard is None
    if forks:
        _flush()  # or every copy would write out what build() left buffered
        gc.freeze()  # the copies' collector then leaves the built state's pages shared
    conn.send(("ready", agent.scaffold, hazard))
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message[0] == "close":
            warning = None
            if agent.close is not None:
                try:
                    agent.close()
                except Exception as exc:
                    warning = f"agent close() failed: {exc!r}"
            conn.send(("closed", warning))
            return
        _, task, attempt_options = message
        try:
            if forks:
                _forked(conn, agent.run_task, task, attempt_options, memory_mb)
            else:
                conn.send(_attempt(agent.run_task, task, attempt_options, memory_mb))
        except OSError:  # the parent is gone
            return


def _forked(
    conn: Connection, run_task: RunTask, task: str, options: dict[str, Any], memory_mb: int | None
) -> None:
    """Run one attempt in a fork of this process and pass its reply on to the parent."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(read)
            conn.close()
            os.setpgid(0, 0)  # its own group: one kill ends what the attempt started
            Connection(write, readable=False).send(_attempt(run_task, task, options, memory_mb))
        except BaseException:
            traceback.print_exc()
            code = 1
        finally:
            _flush()
            os._exit(code)
    os.close(write)
    with contextlib.suppress(OSError):  # as the child does: whichever runs first
        os.setpgid(pid, pid)
    conn.send(("forked", pid))
    with Connection(read, writable=False) as replies:
        try:
            reply: bytes | None = replies.recv_bytes()
        except EOFError:
            reply = None
    # The attempt is over: end anything it left running, then reap it. The group is
    # killed while the attempt is still unreaped, so its id cannot belong to another.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if reply is not None:
        conn.send_bytes(reply)
    else:
        conn.send(("agent_error", exit_reason(os.waitstatus_to_exitcode(status)), None))


def _attempt(run_task: RunTask, task: str, options: dict[str, Any], memory_mb: int | None) -> Reply:
    try:
        raw = run_task(task, options)
        infra = raw.get("infra_error") if isinstance(raw, dict) else None
        return ("reply", coerce_reply(raw).model_dump(mode="json"), infra)
    except MemoryError:
        return ("over_budget", f"memory over --max-memory-mb {memory_mb}", None)
    except AgentMisbehaved as exc:
        return ("agent_error", str(exc), None)
    except (Exception, SystemExit) as exc:  # an agent's crash is its failure, not ours
        return ("agent_error", f"run_task raised {type(exc).__name__}: {exc}", None)


def fork_hazard() -> str | None:
    """What a fork of this process would not copy: "2 thread(s)", "1 child process(es)";
    None when there is nothing."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:  # no /proc: Python's own threads are all that can be seen
        threads = threading.active_count()
        return f"{threads - 1} thread(s)" if threads > 1 else None
    if len(tasks) > 1:
        return f"{len(tasks) - 1} thread(s)"
    try:
        with open(f"/proc/self/task/{tasks[0]}/children", encoding="ascii") as handle:
            children = handle.read().split()
    except OSError:
        children = []
    return f"{len(children)} child process(es)" if children else None


def exit_reason(code: int | None) -> str:
    """Why an agent's process ended without a reply, from its exit code (-N: signal N)."""
    if code is None:
        return "agent process is gone"
    if code < 0:
        return f"agent process killed by {signal.Signals(-code).name}"
    return f"agent process exited with code {code} (sys.exit or os._exit in the agent?)"


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # an agent may have replaced or closed it
            stream.flush()
