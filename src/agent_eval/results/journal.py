"""The journal: every finished attempt, appended and flushed the moment it ends.

It is what makes a run resumable after Ctrl-C, a crash or a power cut: its first line
identifies the run, each further line is one scored attempt, and a torn last line (the
crash came mid-write) is ignored on reading. A journal of an older schema is brought to
the current one when it is opened, so that a run interrupted before an upgrade resumes.
"""

from __future__ import annotations

import hashlib
import json
import threading
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agent_eval.errors import ResultsError
from agent_eval.records import RESULTS_SCHEMA
from agent_eval.results.legacy import upgrade_row
from agent_eval.results.read import iter_rows, read_head
from agent_eval.results.schema import AttemptResult
from agent_eval.results.write import atomic_file, row_json

JOURNAL_SUFFIX = ".journal.jsonl"

Key = tuple[str, int]
"""(task id, attempt number)"""


def journal_path_for(out: Path) -> Path:
    """The journal that sits next to a results file."""
    return out.with_name(out.name + JOURNAL_SUFFIX)


@dataclass(frozen=True)
class Order:
    """Every attempt of a run, attempt-major as the course writes rows (every task of
    attempt 1, then of attempt 2): the order of every output, without a list. Position p
    is attempt ``p // tasks + 1`` of task ``p % tasks``."""

    task_ids: tuple[str, ...]
    repeats: int
    _positions: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        positions = {task_id: n for n, task_id in enumerate(self.task_ids)}
        object.__setattr__(self, "_positions", positions)

    def __len__(self) -> int:
        return len(self.task_ids) * self.repeats

    def __iter__(self) -> Iterator[Key]:
        return (self.key(position) for position in range(len(self)))

    def key(self, position: int) -> Key:
        attempt, task = divmod(position, len(self.task_ids))
        return self.task_ids[task], attempt + 1

    def position(self, key: Key) -> int | None:
        """Where ``key`` is in the order, or None when it is not part of this run."""
        task = self._positions.get(key[0])
        if task is None or not 1 <= key[1] <= self.repeats:
            return None
        return (key[1] - 1) * len(self.task_ids) + task


class Journal:
    """Appends rows from any thread; remembers where each row is, not the row itself.

    The index is one 8-byte offset per attempt of the run, allocated up front, so the
    memory a run holds does not grow with the attempts it has written. Beside each offset
    is an 8-byte digest of the line as written: a row read back that does not match what
    this process wrote (or found at the start) is refused, so no verdict is ever taken
    from a journal something else rewrote during the run.
    """

    def __init__(self, path: Path, header: dict[str, Any], order: Order) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.order = order
        self._lock = threading.Lock()
        self._offsets = array("q", [-1]) * len(order)
        self.damaged: list[str] = []
        """One warning per complete line that is not an attempt row: its attempt runs again."""
        self._digests = array("q", [0]) * len(order)
        fresh = not path.exists() or path.stat().st_size == 0
        if not fresh:
            _upgrade(path)
        self._handle = path.open("a+b")
        if fresh:
            header = {"schema": RESULTS_SCHEMA, **header}
            self._write_text(json.dumps({"journal": header}, ensure_ascii=False))
        else:
            end = self._scan()
            self._handle.truncate(end)  # a torn last line would glue onto the next row

    def append(self, row: AttemptResult, text: str) -> None:
        """Record one finished attempt; ``text`` is its redacted JSON."""
        with self._lock:
            offset = self._write_text(text)
            self._remember((row.id, row.attempt), offset, text.encode("utf-8"))

    def __len__(self) -> int:
        """How many attempts of this run are journaled."""
        return len(self._offsets) - self._offsets.count(-1)

    def __contains__(self, key: Key) -> bool:
        position = self.order.position(key)
        return position is not None and self._offsets[position] >= 0

    def rows(self, keys: Iterable[Key] | None = None) -> Iterator[AttemptResult]:
        """Journaled rows of ``keys`` (default: the whole run, in order), one at a time."""
        for line in self.lines(keys):
            yield AttemptResult.model_validate_json(line)

    def lines(self, keys: Iterable[Key] | None = None) -> Iterator[bytes]:
        """The journaled JSON of each row, as written (already redacted)."""
        with self._lock:
            self._handle.flush()
        if keys is None:
            positions: Iterable[int | None] = range(len(self._offsets))
        else:
            positions = (self.order.position(key) for key in keys)
        with self.path.open("rb") as reader:
            for position in positions:
                if position is None or self._offsets[position] < 0:
                    continue
                reader.seek(self._offsets[position])
                line = reader.readline().rstrip(b"\n")
                if _digest(line) != self._digests[position]:
                    raise ResultsError(
                        f"journal {self.path}: the row of {self.order.key(position)} is not "
                        f"what the harness wrote; something else changed the file during "
                        f"the run, so its verdicts are not reported"
                    )
                yield line

    def close(self) -> None:
        self._handle.close()

    def _remember(self, key: Key, offset: int, line: bytes) -> None:
        position = self.order.position(key)
        if position is not None:  # a row of another selection of tasks: not this run's
            self._offsets[position] = offset
            self._digests[position] = _digest(line.rstrip(b"\n"))

    def _write_text(self, text: str) -> int:
        self._handle.seek(0, 2)
        offset = self._handle.tell()
        self._handle.write(text.encode("utf-8") + b"\n")
        self._handle.flush()
        return offset

    def _scan(self) -> int:
        """Index the complete rows already there; return where the complete lines end."""
        with self.path.open("rb") as handle:
            handle.readline()
            number = 1  # the header's
            while True:
                number += 1
                offset = handle.tell()
                line = handle.readline()
                if not line or not line.endswith(b"\n"):
                    return offset
                try:
                    row = AttemptResult.model_validate_json(line)
                except ValidationError:
                    self.damaged.append(
                        f"journal {self.path}, line {number}: damaged, not an attempt row; "
                        f"the attempt it held is run again"
                    )
                    continue
                self._remember((row.id, row.attempt), offset, line)


