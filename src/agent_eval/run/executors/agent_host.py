"""Inside a worker process: import the agent, call build() once, then serve attempts.

With isolation ``attempt`` every attempt runs in a copy of the built process, a fork
that serves that one attempt and ends (made ahead of it unless the slots outnumber the
cores); the built process itself runs no agent code again until close(). With ``worker``
the attempts run in turn in the built process, and its state carries from one to the
next, as in the course harness.

A fork copies memory, not threads or child processes: when build() leaves either
running, a copy would lack them, so the worker says why (`fork_hazard`) and runs its
attempts in-process; the parent then gives each attempt a fresh worker of its own.

Messages on the worker's connection. Parent to worker: ``(spec, options, memory_mb,
isolation, reply_keys, limits, (ahead, copy_ahead))``, then ``("run", task, options)``
per attempt when it has no copies, ``("copy",)`` for a copy when none is made ahead of
its attempt, ``("kill", pid)`` for a copy past its time, and ``("close",)``. Worker to
parent:
``("ready", scaffold, hazard)`` or ``("failed", reason)``; a reply per attempt run
in-process; with copies, ``("copy", pid)`` followed by the copy's own connection (a
passed file descriptor) for each copy made ready, and ``("ended", pid, exit code)`` for
every copy once nothing its attempt started can change anything (so the parent scores a
world nobody still changes); ``("closed", warning)`` last. A copy reads one ``("run",
task, options)`` on its own connection and answers it there, so an attempt's round trip
never passes through the worker.
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import pickle
import resource
import select
import signal
import socket
import struct
import sys
import traceback
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from agent_eval.agents import (
    Agent,
    AgentMisbehaved,
    agent_frames,
    coerce_reply,
    describe_outage,
    find_outage,
    load_agent,
)
from agent_eval.errors import AgentLoadError
from agent_eval.processes import kill_group
from agent_eval.run.executors.copy_ahead import Ranges, copy_ahead, written_ranges
from agent_eval.sandbox import become_subreaper, children, end_strays

RunTask = Callable[[str, dict[str, Any]], Any]
Reply = tuple[str, Any, Any]
"""(kind, value, extra): kind is reply (value: what run_task returned, for the parent to
check), or agent_error, over_budget or infra_error (value: why). extra is the agent's
account of an endpoint failure for reply and infra_error, and for an agent_error raised
by run_task its traceback's frames in the agent's own files (`agent_frames`)."""
SPARE_COPIES = 1
"""Copies kept waiting when copies are made ahead (`AttemptSetup.ahead`). One is enough:
the next is forked as soon as an attempt takes it, and an attempt lasts longer than a
fork. A second one changed no wall time, at concurrency 1 or 32, and cost 1.5 MB of PSS
(its page tables and the pages it wrote)."""
TAKEN, REPLIED = b"t", b"r"
"""What a copy tells the worker: it has its attempt (make the next copy), it answered."""


def main(fd: int) -> None:
    """Worker process entry: read the agent spec from the parent, then serve attempts."""
    become_subreaper()
    conn = Connection(fd)
    spec, options, memory_mb, isolation, reply_keys, limits, copies = conn.recv()
    setup = AttemptSetup(reply_keys, memory_mb, *limits, *copies)
    _serve(conn, spec, options, isolation, setup)


@dataclass(frozen=True)
class AttemptSetup:
    """What every attempt of this worker is run under: the fields its reply keeps (the
    parent's AgentReply's, sent over so this process need not import pydantic), and the
    limits to apply and name."""

    reply_keys: tuple[str, ...]
    memory_mb: int | None
    processes: int | None = None
    """RLIMIT_NPROC of an attempt (None: unchanged)."""
    file_mb: int | None = None
    """RLIMIT_FSIZE of an attempt: the largest file it may write (None: unchanged)."""
    slot_folder: str | None = None
    """In a sandbox, the slot's folder: each copy forgets what earlier attempts left in
    the slot's shared memory before its own (agent_eval.sandbox.slot.forget_shared)."""
    ahead: bool = False
    """Whether copies are made before their attempts ask (SPARE_COPIES of them); else
    each is made when its attempt asks, and none waits holding memory."""
    copy_ahead: bool = False
    """Whether each copy made ahead copies, while it waits, the pages an earlier one
    wrote (run/executors/copy_ahead.py): where a core would otherwise idle."""

    def apply(self) -> None:
        """Set the per-attempt limits in this process, which the attempt runs in."""
        if self.processes is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (self.processes, self.processes))
        if self.file_mb is not None:
            size = self.file_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


