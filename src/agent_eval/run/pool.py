"""Dispatch attempts to worker processes side by side, and report them in order."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from agent_eval.run.worker import Worker
from agent_eval.run.zygote import Zygote

PRELOAD = ["agent_eval.run.worker", "agent_eval.tools", "agent_eval.models.client"]
"""Modules every worker needs, imported once in the zygote."""


def preload_for(spec: str) -> list[str]:
    """What the zygote imports: the harness's modules, and a shipped agent's own module.

    A user's agent module is never preloaded: its import might start threads, and a
    fork does not carry threads along.
    """
    if spec.startswith("builtin:"):
        from agent_eval.agents import BUILTIN_AGENTS

        target = BUILTIN_AGENTS.get(spec.removeprefix("builtin:"), "")
        return [*PRELOAD, target.partition(":")[0]] if target else PRELOAD
    return PRELOAD

Key = TypeVar("Key")
Row = TypeVar("Row")


class InOrder:
    """Calls ``emit`` for results in dispatch order, whatever order they finish in."""

    def __init__(self, emit: Callable[[Any], None] | None) -> None:
        self._emit = emit
        self._ready: dict[int, Any] = {}
        self._next = 0
        self._lock = threading.Lock()

    def put(self, index: int, row: Any) -> None:
        with self._lock:
            self._ready[index] = row
            while self._next in self._ready:
                row = self._ready.pop(self._next)
                self._next += 1
                if self._emit is not None:
                    self._emit(row)

    def flush(self) -> None:
        """After an interruption: emit what finished, skipping the gaps."""
        with self._lock:
            for index in sorted(self._ready):
                if self._emit is not None:
                    self._emit(self._ready[index])
            self._ready.clear()


class Dispatch:
    """N worker processes, one dispatcher thread each, sharing one queue of attempts."""

    def __init__(
        self, spec: str, options: dict[str, Any], concurrency: int, memory_mb: int | None
    ) -> None:
        self._spec, self._options, self._memory = spec, options, memory_mb
        self._concurrency = concurrency
        self.warnings: list[str] = []

    def run(
        self,
        pending: Sequence[Any],
        attempt: Callable[[Worker, Any, threading.Event], Any],
        record: Callable[[Any], None],
        on_attempt: Callable[[Any], None] | None,
    ) -> bool:
        """Run every pending attempt; return True when Ctrl-C cut the run short.

        build() failing in the first worker raises AgentLoadError before anything runs.
        """
        zygote = Zygote(preload_for(self._spec))
        try:
            return self._run(zygote, pending, attempt, record, on_attempt)
        finally:
            zygote.close()

    def _run(
        self,
        zygote: Zygote,
        pending: Sequence[Any],
        attempt: Callable[[Worker, Any, threading.Event], Any],
        record: Callable[[Any], None],
        on_attempt: Callable[[Any], None] | None,
    ) -> bool:
        workers = [
            Worker(zygote, self._spec, self._options, self._memory)
            for _ in range(max(1, min(self._concurrency, len(pending))))
        ]
        try:
            workers[0].start()
        except KeyboardInterrupt:
            workers[0].kill()
            return True
        jobs: queue.SimpleQueue[tuple[int, Any]] = queue.SimpleQueue()
        for job in enumerate(pending):
            jobs.put(job)
        stop, killed = threading.Event(), threading.Event()
        ordered = InOrder(on_attempt)
        failures: list[BaseException] = []

        finished = [threading.Event() for _ in workers]

        def serve(worker: Worker, done: threading.Event) -> None:
            try:
                while not stop.is_set():
                    try:
                        index, key = jobs.get_nowait()
                    except queue.Empty:
                        return
                    row = attempt(worker, key, stop)
                    if killed.is_set():
                        return  # killed mid-attempt: not finished, so not recorded
                    record(row)
                    ordered.put(index, row)
            except BaseException as exc:  # surfaced in the main thread below
                failures.append(exc)
                stop.set()
            finally:
                done.set()

        threads = [
            threading.Thread(target=serve, args=pair, daemon=True)
            for pair in zip(workers, finished, strict=True)
        ]
        for thread in threads:
            thread.start()
        interrupted = False
        try:
            interrupted = _wait(finished, stop, killed, workers)
        finally:
            for worker in workers:
                if killed.is_set():
                    worker.kill()
                else:
                    worker.close()
                if worker.close_warning:
                    self.warnings.append(worker.close_warning)
            ordered.flush()
        if failures:
            raise failures[0]
        return interrupted


def _wait(
    finished: list[threading.Event],
    stop: threading.Event,
    killed: threading.Event,
    workers: list[Worker],
) -> bool:
    """Wait for the dispatchers; first Ctrl-C drains, second Ctrl-C kills.

    Waits on events rather than Thread.join: a join cut short by KeyboardInterrupt can
    leave a live thread looking finished, and the workers would be closed under it.
    """
    interrupted = False
    while not all(done.is_set() for done in finished):
        try:
            for done in finished:
                done.wait(0.1)
        except KeyboardInterrupt:
            if interrupted:
                killed.set()
                for worker in workers:
                    worker.kill()
            interrupted = True
            stop.set()
    return interrupted
