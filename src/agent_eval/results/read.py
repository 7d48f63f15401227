"""Read a results file of any shape: schema 2, schema 1, or the course harness's.

``load_results`` loads a whole run for reports, every row validated and then kept as a
compact ``Attempt``: a pydantic model costs several kilobytes per row, and a 100,000-row
run (two of them for compare) must fit in a few hundred megabytes. ``read_head`` and
``iter_rows`` read the head and the full row records one at a time, for tools that
rewrite or replay a run.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from operator import attrgetter
from pathlib import Path
from typing import Annotated, Any, NamedTuple, get_origin

from pydantic import AfterValidator, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from agent_eval.errors import ResultsError
from agent_eval.records import RESULTS_SCHEMA, Checks
from agent_eval.results.legacy import KNOWN_SCHEMAS, upgrade_row, upgrade_run, upgrade_task
from agent_eval.results.records import AttemptResult, ResultsHead, RunHead

CHECK_FIELDS = tuple(Checks.model_fields)
"""Checks' fields, in the order ``Attempt.checks`` holds their values."""


class Attempt(NamedTuple):
    """One validated attempt row, compact: AttemptResult's fields under the same names,
    then its ``passed`` and ``failure``."""

    id: str
    """The task's id."""
    category: str
    """The task's category."""
    attempt: int
    """1-based attempt number within the task."""
    answer: str
    """The final answer."""
    steps: int
    """Steps reported by the agent."""
    tokens: int
    """Tokens reported by the agent."""
    prompt_tokens: int | None
    """Input tokens, when known."""
    completion_tokens: int | None
    """Output tokens, when known."""
    seconds: float
    """Wall time of the attempt measured by the harness."""
    stopped: str | None
    """Why the attempt stopped."""
    checks: tuple[Any, ...]
    """The validated Checks' values in CHECK_FIELDS order, lists as tuples;
    ``check_record`` rebuilds the Checks."""
    trajectory_file: str | None
    """The attempt's trajectory, relative to the results file's folder when possible."""
    failure_class: str | None
    """passed, wrong_answer, over_budget, agent_error or infra_error; None when unknown."""
    error: str | None
    """What went wrong, for agent_error, over_budget and infra_error."""
    roles: dict[str, int] | None
    """Tokens per role, when the agent reports them."""
    infra_retries: int
    """How many earlier tries of this attempt ended in infra_error and were retried."""
    changed_files: tuple[str, ...] | None
    """Workspace files the attempt touched."""
    passed: bool
    """The verdict."""
    failure: str | None
    """Why it failed, None when it passed; taken while the full record is at hand, so
    reports never rebuild it."""

    def check_record(self) -> Checks:
        """The attempt's Checks, rebuilt without validating again (it was validated)."""
        values = (list(v) if isinstance(v, tuple) else v for v in self.checks)
        fields: dict[str, Any] = dict(zip(CHECK_FIELDS, values, strict=True))
        return Checks.model_construct(**fields)


if Attempt._fields[:-2] != tuple(AttemptResult.model_fields):
    # compact() copies AttemptResult's fields by position, and a field left out here
    # would silently vanish from every report.
    raise RuntimeError(
        "results.read.Attempt must list AttemptResult's fields, in order, "
        "then 'passed' and 'failure'"
    )


_CHECKS_AT = Attempt._fields.index("checks")
_CHANGED_AT = Attempt._fields.index("changed_files")
_LIST_CHECKS = [
    index
    for index, field in enumerate(Checks.model_fields.values())
    if get_origin(field.annotation) is list
]


_shared: dict[tuple[Any, ...], tuple[Any, ...]] = {}
"""Equal tuples of check values, one object each while a file loads (emptied after)."""


def _share(value: tuple[Any, ...]) -> tuple[Any, ...]:
    """One object for equal tuples: rows repeat a few combinations of checks, tools and
    files, and every tuple kept is memory, and work for the cycle collector until its
    first pass over it."""
    return _shared.setdefault(value, value)


def compact(row: AttemptResult) -> Attempt:
    """The validated row as an Attempt.

    A validated model's ``__dict__`` holds its fields in declaration order, so values are
    copied by position. Lists become tuples, so that an Attempt holds no mutable
    container and the cycle collector stops tracking it: otherwise each collection while
    a report renders walks all 100,000 rows again.
    """
    checks = [*row.checks.__dict__.values()]
    for index in _LIST_CHECKS:
        checks[index] = _share(tuple(checks[index]))
    values = [*row.__dict__.values()]
    values[_CHECKS_AT] = _share(tuple(checks))
    if row.changed_files is not None:
        values[_CHANGED_AT] = _share(tuple(row.changed_files))
    passed = row.checks.passed
    values.append(passed)
    values.append(None if passed else row.failure)
    # Attempt._make without its length check, which the guard above makes redundant.
    return tuple.__new__(Attempt, values)


_ATTEMPT = attrgetter("attempt")