def _serve(
    conn: Connection, spec: str, options: dict[str, Any], isolation: str, setup: AttemptSetup
) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    if setup.memory_mb is not None:
        limit = setup.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        agent = load_agent(spec)
        if agent.build is not None:
            agent.build(options)
    except AgentLoadError as exc:
        _tell(conn, ("failed", str(exc)))
        return
    except Exception as exc:
        _tell(conn, ("failed", f"agent {spec}: build() failed: {exc!r}"))
        return
    hazard = fork_hazard() if isolation == "attempt" else None
    _tell(conn, ("ready", agent.scaffold, hazard))
    try:
        if isolation == "attempt" and hazard is None:
            _flush()  # or every copy would write out what build() left buffered
            gc.freeze()  # the copies' collector then leaves the built state's pages shared
            _serve_copies(conn, agent, setup)
        else:
            _serve_in_process(conn, agent, setup)
    except OSError:  # the parent is gone
        pass


def _serve_in_process(conn: Connection, agent: Agent, setup: AttemptSetup) -> None:
    built = set(children())  # what build() started stays; what an attempt starts does not
    setup.apply()
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message[0] == "close":
            _close(conn, agent)
            return
        _, task, options = message
        reply = encode(_attempt(agent.run_task, task, options, setup))
        end_strays(built)  # before the reply: the parent then scores a settled world
        conn.send_bytes(reply)


def _serve_copies(conn: Connection, agent: Agent, setup: AttemptSetup) -> None:
    """Make copies for the parent: SPARE_COPIES kept ready ahead, or one each time the
    parent asks; end every copy whose attempt is over, and reap it."""
    copies: dict[int, AttemptFork] = {}
    """Live copies by the worker's end of their status pipe."""
    dying: set[int] = set()
    """Copies killed while stopped, not yet reaped: each tears its memory down while
    the parent scores its attempt."""

    learned: list[tuple[int, int]] = []
    """The pages one copy wrote, which each later spare copies for itself while it waits."""

    def end(copy: AttemptFork) -> int:
        keep = {other.pid for other in copies.values()} | dying
        code, reaped = copy.end(keep, learn=setup.copy_ahead and not learned)
        learned.extend(copy.written)
        if not reaped:
            dying.add(copy.pid)
        return code

    handles = socket.socket(fileno=os.dup(conn.fileno()))
    """The connection as a socket, made once, to pass each copy's descriptor on."""

    def make_ready() -> None:
        copy = AttemptFork.fork(conn, handles, agent.run_task, setup, learned)
        copies[copy.status] = copy
        _tell(conn, ("copy", copy.pid))
        # as multiprocessing's send_handle sends it (recv_handle reads it), on a socket
        # made once: one made per copy would touch pages the fork has just shared
        rights = (socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", copy.parent_end))
        handles.sendmsg([b"\x01"], [rights])
        os.close(copy.parent_end)

    for _ in range(SPARE_COPIES if setup.ahead else 0):
        make_ready()
    try:
        while True:
            ready, _, _ = select.select([conn.fileno(), *copies], [], [])
            _reap(dying, wait=False)
            for fd in ready:
                if fd == conn.fileno():
                    try:
                        message = conn.recv()
                    except EOFError:
                        return
                    if message[0] == "close":
                        while copies:
                            end(copies.popitem()[1])
                        _reap(dying, wait=True)
                        _close(conn, agent)
                        return
                    if message[0] == "copy":
                        make_ready()
                        continue
                    if message[0] == "kill":  # past its time: "ended" follows, as for any
                        for copy in copies.values():
                            if copy.pid == message[1]:
                                kill_group(copy.pid)
                    continue
                copy = copies[fd]
                news = os.read(fd, 16)
                taken = TAKEN in news and not copy.taken
                copy.taken = copy.taken or taken
                copy.replied = REPLIED in news
                if copy.replied or not news:  # it has answered, or died, or been killed
                    del copies[fd]
                    code = end(copy)  # and with it anything the attempt left running
                    _tell(conn, ("ended", copy.pid, code))  # the parent scores once it hears
                if taken and setup.ahead:  # after "ended": not part of the parent's wait
                    make_ready()
    finally:
        while copies:
            end(copies.popitem()[1])
        _reap(dying, wait=True)
        handles.close()


def _reap(dying: set[int], wait: bool) -> None:
    """Reap the killed copies that have ended (all of them, waiting, with ``wait``)."""
    for pid in list(dying):
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, 0 if wait else os.WNOHANG)[0] == 0:
                continue
        dying.discard(pid)


