"""A warmed-up interpreter that forks worker processes in milliseconds.

Starting a fresh Python and importing the harness, httpx and the search index's numpy
and scipy costs about a second of CPU. At --concurrency 32 on two cores that start-up
would dwarf the run, so one zygote process imports everything once and forks each
worker from itself (with one worker, it forks it before those imports). It is
single-threaded, so forking it is safe, and it is a fresh interpreter, so a caller's
own script is never re-imported. It also reaps its children, which is how the parent
learns a dead worker's exit status. It is a subreaper: what a dead worker left running
becomes its child, and is killed when that worker is reaped and when the zygote stops.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import signal
import socket
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable
from multiprocessing import reduction
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING

from agent_eval.redaction import Redactor, relay_to_stderr
from agent_eval.run.executors import agent_host
from agent_eval.sandbox import reaper

if TYPE_CHECKING:
    from agent_eval.sandbox import Slot

NO_BACKGROUND_THREADS = {
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "DISABLE_TQDM": "1",
}
"""A thread does not survive a fork, so workers start none of their own: a math library
with one thread has no pool, and bm25s without tqdm's (disabled) bars starts no tqdm
monitor thread. Either would stop attempts running in copies of a built worker."""


class Zygote:
    """The parent's handle on the zygote: fork a worker, reap one, stop."""

    def __init__(
        self,
        preload: list[str],
        preload_first: bool = True,
        redact: Redactor | None = None,
        sandbox: Callable[[list[str]], list[str]] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        """``preload_first=False`` forks the first worker without importing ``preload``,
        which waits for a second: with one worker the imports are needed only if it has
        to be replaced (then every later worker shares them). What the workers print
        reaches stderr redacted by ``redact`` and with its control characters shown. A
        ``sandbox`` turns the zygote's command into one that starts it in a sandbox
        (run/executors/sandboxed.py), with ``env`` its whole environment."""
        mine, theirs = socket.socketpair()
        command = [sys.executable, "-m", "agent_eval.run.executors.zygote", str(theirs.fileno())]
        self._process = subprocess.Popen(
            command if sandbox is None else sandbox(command),
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
            # a worker's prints go to stderr, never into the console layout
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C is the parent's to handle; one killpg ends it
            env={**os.environ, **NO_BACKGROUND_THREADS} if env is None else env,
        )
        theirs.close()
        assert self._process.stdout is not None
        self._pump = relay_to_stderr(self._process.stdout, redact or Redactor([]), "worker-output")
        self._conn = Connection(mine.detach())
        self._lock = threading.Lock()
        self._conn.send((preload, preload_first))
        self._ready = False
        """Whether it said it is ready: the caller goes on while it starts, until it
        asks for the first worker."""

    def fork(self, folder: Path | None = None) -> tuple[int, Connection]:
        """A new worker process and the parent's end of its connection (``folder``, the
        slot's scratch folder, matters only to a sandbox, which binds it)."""
        mine, theirs = socket.socketpair()
        pid = self.start_worker(theirs)
        theirs.close()
        return pid, Connection(mine.detach())

    def start_worker(self, channel: socket.socket, slot: Slot | None = None) -> int:
        """Fork a worker that serves on ``channel`` (passed to it), confined to ``slot``
        first when one is given; its pid in the zygote's namespace."""
        with self._lock:
            if not self._ready:
                agent_host.receive(self._conn)
                self._ready = True
            self._conn.send(("fork", slot))
            reduction.send_handle(self._conn, channel.fileno(), self._process.pid)
            pid = agent_host.receive(self._conn)
        if not isinstance(pid, int):
            raise ConnectionError(f"the zygote sent {pid!r:.80} for a pid")
        return pid

    def reap(self, pid: int) -> int | None:
        """Wait for a worker that is dead or killed; its exit code (-N for signal N), or
        None when it was reaped already."""
        with self._lock:
            self._conn.send(("reap", pid))
            code = agent_host.receive(self._conn)
        return code if isinstance(code, int) else None

    def close(self) -> None:
        """Stop the zygote; a Ctrl-C while it exits kills it instead of ending the run."""
        with contextlib.suppress(OSError):
            self._conn.send(("exit",))
        self._conn.close()
        try:
            self._process.wait(10)
        except (subprocess.TimeoutExpired, KeyboardInterrupt):
            self._process.kill()
            self._process.wait()
        self._pump.join(1.0)  # the workers' last words, unless a stray keeps the pipe


def serve(fd: int) -> None:
    """The zygote's loop: preload, then fork and reap workers on request."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    reaper.become_subreaper()
    workers: set[int] = set()
    try:
        _serve(Connection(fd), workers)
    finally:
        reaper.end_strays(())  # nothing a worker started outlives the run


def _serve(conn: Connection, workers: set[int]) -> None:
    preload, preload_first = conn.recv()
    imported = preload_first
    if imported:
        _import(preload)
    conn.send("ready")
    forked = False
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message[0] == "fork":
            slot: Slot | None = message[1]
            child_fd = reduction.recv_handle(conn)
            if forked and not imported:  # a second worker: it and every later one share them
                _import(preload)
                imported = True
            forked = True
            gc.freeze()  # else each worker's collector writes to every page it shares
            pid = os.fork()
            if pid == 0:
                conn.close()
                os.setsid()  # its own group, so a kill reaches what the agent started
                code = 0
                try:
                    if slot is not None:
                        _confine(slot, child_fd)
                    agent_host.main(child_fd)
                except _Unconfined as exc:
                    print(f"agent-eval: {exc}", file=sys.stderr)
                    code = 1
                except BaseException:
                    traceback.print_exc()
                    code = 1
                finally:
                    sys.stderr.flush()
                    os._exit(code)
            os.close(child_fd)
            workers.add(pid)
            conn.send(pid)
        elif message[0] == "reap":
            workers.discard(message[1])
            try:
                _, status = os.waitpid(message[1], 0)
            except ChildProcessError:  # reaped already: never let that end the zygote
                conn.send(None)
            else:
                conn.send(os.waitstatus_to_exitcode(status))
            reaper.end_strays(workers)  # what the dead worker's attempts left
        else:
            return


class _Unconfined(Exception):
    pass


def _confine(slot: Slot, fd: int) -> None:
    from agent_eval.sandbox import slot as slots

    try:
        slots.confine(slot, fd)
    except OSError as exc:
        raise _Unconfined(f"the sandbox could not confine the worker of {slot.folder}: "
                          f"{exc.strerror or exc}") from exc  # fmt: skip


def _import(modules: list[str]) -> None:
    """The preloads, then the search index's library (bm25s with numpy, about a tenth of
    a second), which the harness imports only when an index is built: imported here,
    the workers share one copy of it instead of each importing its own in build()."""
    for module in modules:
        with contextlib.suppress(Exception):  # a preload is only an optimisation
            importlib.import_module(module)
    with contextlib.suppress(Exception):
        from agent_eval.tools import bm25s_library

        bm25s_library()


if __name__ == "__main__":
    serve(int(sys.argv[1]))
    gc.freeze()  # the parent waits for this exit: skip the shutdown's collections