@dataclass(frozen=True)
class TaskOutcome:
    """Every attempt at one task, in attempt order."""

    task_id: str
    """The task's id."""
    category: str
    """The task's category (from its first attempt)."""
    rows: tuple[Attempt, ...]
    """The attempts, sorted by attempt number."""

    @property
    def attempts(self) -> int:
        """How many attempts the task had."""
        return len(self.rows)

    @cached_property
    def passes(self) -> int:
        """How many attempts passed."""
        return [row.passed for row in self.rows].count(True)

    @property
    def rate(self) -> float:
        """The task's pass rate m_i."""
        return self.passes / self.attempts if self.rows else 0.0


@dataclass(frozen=True)
class RunResults:
    """One results file: the run's head, its attempt rows, and where it lives."""

    path: Path
    """The file it was read from; trajectory paths are relative to its folder."""
    run: RunHead
    """The ``run`` object, validated (older shapes brought to the current one)."""
    rows: tuple[Attempt, ...]
    """Every attempt, validated."""
    schema: int | None = RESULTS_SCHEMA
    """The shape the file was written in: 2, 1, or None for the course harness's."""

    @cached_property
    def tasks(self) -> tuple[TaskOutcome, ...]:
        """Attempts grouped by task id, tasks in first-seen order (worked out once: every
        format reads them, some more than once)."""
        grouped: dict[str, list[Attempt]] = {}
        for row in self.rows:
            grouped.setdefault(row.id, []).append(row)
        return tuple(
            TaskOutcome(task_id, rows[0].category, tuple(sorted(rows, key=_ATTEMPT)))
            for task_id, rows in grouped.items()
        )

    @property
    def prices(self) -> dict[str, float | None]:
        """The prices the user gave, or an empty mapping when none were."""
        return dict(self.run.prices or {})

    @property
    def label(self) -> str:
        """A short name for the run: scaffold x model, with the quantisation if any."""
        return self.run.label

    def trajectory_text(self, row: Attempt | AttemptResult, limit: int = 20_000) -> str | None:
        """The attempt's trajectory file, cut to ``limit`` characters; None if unreadable."""
        if not row.trajectory_file:
            return None
        candidate = Path(row.trajectory_file)
        if not candidate.is_absolute():
            candidate = self.path.parent / candidate
        try:
            text = candidate.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        return text if len(text) <= limit else text[:limit] + "\n[... truncated]"


class _Document(TypedDict):
    """The parts of a schema-2 results file a report reads; per_task is skipped."""

    schema: Any
    run: RunHead
    results: list[Annotated[AttemptResult, AfterValidator(compact)]]


_DOCUMENT = TypeAdapter(_Document)
_ROWS = TypeAdapter(list[Annotated[AttemptResult, AfterValidator(compact)]])
_OPEN, _NEXT, _CLOSE = b'\n  "results": [\n    ', b",\n    ", b"\n  ]\n}\n"
"""How the writer lays out rows: the head indented, then one compact row per line."""
_BATCH = 2_000_000
"""Bytes of rows parsed at once; pydantic holds a parse tree of about twice the
text it reads."""


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cycle collector: loading makes only acyclic objects, and with it running,
    each of its passes re-walks every row loaded so far, which more than doubles the time.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def load_results(path: str | Path) -> RunResults:
    """Read and validate a results file of any shape; ResultsError naming the file and
    the fix when it cannot be read."""
    path = Path(path)
    with _gc_paused():
        try:
            # Bytes: pydantic parses UTF-8 itself, and decoding first costs a copy.
            data = path.read_bytes()
        except OSError:
            data = None
        try:
            loaded = None if data is None else _load_by_line(path, data) or _load_whole(path, data)
            del data  # a hundred megabytes for a large run: not to be held while reporting
            if loaded is not None:
                return loaded
            schema, head, raw_rows = _read_checked(path)
            rows = tuple(compact(row) for row in _validated_rows(path, raw_rows, schema))
            return RunResults(path, head.run, rows, schema)
        finally:
            _shared.clear()


def read_head(path: str | Path) -> ResultsHead:
    """The head of a results file of any shape (schema, run, per-task view), validated;
    a file in the writer's layout is read only up to its rows."""
    path = Path(path)
    head = _head_of_layout(path)
    return head if head is not None else _read_checked(path)[1]


def iter_rows(path: str | Path) -> Iterator[AttemptResult]:
    """Every attempt row of a results file of any shape, one validated record at a time.

    A file in the writer's layout is read a line at a time, so memory stays flat however
    long the run; any other file is parsed whole first.
    """
    path = Path(path)
    if _head_of_layout(path) is not None:
        yield from _layout_rows(path)
        return
    schema, _, raw_rows = _read_checked(path)
    yield from _validated_rows(path, raw_rows, schema)


def _head_of_layout(path: Path) -> ResultsHead | None:
    """The head of a schema-2 file in the writer's layout, or None for any other file."""
    try:
        with path.open("rb") as handle:
            text = b"".join(_lines_until_rows(handle))
    except OSError:
        return None
    if not text.endswith(b'"results": ['):
        return None
    try:
        head = ResultsHead.model_validate_json(text + b"]}")
    except ValidationError:
        return None
    return head if head.schema_version == RESULTS_SCHEMA else None


