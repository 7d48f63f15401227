"""The journal: every finished attempt, appended and flushed the moment it ends.

It is what makes a run resumable after Ctrl-C, a crash or a power cut: its first line
identifies the run, each further line is one scored attempt, and a torn last line (the
crash came mid-write) is ignored on reading.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agent_eval.errors import ResultsError
from agent_eval.records import AttemptResult

JOURNAL_SUFFIX = ".journal.jsonl"


def journal_path_for(out: Path) -> Path:
    """The journal that sits next to a results file."""
    return out.with_name(out.name + JOURNAL_SUFFIX)


class Journal:
    """Appends rows from any thread; remembers where each row is, not the row itself."""

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._offsets: dict[tuple[str, int], int] = {}
        fresh = not path.exists() or path.stat().st_size == 0
        self._handle = path.open("a+b")
        if fresh:
            self._write({"journal": header})
        else:
            self._offsets, end = _scan(path)
            self._handle.truncate(end)  # a torn last line would glue onto the next row

    def append(self, row: AttemptResult, text: str) -> None:
        """Record one finished attempt; ``text`` is its redacted JSON."""
        with self._lock:
            offset = self._write_text(text)
            self._offsets[(row.task_id, row.attempt)] = offset

    def done(self) -> set[tuple[str, int]]:
        """(task id, attempt) of every attempt already journaled."""
        return set(self._offsets)

    def rows(self, order: list[tuple[str, int]]) -> Iterator[AttemptResult]:
        """Journaled rows in ``order``, read back one at a time."""
        for line in self.lines(order):
            yield AttemptResult.model_validate_json(line)

    def lines(self, order: list[tuple[str, int]]) -> Iterator[bytes]:
        """The journaled JSON of each row in ``order``, as written (already redacted)."""
        with self._lock:
            self._handle.flush()
        with self.path.open("rb") as reader:
            for key in order:
                offset = self._offsets.get(key)
                if offset is None:
                    continue
                reader.seek(offset)
                yield reader.readline().rstrip(b"\n")

    def close(self) -> None:
        self._handle.close()

    def _write(self, record: dict[str, Any]) -> int:
        return self._write_text(json.dumps(record, ensure_ascii=False))

    def _write_text(self, text: str) -> int:
        self._handle.seek(0, 2)
        offset = self._handle.tell()
        self._handle.write(text.encode("utf-8") + b"\n")
        self._handle.flush()
        return offset


def read_header(path: Path) -> dict[str, Any]:
    """The run identity a journal was started with."""
    try:
        with path.open("rb") as handle:
            first = json.loads(handle.readline())
        header = first["journal"]
    except (OSError, ValueError, KeyError, TypeError):
        raise ResultsError(f"journal {path}: unreadable first line; it is not a journal") from None
    if not isinstance(header, dict):
        raise ResultsError(f"journal {path}: malformed header")
    return header


def _scan(path: Path) -> tuple[dict[tuple[str, int], int], int]:
    """Offsets of complete rows by (task id, attempt), and where the complete lines end."""
    offsets: dict[tuple[str, int], int] = {}
    with path.open("rb") as handle:
        handle.readline()
        while True:
            offset = handle.tell()
            line = handle.readline()
            if not line or not line.endswith(b"\n"):
                return offsets, offset
            try:
                row = AttemptResult.model_validate_json(line)
            except ValidationError:
                continue
            offsets[(row.task_id, row.attempt)] = offset
