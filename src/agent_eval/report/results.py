"""Load a results file and regroup its attempt rows by task, for every report.

Reports are built from the file alone, so last year's results can be re-reported
offline. Per-task figures are recomputed from the attempt rows: the stored per-task
view is a convenience for people, not an input to statistics.

Every row is validated as an AttemptResult, then kept as a compact ``Attempt``: a
pydantic model costs several kilobytes per row, and a 100,000-row run (two of them for
compare) must fit in a few hundred megabytes.
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
from agent_eval.records import RESULTS_SCHEMA, AttemptResult, Checks
from agent_eval.score.summary import describe_failure

REQUIRED_RUN_KEYS: dict[str, type | tuple[type, ...]] = {
    "run_id": str,
    "scaffold": str,
    "model": str,
    "task_set": str,
    "task_set_version": str,
    "suite_hash": str,
    "repeats": int,
}
"""Keys of the ``run`` object that reports rely on, with their types."""

CHECK_FIELDS = tuple(Checks.model_fields)
"""Checks' fields, in the order ``Attempt.checks`` holds their values."""


class Attempt(NamedTuple):
    """One validated attempt row, compact: AttemptResult's fields under the same names."""

    task_id: str
    """The task's id."""
    category: str
    """The task's category."""
    attempt: int
    """1-based attempt number within the task."""
    passed: bool
    """The verdict."""
    failure_class: str
    """passed, wrong_answer, over_budget, agent_error or infra_error."""
    answer: str
    """The final answer, possibly truncated for size."""
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
    stopped: str
    """Why the attempt stopped."""
    error: str | None
    """What went wrong, for agent_error, over_budget and infra_error."""
    checks: tuple[Any, ...]
    """The validated Checks' values in CHECK_FIELDS order, lists as tuples;
    ``check_record`` rebuilds the Checks."""
    roles: dict[str, int] | None
    """Tokens per role, when the agent reports them."""
    infra_retries: int
    """How many earlier tries of this attempt ended in infra_error and were retried."""
    changed_files: tuple[str, ...] | None
    """Workspace files the attempt touched."""
    trajectory_file: str | None
    """The attempt's trajectory, relative to the results file's folder when possible."""
    failure: str | None
    """describe_failure of the row when it failed, None when it passed; taken while the
    full record is at hand, so reports never rebuild it."""

    def check_record(self) -> Checks:
        """The attempt's Checks, rebuilt without validating again (it was validated)."""
        values = (list(v) if isinstance(v, tuple) else v for v in self.checks)
        fields: dict[str, Any] = dict(zip(CHECK_FIELDS, values, strict=True))
        return Checks.model_construct(**fields)


if Attempt._fields[:-1] != tuple(AttemptResult.model_fields):
    # compact() copies AttemptResult's fields by position, and a field left out here
    # would silently vanish from every report.
    raise RuntimeError(
        "report.results.Attempt must list AttemptResult's fields, in order, then 'failure'"
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
    values.append(None if row.passed else describe_failure(row))
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
    """One results file: the run's metadata, its attempt rows, and where it lives."""

    path: Path
    """The file it was read from; trajectory paths are relative to its folder."""
    run: dict[str, Any]
    """The ``run`` object as written, including fields reports do not interpret."""
    rows: tuple[Attempt, ...]
    """Every attempt, validated."""

    @cached_property
    def tasks(self) -> tuple[TaskOutcome, ...]:
        """Attempts grouped by task id, tasks in first-seen order (worked out once: every
        format reads them, some more than once)."""
        grouped: dict[str, list[Attempt]] = {}
        for row in self.rows:
            grouped.setdefault(row.task_id, []).append(row)
        return tuple(
            TaskOutcome(task_id, rows[0].category, tuple(sorted(rows, key=_ATTEMPT)))
            for task_id, rows in grouped.items()
        )

    @property
    def prices(self) -> dict[str, float | None]:
        """The prices the user gave, or an empty mapping when none were."""
        prices = self.run.get("prices")
        return dict(prices) if isinstance(prices, dict) else {}

    @property
    def label(self) -> str:
        """A short name for the run: scaffold x model, with the quantisation if any."""
        quant = self.run.get("quant")
        base = f"{self.run['scaffold']} x {self.run['model']}"
        return f"{base} ({quant})" if quant else base

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
    """The parts of a results file a report reads; the rest is skipped."""

    schema: Any
    run: Any
    results: list[Annotated[AttemptResult, AfterValidator(compact)]]


_DOCUMENT = TypeAdapter(_Document)
_ROWS = TypeAdapter(list[Annotated[AttemptResult, AfterValidator(compact)]])
_OPEN, _NEXT, _CLOSE = b'\n  "results": [\n    ', b",\n    ", b"\n  ]\n}\n"
"""How the runner lays out rows: the header indented, then one compact row per line."""
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
    """Read and validate a results file; raise ResultsError naming the file and the fix."""
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
            return loaded or _load_checked(path)
        finally:
            _shared.clear()


def _load_by_line(path: Path, data: bytes) -> RunResults | None:
    """A file in the runner's layout, its rows validated a batch at a time so that the
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
    """A valid file parsed and validated in one pass inside pydantic; None on any problem,
    so that ``_load_checked`` finds it and names it.
    """
    try:
        document = _DOCUMENT.validate_json(data)
    except ValidationError:
        return None
    run = document["run"]
    if document["schema"] != RESULTS_SCHEMA or not isinstance(run, dict):
        return None
    for key, kind in REQUIRED_RUN_KEYS.items():
        value = run.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            return None
    # The validator hands back Attempts in place of the records it validated.
    rows: list[Attempt] = document["results"]  # type: ignore[assignment]
    return RunResults(path, run, tuple(rows))


def _load_checked(path: Path) -> RunResults:
    """Read a results file step by step, raising the first problem with its fix."""
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
    if not isinstance(document, dict):
        raise ResultsError(f"{where}: expected a JSON object with 'run' and 'results'")
    schema = document.get("schema")
    if schema != RESULTS_SCHEMA:
        raise ResultsError(
            f"{where}: schema {schema!r} is not {RESULTS_SCHEMA} (write it with "
            "a matching agent-eval, or upgrade agent-eval to read it)"
        )
    run = document.get("run")
    if not isinstance(run, dict):
        raise ResultsError(f"{where}: 'run' must be an object")
    for key, kind in REQUIRED_RUN_KEYS.items():
        value = run.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ResultsError(
                f"{where}: run.{key} is missing or not a "
                f"{getattr(kind, '__name__', kind)} (the file is not a results "
                "file written by 'agent-eval run')"
            )
    raw_rows = document.get("results")
    if not isinstance(raw_rows, list):
        raise ResultsError(f"{where}: 'results' must be a list of attempt rows")
    rows = []
    for index, raw in enumerate(raw_rows):
        try:
            rows.append(compact(AttemptResult.model_validate(raw)))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "(row)"
            raise ResultsError(
                f"{where}: results[{index}].{field}: {first['msg']} (fix or remove that row)"
            ) from None
    return RunResults(path, run, tuple(rows))
