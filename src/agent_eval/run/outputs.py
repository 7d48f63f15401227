"""How a run hands on what it produced: files on a writer thread, and outputs in the run's
order whatever the completion order (the files themselves: agent_eval.results)."""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any


class BackgroundWriter:
    """Runs file writes on one thread, in the order given, so that creating a file on a
    slow disk (most of a millisecond) never holds up the next attempt.

    The queue is short: a disk slower than the attempts slows the run down instead of
    filling memory, and a crash of the harness itself (a power cut, SIGKILL) can catch
    no more than ``depth`` finished attempts unwritten, which a resume runs again. An
    error in a write is raised by the next submit() or by close().
    """

    def __init__(self, depth: int = 4) -> None:
        self._jobs: queue.Queue[Callable[[], None] | None] = queue.Queue(depth)
        self._error: BaseException | None = None
        self._finished = threading.Event()
        threading.Thread(target=self._drain, name="writer", daemon=True).start()

    def submit(self, job: Callable[[], None]) -> None:
        self._raise()
        self._jobs.put(job)

    def close(self) -> None:
        """Finish every job already submitted, then stop.

        A Ctrl-C here does not cut it short: what is queued are attempts that finished,
        at most a few milliseconds of writing, and they belong in the journal.
        """
        if not self._finished.is_set():
            self._jobs.put(None)
        while not self._finished.is_set():
            with contextlib.suppress(KeyboardInterrupt):
                self._finished.wait(0.1)
        self._raise()

    def _drain(self) -> None:
        try:
            while (job := self._jobs.get()) is not None:
                if self._error is None:
                    try:
                        job()
                    except BaseException as exc:  # handed to the submitting thread
                        self._error = exc
        finally:
            self._finished.set()

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error


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
