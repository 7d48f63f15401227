"""Write results atomically and append labbook lines that concurrent runs cannot tear."""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
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
    """Write a results file row by row, atomically; return the number of rows.

    ``rows`` are JSON already redacted (the journal's lines), so a run of any length is
    written without ever holding all its rows in memory.
    """
    text = json.dumps({**head, "results": []}, indent=2, ensure_ascii=False)
    opening, closing = redact(text).rsplit("[]", 1)
    count = 0
    with atomic_file(path) as handle:
        handle.write(opening.encode("utf-8") + b"[")
        for row in rows:
            handle.write(b",\n    " if count else b"\n    ")
            handle.write(row)
            count += 1
        handle.write((b"\n  ]" if count else b"]") + closing.encode("utf-8") + b"\n")
    return count


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
