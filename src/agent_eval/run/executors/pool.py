"""Dispatch attempts to worker processes side by side."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from agent_eval.processes import usable_cores
from agent_eval.redaction import Redactor
from agent_eval.run.ctrl_c import ignoring_ctrl_c
from agent_eval.run.executors.sandboxed import SandboxedWorkers, inside_options
from agent_eval.run.executors.worker import Worker
from agent_eval.run.executors.zygote import Zygote
from agent_eval.run.settings import Isolation
from agent_eval.run.workspace import SLOT_LOGS, collect_logs, run_scratch, slot_folder
from agent_eval.sandbox import Sandbox, user_tasks

PRELOAD = [
    "agent_eval.run.executors.agent_host",
    "agent_eval.tools",
    "agent_eval.models.client",
    "encodings.idna",  # imported late by the first request to a host name
    "multiprocessing.synchronize",  # imported late by the search index's progress bars
]
"""Modules every worker needs, imported once in the zygote."""
S = TypeVar("S")
"""A slot: a worker process here, a slot of a Ray slot group there."""


def preload_for(spec: str, base_url: str | None) -> list[str]:
    """What the zygote imports: the harness's modules, what a model client for
    ``base_url`` needs, and a shipped agent's own module.

    A user's agent module is never preloaded: its import might start threads, and a
    fork does not carry threads along.
    """
    from agent_eval.models import pool_modules  # the parent may reach no endpoint

    modules = PRELOAD + pool_modules(base_url)
    if spec.startswith("builtin:"):
        from agent_eval.agents import BUILTIN_AGENTS

        target = BUILTIN_AGENTS.get(spec.removeprefix("builtin:"), "")
        return [*modules, target.partition(":")[0]] if target else modules
    return modules


class Dispatch:
    """N worker processes, one dispatcher thread each, sharing one queue of attempts."""

    def __init__(
        self,
        spec: str,
        options: dict[str, Any],
        concurrency: int,
        memory_mb: int | None,
        isolation: Isolation = "attempt",
        notice: Callable[[str], None] | None = None,
        sandbox: Sandbox | None = None,
    ) -> None:
        """With a ``sandbox``, each worker runs in one of its own, and ``options`` are
        those outside (base_url: the endpoint the sandbox's relay reaches)."""
        self._spec, self._options, self._memory = spec, options, memory_mb
        self._sandbox = sandbox
        self._concurrency, self._isolation = concurrency, isolation
        self._notice = notice
        self._noted = threading.Lock()
        self._redact = Redactor.for_run(None, options)
        """What the workers print is redacted of the secrets they were given."""
        self._start: _FirstWorker | None = None
        self.warnings: list[str] = []

    def _fallback(self, hazard: str) -> None:
        """Say once, however many workers find it, that attempts get fresh workers."""
        if not self._noted.acquire(blocking=False):
            return
        message = (
            f"isolation: agent {self._spec} leaves {hazard} running after build(), which a "
            f"copy of it would lack, so each attempt gets a fresh worker and its own build()"
        )
        self.warnings.append(message)
        if self._notice is not None:
            self._notice(message)

    def start(self) -> None:
        """Begin starting the first worker (the sandbox, the zygote, its build()) in the
        background, so that it starts while the caller does the rest of its preparing;
        run() waits for it. Optional: run() starts it if this did not, and close() ends
        what this started if run() never came."""
        if self._start is not None:
            return
        with contextlib.ExitStack() as stack:  # undone here if a step fails, else by close()
            scratch = stack.enter_context(run_scratch())
            log_dir = self._options.get("log_dir")
            if self._sandbox is not None and log_dir:  # once the workers ended (LIFO)
                stack.callback(collect_logs, scratch, Path(str(log_dir)), self._redact)
            starter = start_workers(self._spec, self._options, self._concurrency,
                                    self._sandbox, scratch, self._redact)  # fmt: skip
            stack.callback(starter.close)
            first = make_worker(starter, self._spec, self._options, self._memory,
                                self._isolation, self._sandbox, slot_folder(scratch, 0),
                                self._concurrency, self._fallback)  # fmt: skip
            self._start = _FirstWorker(stack.pop_all(), scratch, starter, first)

    def run(
        self,
        pending: Sequence[Any],
        attempt: Callable[[Worker, Any, threading.Event], Any],
        record: Callable[[int, Any], None],
    ) -> bool:
        """Run every pending attempt and ``record(index in pending, result)`` as each one
        finishes; return True when Ctrl-C cut the run short.

        build() failing in the first worker raises AgentLoadError before anything runs.
        """
        self.start()
        try:
            return self._run(pending, attempt, record)
        finally:
            with ignoring_ctrl_c():  # cut short, it would leave logs half copied, scratch behind
                self.close()

    def close(self) -> None:
        """End the workers, the zygote and the sandbox, and remove the run's scratch."""
        start, self._start = self._start, None
        if start is not None:
            try:
                start.cancel()  # only when run() never came or Ctrl-C cut the start short
            finally:
                start.stack.close()

    def _run(
        self,
        pending: Sequence[Any],
        attempt: Callable[[Worker, Any, threading.Event], Any],
        record: Callable[[int, Any], None],
    ) -> bool:
        start = self._start
        assert start is not None  # run() starts it
        try:
            start.wait()
        except KeyboardInterrupt:
            return True
        count = max(1, min(self._concurrency, len(pending)))
        workers = [start.first] + [
            make_worker(start.starter, self._spec, self._options, self._memory, self._isolation,
                        self._sandbox, slot_folder(start.scratch, n), self._concurrency,
                        self._fallback)
            for n in range(1, count)
        ]  # fmt: skip
        start.ran = True

        def when_ready(worker: Worker, key: Any, stop: threading.Event) -> Any:
            worker.ready()  # a worker's start is not part of an attempt's time
            return attempt(worker, key, stop)

        killed, interrupted = threading.Event(), False
        try:
            interrupted = serve_all(workers, pending, when_ready, record,
                                    partial(_kill_all, workers), killed)  # fmt: skip
        finally:
            interrupted = self._close(workers, killed) or interrupted
        return interrupted

    def _close(self, workers: list[Worker], killed: threading.Event) -> bool:
        """Have every agent close(), or kill the workers once killed is set; True when
        Ctrl-C came while they closed."""
        interrupted = False
        for worker in workers:
            if not killed.is_set():
                worker.ask_to_close()
        for worker in workers:
            try:
                if killed.is_set():
                    worker.kill()
                else:
                    worker.close()
            except KeyboardInterrupt:  # Ctrl-C while agents close(): kill the rest
                killed.set()
                interrupted = True
                worker.kill()
            if worker.close_warning:
                self.warnings.append(worker.close_warning)
        return interrupted


class _FirstWorker:
    """The first worker, started in a thread of its own while the run gets ready, with
    the scratch folder and the starter it was started in."""

    def __init__(
        self,
        stack: contextlib.ExitStack,
        scratch: Path,
        starter: Zygote | SandboxedWorkers,
        first: Worker,
    ) -> None:
        self.stack, self.scratch, self.starter, self.first = stack, scratch, starter, first
        self.ran = False
        """Whether run() took it over (then run() ends it)."""
        self._error: BaseException | None = None
        self._done = threading.Event()
        threading.Thread(target=self._start, name="first-worker", daemon=True).start()

    def _start(self) -> None:
        try:
            self.first.start()
        except BaseException as exc:  # raised by wait(), in the caller's thread
            self._error = exc
        finally:
            self._done.set()

    def wait(self) -> None:
        """Wait for build(); raise what stopped it (AgentLoadError when it failed). On
        Ctrl-C, the worker is ended before KeyboardInterrupt goes on."""
        try:
            self._done.wait()
        except KeyboardInterrupt:
            self.cancel()
            raise
        if self._error is not None:
            raise self._error

    def cancel(self) -> None:
        """End the worker unless run() took it over, waiting for the thread: a kill
        before the worker's fork returned finds no process yet, so it is tried again."""
        if self.ran:
            return
        while not self._done.wait(0.05):
            self.first.kill()
        self.first.kill()


def start_workers(
    spec: str,
    options: dict[str, Any],
    slots: int,
    sandbox: Sandbox | None,
    scratch: Path,
    redact: Redactor | None = None,
) -> Zygote | SandboxedWorkers:
    """What starts the workers: the zygote that forks them, in a sandbox or not.

    With one slot, a worker imports only what its agent does, sandboxed or not (the
    zygote forks it before its imports): a preloaded worker is larger, so each copy it
    forks for an attempt costs more to make and to end."""
    seen = options if sandbox is None else inside_options(options, sandbox)
    preload = preload_for(spec, seen.get("base_url"))
    if sandbox is not None:
        return SandboxedWorkers(sandbox, preload, scratch, options.get("base_url"), redact, slots)
    return Zygote(preload, preload_first=slots > 1, redact=redact)


def make_worker(
    starter: Zygote | SandboxedWorkers,
    spec: str,
    options: dict[str, Any],
    memory_mb: int | None,
    isolation: Isolation,
    sandbox: Sandbox | None,
    folder: Path,
    slots: int,
    on_fallback: Callable[[str], None] | None = None,
) -> Worker:
    """One slot's worker; in a sandbox, it sees the options as they are inside, and the
    sandbox's limits on processes and file size apply to its attempts.

    Its copies are made ahead of their attempts while ``slots`` do not outnumber the
    cores, and with fewer slots than cores they also copy ahead the pages they will
    write. With more slots than cores a waiting copy would only wait for a core while
    holding memory (a fifth of a run's PSS at concurrency 32), so each is made when its
    attempt comes."""
    cores = usable_cores()
    ahead, copy_ahead = slots <= cores, slots < cores
    if sandbox is None:
        return Worker(starter, spec, options, memory_mb, isolation, on_fallback, folder,
                      ahead=ahead, copy_ahead=copy_ahead)  # fmt: skip
    limits = (user_tasks() + sandbox.processes, sandbox.file_mb, str(folder))
    inside = {**inside_options(options, sandbox), "log_dir": str(folder / SLOT_LOGS)}
    return Worker(starter, spec, inside, memory_mb, isolation, on_fallback, folder, limits,
                  ahead=ahead, copy_ahead=copy_ahead)  # fmt: skip


def serve_all(
    slots: Sequence[S],
    pending: Sequence[Any],
    attempt: Callable[[S, Any, threading.Event], Any],
    record: Callable[[int, Any], None],
    kill: Callable[[], None],
    killed: threading.Event,
) -> bool:
    """One dispatcher thread per slot, each taking the next pending attempt and
    recording it as it finishes; True when Ctrl-C cut the run short. The first Ctrl-C
    drains; a second sets ``killed`` and calls ``kill``. A dispatcher's failure stops
    the others and is raised here.

    No dispatcher takes an attempt until every one has started: a Ctrl-C while they
    start (Thread.start waits, so it can land there) then leaves nothing running, and
    goes on as KeyboardInterrupt instead of closing workers under a running attempt.
    """
    jobs, taking = enumerate(pending), threading.Lock()
    stop, go = threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def serve(slot: S, done: threading.Event) -> None:
        try:
            go.wait()
            while not stop.is_set():
                with taking:
                    job = next(jobs, None)
                if job is None:
                    return
                result = attempt(slot, job[1], stop)
                if killed.is_set():
                    return  # killed mid-attempt: not finished, so not recorded
                record(job[0], result)
        except BaseException as exc:  # surfaced in the calling thread below
            if not killed.is_set():  # a kill cuts start-ups short too: not a failure
                failures.append(exc)
            stop.set()
        finally:
            done.set()

    finished = [threading.Event() for _ in slots]
    try:
        for pair in zip(slots, finished, strict=True):
            threading.Thread(target=serve, args=pair, daemon=True).start()
        interrupted = _wait(finished, stop, killed, kill, go)
    except KeyboardInterrupt:  # before go: no attempt began, so there is nothing to drain
        stop.set()
        go.set()
        raise
    if failures:
        raise failures[0]
    return interrupted


def _wait(
    finished: list[threading.Event],
    stop: threading.Event,
    killed: threading.Event,
    kill: Callable[[], None],
    go: threading.Event,
) -> bool:
    """Let the dispatchers go, then wait for them; first Ctrl-C drains, second kills.

    Waits on events rather than Thread.join: a join cut short by KeyboardInterrupt can
    leave a live thread looking finished, and the workers would be closed under it. A
    Ctrl-C that lands inside Event.wait's lock handling surfaces as RuntimeError
    ("release unlocked lock") with the KeyboardInterrupt as its context: it is that Ctrl-C.
    """
    interrupted = False
    while not all(done.is_set() for done in finished):
        try:
            go.set()  # here, where a Ctrl-C is caught, rather than before the try
            for done in finished:
                done.wait(0.1)
        except (KeyboardInterrupt, RuntimeError) as exc:
            ctrl_c = isinstance(exc, KeyboardInterrupt) or isinstance(
                exc.__context__, KeyboardInterrupt
            )
            if not ctrl_c:
                raise
            if interrupted:
                killed.set()
                kill()
            interrupted = True
            stop.set()
    return interrupted


def _kill_all(workers: list[Worker]) -> None:
    for worker in workers:
        worker.kill()
