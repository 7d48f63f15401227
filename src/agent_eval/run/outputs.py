"""Everything a run writes: results atomically, labbook lines concurrent runs cannot tear,
files on a writer thread, and outputs in task order whatever the completion order."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import queue
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO


@contextmanager
def atomic_file(path: Path) -> Iterator[BinaryIO]:
    """Write to a temporary file in the same folder, flush, then rename over ``path``.

    A crash leaves either the old file or the new one, never half of one.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(
    path: Path, document: dict[str, Any], redact: Callable[[str], str] | None = None
) -> None:
    """Write a JSON document atomically, redacted when ``redact`` is given."""
    text = json.dumps(document, indent=2, ensure_ascii=False)
    with atomic_file(path) as handle:
        handle.write((redact(text) if redact else text).encode("utf-8") + b"\n")


def write_results(
    path: Path, head: dict[str, Any], rows: Iterable[bytes], redact: Callable[[str], str]
) -> int:
    """Write a results file piece by piece, atomically; return the number of rows.

    The layout is json.dumps(indent=2)'s, but no piece is bigger than one per-task entry
    or one row: ``rows`` are JSON already redacted (the journal's lines), and the head is
    encoded entry by entry, so a run of any length is written in constant memory.
    """
    count = 0
    with atomic_file(path) as handle:
        separator = "{\n  "
        for key, value in head.items():
            handle.write(f"{separator}{json.dumps(key)}: ".encode())
            for piece in _pieces(value, depth=1):
                handle.write(redact(piece).encode("utf-8"))
            separator = ",\n  "
        handle.write(f'{separator}"results": ['.encode())
        for row in rows:
            handle.write(b",\n    " if count else b"\n    ")
            handle.write(row)
            count += 1
        handle.write(b"\n  ]\n}\n" if count else b"]\n}\n")
    return count


def _pieces(value: Any, depth: int) -> Iterator[str]:
    """``value`` as json.dumps(indent=2) writes it ``depth`` levels deep, a list item by
    item. Shifting a nested dump's lines is exact: JSON text has no raw newline inside
    a string."""
    if isinstance(value, list) and value:
        inner = "\n" + "  " * (depth + 1)
        yield "["
        for n, item in enumerate(value):
            text = json.dumps(item, indent=2, ensure_ascii=False).replace("\n", inner)
            yield ("," if n else "") + inner + text
        yield "\n" + "  " * depth + "]"
    else:
        yield json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + "  " * depth)


def append_labbook(
    path: Path, run: dict[str, Any], redact: Callable[[str], str] | None = None
) -> None:
    """Append one JSON line under an exclusive lock, in a single write."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(run, ensure_ascii=False, separators=(",", ":"))
    if redact is not None:
        line = redact(line)
    with path.open("a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            handle.write(line + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


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