@dataclass
class AttemptFork:
    """A copy of the built worker (a fork) for exactly one attempt; the worker's side of it."""

    pid: int
    status: int
    """The worker's end of a pipe on which the copy reports TAKEN and REPLIED."""
    parent_end: int
    """The socket end passed to the parent, which sends the attempt there."""
    taken: bool = False
    replied: bool = False
    written: list[tuple[int, int]] = field(default_factory=list)
    """The pages it wrote, when `end` was asked to learn them."""

    @classmethod
    def fork(
        cls,
        conn: Connection,
        handles: socket.socket,
        run_task: RunTask,
        setup: AttemptSetup,
        ahead: Ranges = (),
    ) -> AttemptFork:
        """Fork a copy; it keeps neither the worker's connection nor ``handles``, the
        socket on it that passes descriptors, and copies the pages of ``ahead`` first."""
        status_read, status_write = os.pipe()
        parent_end, copy_end = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.close(status_read)
                parent_end.close()
                conn.close()
                handles.close()
                os.setpgid(0, 0)  # its own group: one kill ends what the attempt started
                copy_ahead(ahead)
                setup.apply()
                if setup.slot_folder is not None:  # a sandbox's: imported there already
                    from agent_eval.sandbox import slot

                    slot.seal_attempt()
                _run_one(Connection(copy_end.detach()), status_write, run_task, setup)
            except BaseException:
                traceback.print_exc()
                code = 1
            finally:
                _flush()
                os._exit(code)
        os.close(status_write)
        copy_end.close()
        with contextlib.suppress(OSError):  # as the copy does: whichever runs first
            os.setpgid(pid, pid)
        return cls(pid, status_read, parent_end.detach())

    def end(self, keep: Collection[int], learn: bool = False) -> tuple[int, bool]:
        """End the copy and anything it left running; return its exit code (-N for
        signal N) and whether it was reaped. ``keep``: the worker's other children.

        The copy is stopped first (one that has answered stops itself). Stopped, with
        what it left ended and no child of its own, it can change nothing more: it is
        killed and not waited for, since tearing down its memory takes longer than the
        rest of its attempt's ending (reap it later). Otherwise it is killed and reaped
        here. Its group is killed while it is unreaped, so the id is still its own.
        With ``learn``, a stopped copy's written pages are kept in ``written``."""
        os.close(self.status)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGSTOP)
        state = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WSTOPPED | os.WNOWAIT)
        stopped = state is not None and state.si_code == os.CLD_STOPPED
        if stopped:
            end_strays({*keep, self.pid})  # none is left to wake it (SIGCONT) or to fork
            stopped = os.path.isdir(f"/proc/{self.pid}/task") and not children(self.pid)
            if learn:
                self.written = written_ranges(self.pid)
        kill_group(self.pid)
        if stopped:
            return -signal.SIGKILL, False
        _, status = os.waitpid(self.pid, 0)
        end_strays(keep)  # its children, now ours (this process is their subreaper)
        return os.waitstatus_to_exitcode(status), True


def _run_one(conn: Connection, status: int, run_task: RunTask, setup: AttemptSetup) -> None:
    """In a copy: wait for its attempt, run it, answer."""
    try:
        _, task, options = conn.recv()
    except EOFError:  # never needed: the run is over
        return
    os.write(status, TAKEN)
    if setup.slot_folder is not None:
        from agent_eval.sandbox import slot

        slot.forget_shared(setup.slot_folder)
    conn.send_bytes(encode(_attempt(run_task, task, options, setup)))
    _flush()  # before REPLIED, after which the worker ends this process
    os.write(status, REPLIED)
    os.kill(os.getpid(), signal.SIGSTOP)  # stopped, the worker need not wait for its exit