def _digest(line: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(line, digest_size=8).digest(), "little", signed=True)


def read_journal(
    path: Path, skipped: list[str] | None = None
) -> tuple[dict[str, Any], list[AttemptResult]]:
    """A journal's header and its rows, for a reader watching a run (it may still be
    appending): one row per attempt in first-journaled order, a later row of the same
    attempt (a retry after an infra error) replacing the earlier one. A torn last line
    and a line that is not a row are skipped, each with a note in ``skipped`` when it is
    given; rows of an older schema are upgraded.
    """
    header = read_header(path)
    schema = header.get("schema", 1)
    rows: dict[Key, AttemptResult] = {}
    notes = [] if skipped is None else skipped
    with path.open("rb") as handle:
        handle.readline()
        for number, line in enumerate(handle, start=2):
            if not line.endswith(b"\n"):
                notes.append(f"line {number}: half-written (the run is still writing it)")
                break  # being written, or torn by a crash
            try:
                raw = json.loads(line)
                row = AttemptResult.model_validate(upgrade_row(raw, schema))
            except ValueError:  # not JSON, or not a row
                notes.append(f"line {number}: not an attempt row; skipped")
                continue
            rows[(row.id, row.attempt)] = row
    return header, list(rows.values())


def finished_run_header(results: Path) -> dict[str, Any]:
    """The journal header a finished run was started with, from its results file, for
    adding repeats to it; its wall time so far rides along.

    A course-harness file records no suite hash and no start: its header carries the
    suite's name and version instead (``suite``), for the caller to hold against the
    suite, and the start its run id stamps (local time). ResultsError when the file does
    not say which run it is.
    """
    head = read_head(results)
    run = head.run
    started = run.started_at
    course = head.schema_version is None and run.suite_hash is None
    if course and started is None:
        started = _course_start(run.run_id)
    if not (run.run_id and started and (run.suite_hash or course)):
        raise ResultsError(
            f"--resume {results}: the file names no run id, start or suite hash, so no "
            f"repeats can be added to it; start a new run instead"
        )
    return {
        "run_id": run.run_id,
        "started": started,
        "suite_hash": run.suite_hash,
        **({"suite": [run.task_set, run.task_set_version]} if course else {}),
        "agent": run.agent_entry_point,
        "model": run.model,
        "repeats": run.repeats,
        "wall_seconds": run.wall_seconds or 0.0,
        **({"lab": run.lab} if run.lab is not None else {}),
        **({"isolation": run.isolation} if run.isolation else {}),
        **({"record": True} if run.recorded else {}),
    }


def _course_start(run_id: str) -> str | None:
    """The start a course run id stamps (``%Y%m%d-%H%M%S``, local time), or None."""
    try:
        return datetime.strptime(run_id, "%Y%m%d-%H%M%S").astimezone().isoformat()
    except ValueError:
        return None


def reopen_journal(results: Path, header: dict[str, Any]) -> Path:
    """Write the journal of a finished run again, its header then every row of its results
    file, so that the run continues as if it had been interrupted; atomically."""
    path = journal_path_for(results)
    with atomic_file(path) as new:
        first = {"journal": {"schema": RESULTS_SCHEMA, **header}}
        new.write(json.dumps(first, ensure_ascii=False).encode("utf-8") + b"\n")
        for row in iter_rows(results):
            new.write(row_json(row).encode("utf-8") + b"\n")
    return path


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


def _upgrade(path: Path) -> None:
    """Rewrite a journal of an older schema in the current one, atomically; rows that do
    not validate even so are dropped (their attempts run again)."""
    if read_header(path).get("schema", 1) == RESULTS_SCHEMA:
        return
    header, rows = read_journal(path)
    with atomic_file(path) as new:
        header["schema"] = RESULTS_SCHEMA
        new.write(json.dumps({"journal": header}, ensure_ascii=False).encode() + b"\n")
        for row in rows:
            new.write(row_json(row).encode("utf-8") + b"\n")
