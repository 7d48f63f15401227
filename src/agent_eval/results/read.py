"""Read a results file of any shape: schema 2, schema 1, or the course harness's.

``load_results`` loads a whole run for reports, every row validated and then kept as a
compact ``Attempt`` (results/rows.py). ``read_head`` and ``iter_rows`` read the head and
the full row records one at a time, for tools that rewrite or replay a run.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from agent_eval.errors import ResultsError
from agent_eval.records import RESULTS_SCHEMA
from agent_eval.results.legacy import KNOWN_SCHEMAS, upgrade_row, upgrade_run, upgrade_task
from agent_eval.results.rows import Attempt, RunResults, compact, shared
from agent_eval.results.schema import AttemptResult, ResultsHead, RunHead


class _Document(TypedDict):
    """The parts of a schema-2 results file a report reads; per_task is skipped."""

    schema: Any
    run: RunHead
    results: list[Annotated[AttemptResult, AfterValidator(compact)]]


@cache
def _document() -> TypeAdapter[_Document]:
    """Built on first use, as the records are (results/schema.py)."""
    return TypeAdapter(_Document)


@cache
def _rows() -> TypeAdapter[list[AttemptResult]]:
    """Each row is compacted to an Attempt as it is validated."""
    return TypeAdapter(list[Annotated[AttemptResult, AfterValidator(compact)]])


_OPEN, _NEXT, _CLOSE = b'\n  "results": [\n    ', b",\n    ", b"\n  ]\n}\n"
"""How the writer lays out rows: the head indented, then one compact row per line."""
_BATCH = 2_000_000
"""Bytes of rows parsed at once; pydantic holds a parse tree of about twice the
text it reads."""
BACK_SHARE = 0.5
"""The share of the rows ``load_back_rows`` takes. The command line starts it while it
still imports the report's modules, but the child then pickles what it validated, which
evens it out."""

BackRows = Callable[[], "list[Attempt] | None"]
"""Gives the rows ``load_back_rows`` validated elsewhere, or None when it could not."""


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cycle collector while a run loads, then freeze what is loaded.

    Loading makes only acyclic objects, and with the collector running each of its passes
    re-walks every row loaded so far, which more than doubles the time. Rows are tuple
    subclasses, which the collector never untracks, so every later full pass (while a
    report renders) would walk them all again; frozen, no pass looks at them, and
    reference counting still frees them. The collection first keeps garbage cycles
    already made out of the frozen set, where they would never be freed.
    """
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


@contextmanager
def _not_too_deep(path: Path) -> Iterator[None]:
    """Turn a parse that ran out of stack (JSON nested thousands deep) into a ResultsError
    naming the file, as any other damage is."""
    try:
        yield
    except RecursionError:
        raise ResultsError(
            f"results file {path}: nested too deeply to read (the file is damaged or is not "
            "a results file; re-run or restore it)"
        ) from None


def load_results(path: str | Path, back_rows: BackRows | None = None) -> RunResults:
    """Read and validate a results file of any shape; ResultsError naming the file and
    the fix when it cannot be read.

    ``back_rows``, for a file in the writer's layout, gives the rows ``load_back_rows``
    validated in another process; it is called once this one has validated the others.
    When it gives None, this process validates those rows too.
    """
    path = Path(path)
    with _gc_paused(), _not_too_deep(path):
        try:
            # Bytes: pydantic parses UTF-8 itself, and decoding first costs a copy.
            data = path.read_bytes()
        except OSError:
            data = None
        try:
            loaded = None
            if data is not None:
                loaded = _load_by_line(path, data, back_rows) or _load_whole(path, data)
            del data  # a hundred megabytes for a large run: not to be held while reporting
            if loaded is not None:
                return loaded
            schema, head, raw_rows = _read_checked(path)
            rows = tuple(compact(row) for row in _validated_rows(path, raw_rows, schema))
            return RunResults(path, head.run, rows, schema)
        finally:
            shared.clear()