def _lines_until_rows(handle: Any) -> Iterator[bytes]:
    for line in handle:
        yield line.rstrip(b"\n")
        if line.startswith(b'  "results": ['):
            return
        yield b"\n"


def _layout_rows(path: Path) -> Iterator[AttemptResult]:
    with path.open("rb") as handle:
        for line in handle:
            if line.startswith(b'  "results": ['):
                break
        for number, line in enumerate(handle):
            text = line.strip().removesuffix(b",")
            if text in (b"]", b"}", b"]}", b""):
                continue
            try:
                yield AttemptResult.model_validate_json(text)
            except ValidationError as exc:
                raise _row_error(path, number, exc) from None


def _load_by_line(path: Path, data: bytes) -> RunResults | None:
    """A file in the writer's layout, its rows validated a batch at a time so that the
    parse never holds the whole file's tree; None when the layout differs or anything
    is invalid.

    Splitting at the row separators is safe: a JSON string holds no raw newline, so a
    separator inside a row would leave both pieces unbalanced, and they would fail. For
    the same reason the first ``_OPEN`` is the top-level "results" key: a second one, or
    anything after the rows, fails as a row.
    """
    start = data.find(_OPEN)
    if start < 0 or not data.endswith(_CLOSE):
        return None
    head = _load_whole(path, data[:start] + b'\n  "results": []\n}\n')
    if head is None or head.rows:
        return None
    rows: list[Attempt] = []
    position, end = start + len(_OPEN), len(data) - len(_CLOSE)
    while position < end:
        found = data.find(_NEXT, position + _BATCH, end)
        stop = end if found < 0 else found
        batch = b"[" + data[position:stop] + b"]"  # the separators are valid JSON as they are
        try:
            # The validator hands back Attempts in place of the records it validated.
            rows += _ROWS.validate_json(batch)  # type: ignore[arg-type]
        except ValidationError:
            return None
        position = stop + len(_NEXT)
    return RunResults(path, head.run, tuple(rows))


def _load_whole(path: Path, data: bytes) -> RunResults | None:
    """A valid schema-2 file parsed and validated in one pass inside pydantic; None on
    any problem or another shape, so that ``_read_checked`` reads it and names it."""
    try:
        document = _DOCUMENT.validate_json(data)
    except ValidationError:
        return None
    if document["schema"] != RESULTS_SCHEMA:
        return None
    # The validator hands back Attempts in place of the records it validated.
    rows: list[Attempt] = document["results"]  # type: ignore[assignment]
    return RunResults(path, document["run"], tuple(rows))


def _read_checked(path: Path) -> tuple[int | None, ResultsHead, list[Any]]:
    """Read a results file step by step: its schema, its head in the current shape and
    its raw rows, raising the first problem with its fix."""
    where = f"results file {path}"
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultsError(
            f"{where}: not found (give the --out file of 'agent-eval run')"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{where}: cannot be read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise ResultsError(
            f"{where}: not valid JSON at line {exc.lineno} column {exc.colno} "
            "(the file is damaged or truncated; re-run or restore it)"
        ) from None
    if not isinstance(document, dict) or "run" not in document:
        raise ResultsError(f"{where}: expected a JSON object with 'run' and 'results'")
    if not isinstance(document["run"], dict):
        raise ResultsError(f"{where}: 'run' must be an object")
    schema = document.get("schema")
    if schema not in KNOWN_SCHEMAS or isinstance(schema, bool):
        raise ResultsError(
            f"{where}: schema {schema!r} is newer than this agent-eval reads "
            f"({', '.join(str(s) for s in KNOWN_SCHEMAS if s)} and the course harness's); "
            "upgrade agent-eval to read it"
        )
    raw_rows = document.get("results")
    if not isinstance(raw_rows, list):
        raise ResultsError(f"{where}: 'results' must be a list of attempt rows")
    raw_tasks = document.get("per_task") or []
    raw_head = {
        "schema": schema,
        "run": upgrade_run(document["run"]),
        "per_task": [upgrade_task(t, schema) for t in raw_tasks]
        if isinstance(raw_tasks, list)
        else raw_tasks,
    }
    try:
        head = ResultsHead.model_validate(raw_head)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise ResultsError(
            f"{where}: {field}: {first['msg']} (the file is not a results file written by "
            "'agent-eval run' or the course harness)"
        ) from None
    return schema, head, raw_rows


def _validated_rows(path: Path, raw_rows: list[Any], schema: int | None) -> Iterator[AttemptResult]:
    for index, raw in enumerate(raw_rows):
        try:
            yield AttemptResult.model_validate(upgrade_row(raw, schema))
        except ValidationError as exc:
            raise _row_error(path, index, exc) from None


def _row_error(path: Path, index: int, exc: ValidationError) -> ResultsError:
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or "(row)"
    return ResultsError(
        f"results file {path}: results[{index}].{field}: {first['msg']} (fix or remove that row)"
    )
