"""Write results files atomically and piece by piece, and labbook lines that concurrent
runs cannot tear."""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel

from agent_eval.results.schema import AttemptResult, ResultsHead, RunHead

Redact = Callable[[str], str]
"""Takes secrets out of text before it reaches a file."""


def _unchanged(text: str) -> str:
    return text


def _current_umask() -> int:
    """The process's umask; read once, at import, before any writer thread starts (reading
    it means setting it, which would race with files other threads create)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


UMASK = _current_umask()


@contextmanager
def atomic_file(path: Path) -> Iterator[BinaryIO]:
    """Write to a temporary file in the same folder, flush, then rename over ``path``.

    A crash leaves either the old file or the new one, never half of one.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~UMASK)  # mkstemp's 0600 would hide results from the group
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def row_json(row: AttemptResult) -> str:
    """One attempt row as the results file and the journal hold it: compact JSON, the
    course harness's keys first."""
    return row.model_dump_json()


def _dumped(record: BaseModel) -> dict[str, Any]:
    """A record as JSON-ready data; a figure that was never computed (a stdev of one
    attempt) is left out, as the course leaves it out."""
    return record.model_dump(mode="json", by_alias=True, exclude_unset=True)


def write_results(
    path: Path,
    head: ResultsHead,
    rows: Iterable[bytes | AttemptResult],
    redact: Redact = _unchanged,
) -> int:
    """Write a results file piece by piece, atomically; return the number of rows.

    The layout is json.dumps(indent=2)'s, but no piece is bigger than one per-task entry
    or one row: ``rows`` are records, or JSON already redacted (the journal's lines), and
    the head is encoded entry by entry, so a run of any length is written in constant
    memory.
    """
    count = 0
    # per_task is dumped an entry at a time: at 500 repeats its pass^k alone is megabytes.
    document = {"schema": head.schema_version, "run": _dumped(head.run), "per_task": head.per_task}
    with atomic_file(path) as handle:
        separator = "{\n  "
        for key, value in document.items():
            handle.write(f"{separator}{json.dumps(key)}: ".encode())
            for piece in _pieces(value, depth=1):
                handle.write(redact(piece).encode("utf-8"))
            separator = ",\n  "
        handle.write(f'{separator}"results": ['.encode())
        for row in rows:
            handle.write(b",\n    " if count else b"\n    ")
            if isinstance(row, AttemptResult):
                handle.write(redact(row_json(row)).encode("utf-8"))
            else:
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
            data = _dumped(item) if isinstance(item, BaseModel) else item
            text = json.dumps(data, indent=2, ensure_ascii=False).replace("\n", inner)
            yield ("," if n else "") + inner + text
        yield "\n" + "  " * depth + "]"
    else:
        yield json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + "  " * depth)


def append_labbook(path: Path, run: RunHead, redact: Redact = _unchanged) -> None:
    """Append the run as one JSON line under an exclusive lock, in a single write."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = redact(json.dumps(_dumped(run), ensure_ascii=False, separators=(",", ":")))
    with path.open("a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            handle.write(line + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