def read_head(path: str | Path) -> ResultsHead:
    """The head of a results file of any shape (schema, run, per-task view), validated;
    a file in the writer's layout is read only up to its rows."""
    path = Path(path)
    with _not_too_deep(path):
        head = _head_of_layout(path)
        return head if head is not None else _read_checked(path)[1]


def iter_rows(path: str | Path) -> Iterator[AttemptResult]:
    """Every attempt row of a results file of any shape, one validated record at a time.

    A file in the writer's layout is read a line at a time, so memory stays flat however
    long the run; any other file is parsed whole first.
    """
    path = Path(path)
    with _not_too_deep(path):
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
    # The head alone: the key that opens the rows (and its comma) left out, the object closed.
    head_text = text.removesuffix(b'"results": [').rstrip().removesuffix(b",") + b"}"
    try:
        head = ResultsHead.model_validate_json(head_text)
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


def load_back_rows(path: str | Path) -> list[Attempt] | None:
    """The rows past the first ``1 - BACK_SHARE`` of a file in the writer's layout,
    validated, for ``load_results(path, back_rows)`` in another process; None for any
    other file or any problem (load_results then finds it and names it). Pause the cycle
    collector around it, as load_results does: it more than doubles the time."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    layout = _rows_layout(data)
    if layout is None:
        return None
    _, _, back_start, end = layout
    return _validated_batches(data, back_start, end)


def _rows_layout(data: bytes) -> tuple[int, int, int, int] | None:
    """Where the rows of a file in the writer's layout start, where the front share
    ends and the back share starts (either side of a row separator), and where the rows
    end; None for another layout."""
    start = data.find(_OPEN)
    if start < 0 or not data.endswith(_CLOSE):
        return None
    position, end = start + len(_OPEN), len(data) - len(_CLOSE)
    found = data.find(_NEXT, position + int((end - position) * (1 - BACK_SHARE)), end)
    if found < 0:
        return position, end, end, end
    return position, found, found + len(_NEXT), end


def _validated_batches(data: bytes, position: int, end: int) -> list[Attempt] | None:
    """The rows in ``data[position:end]`` (whole rows, their separators between them),
    validated a batch at a time; None if any is invalid."""
    rows: list[Attempt] = []
    while position < end:
        found = data.find(_NEXT, position + _BATCH, end)
        stop = end if found < 0 else found
        batch = b"[" + data[position:stop] + b"]"  # the separators are valid JSON as they are
        try:
            # The validator hands back Attempts in place of the records it validated.
            rows += _rows().validate_json(batch)  # type: ignore[arg-type]
        except ValidationError:
            return None
        position = stop + len(_NEXT)
    return rows


def _load_by_line(path: Path, data: bytes, back_rows: BackRows | None) -> RunResults | None:
    """A file in the writer's layout, its rows validated a batch at a time so that the
    parse never holds the whole file's tree (the back share by ``back_rows`` when it
    can); None when the layout differs or anything is invalid.

    Splitting at the row separators is safe: a JSON string holds no raw newline, so a
    separator inside a row would leave both pieces unbalanced, and they would fail. For
    the same reason the first ``_OPEN`` is the top-level "results" key: a second one, or
    anything after the rows, fails as a row.
    """
    layout = _rows_layout(data)
    if layout is None:
        return None
    position, front_end, back_start, end = layout
    head = _load_whole(path, data[: position - len(_OPEN)] + b'\n  "results": []\n}\n')
    if head is None or head.rows:
        return None
    front = _validated_batches(data, position, front_end if back_rows else end)
    if front is None:
        return None
    if back_rows is None:
        return RunResults(path, head.run, tuple(front))
    back = back_rows()
    if back is None:
        back = _validated_batches(data, back_start, end)
    return None if back is None else RunResults(path, head.run, (*front, *back))


def _load_whole(path: Path, data: bytes) -> RunResults | None:
    """A valid schema-2 file parsed and validated in one pass inside pydantic; None on
    any problem or another shape, so that ``_read_checked`` reads it and names it."""
    try:
        document = _document().validate_json(data)
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