def _tell(conn: Connection, message: tuple[Any, ...]) -> None:
    """Send the parent a message, pickled by the standard pickler: Connection.send's
    pickler copies copyreg's whole dispatch table each time, about 150 pages to copy
    in a worker that has just forked."""
    conn.send_bytes(pickle.dumps(message, pickle.HIGHEST_PROTOCOL))


def _close(conn: Connection, agent: Agent) -> None:
    warning = None
    if agent.close is not None:
        try:
            agent.close()
        except Exception as exc:
            warning = f"agent close() failed: {exc!r}"
    _tell(conn, ("closed", warning))


def _attempt(run_task: RunTask, task: str, options: dict[str, Any], setup: AttemptSetup) -> Reply:
    """Run one attempt. What run_task returned is checked by the parent (`coerce_reply`),
    where it costs far less than in a fresh copy, whose every first touch of a page of
    the built state copies that page."""
    try:
        raw = run_task(task, options)
    except MemoryError:
        return ("over_budget", f"memory over --max-memory-mb {setup.memory_mb}", None)
    except (Exception, SystemExit) as exc:  # an agent's crash is its failure, not ours...
        outage = find_outage(exc)
        if outage is not None:  # ...unless its HTTP client says the endpoint failed
            return ("infra_error", describe_outage(exc, outage), outage.as_infra())
        frames = agent_frames(exc) or None
        return ("agent_error", f"run_task raised {type(exc).__name__}: {exc}", frames)
    if not isinstance(raw, dict):
        return ("reply", raw, None)
    fields = {key: raw[key] for key in setup.reply_keys if key in raw}
    return ("reply", fields, raw.get("infra_error"))


def encode(reply: Reply) -> bytes:
    """The reply pickled. One that holds more than plain values (str, numbers, lists,
    dicts...) is checked here instead, so the parent never unpickles an agent's objects."""
    plain = _plain(reply)
    if plain is not None:
        return plain
    _, value, infra = reply
    checked: tuple[str, Any]
    try:
        checked = ("reply", coerce_reply(value).model_dump(mode="json"))
    except AgentMisbehaved as exc:
        checked = ("agent_error", str(exc))
    return _plain((*checked, infra)) or pickle.dumps((*checked, None))


def _plain(value: Any) -> bytes | None:
    buffer = io.BytesIO()
    try:
        _PlainPickler(buffer, pickle.HIGHEST_PROTOCOL).dump(value)
    except _NotPlain:
        return None
    return buffer.getvalue()


class _NotPlain(Exception):
    pass


class _PlainPickler(pickle.Pickler):
    """Pickles plain values only: anything that needs a class to rebuild is refused."""

    def reducer_override(self, obj: Any) -> Any:
        raise _NotPlain


def receive(conn: Connection) -> Any:
    """The next message from a process that runs agent code (a worker, a copy) or that
    agent code might reach (the zygote), for the parent: plain values only. Such a
    process can write anything on its connection, so a pickle that names a class or a
    function is never imported or called: it is refused (NotAMessage, an OSError, as a
    broken connection is), and so is any other pickle that does not load. A lone
    surrogate in its strings arrives as U+FFFD (`replace_lone_surrogates`): this is where
    what the agent returned enters the harness, so scoring and every file see one text."""
    # Imported here: only the parent receives, and a worker loads no module it does not run.
    from agent_eval.redaction import replace_lone_surrogates

    data = conn.recv_bytes()
    try:
        message = _PlainUnpickler(io.BytesIO(data)).load()
    except Exception as exc:  # whatever a forged pickle makes the unpickler raise
        raise NotAMessage(f"the agent's process sent what is not a message: {exc!r:.200}") from None
    try:
        return replace_lone_surrogates(message)
    except RecursionError:  # a forged pickle nests deeper than any pickler writes
        raise NotAMessage("the agent's process sent a message nested too deeply to read") from None


class NotAMessage(ConnectionError):
    """What a worker, a copy or the zygote sent is no message of theirs: agent code wrote
    it. The process is alive, so it must be ended, not waited for."""


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"it names {module}.{name}")


def fork_hazard() -> str | None:
    """What a fork of this process would not copy: "2 thread(s)", "1 child process(es)";
    None when there is nothing."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:  # no /proc: Python's own threads are all that can be seen
        import threading

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
