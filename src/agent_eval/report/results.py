"""Load a results file and regroup its attempt rows by task, for every report.

Reports are built from the file alone, so last year's results can be re-reported
offline. Per-task figures are recomputed from the attempt rows: the stored per-task
view is a convenience for people, not an input to statistics.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agent_eval.errors import ResultsError
from agent_eval.records import RESULTS_SCHEMA, AttemptResult

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


@dataclass(frozen=True)
class TaskOutcome:
    """Every attempt at one task, in attempt order."""

    task_id: str
    """The task's id."""
    category: str
    """The task's category (from its first attempt)."""
    rows: tuple[AttemptResult, ...]
    """The attempts, sorted by attempt number."""

    @property
    def attempts(self) -> int:
        """How many attempts the task had."""
        return len(self.rows)

    @property
    def passes(self) -> int:
        """How many attempts passed."""
        return sum(row.passed for row in self.rows)

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
    rows: tuple[AttemptResult, ...]
    """Every attempt, validated."""

    @property
    def tasks(self) -> list[TaskOutcome]:
        """Attempts grouped by task id, tasks in first-seen order."""
        grouped: dict[str, list[AttemptResult]] = {}
        for row in self.rows:
            grouped.setdefault(row.task_id, []).append(row)
        return [TaskOutcome(task_id, rows[0].category,
                            tuple(sorted(rows, key=lambda r: r.attempt)))
                for task_id, rows in grouped.items()]

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

    def trajectory_text(self, row: AttemptResult, limit: int = 20_000) -> str | None:
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


def load_results(path: str | Path) -> RunResults:
    """Read and validate a results file; raise ResultsError naming the file and the fix."""
    path = Path(path)
    where = f"results file {path}"
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultsError(f"{where}: not found (give the --out file of "
                           "'agent-eval run')") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{where}: cannot be read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{where}: not valid JSON at line {exc.lineno} column {exc.colno} "
                           "(the file is damaged or truncated; re-run or restore it)") from None
    if not isinstance(document, dict):
        raise ResultsError(f"{where}: expected a JSON object with 'run' and 'results'")
    schema = document.get("schema")
    if schema != RESULTS_SCHEMA:
        raise ResultsError(f"{where}: schema {schema!r} is not {RESULTS_SCHEMA} (write it with "
                           "a matching agent-eval, or upgrade agent-eval to read it)")
    run = document.get("run")
    if not isinstance(run, dict):
        raise ResultsError(f"{where}: 'run' must be an object")
    for key, kind in REQUIRED_RUN_KEYS.items():
        value = run.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ResultsError(f"{where}: run.{key} is missing or not a "
                               f"{getattr(kind, '__name__', kind)} (the file is not a results "
                               "file written by 'agent-eval run')")
    raw_rows = document.get("results")
    if not isinstance(raw_rows, list):
        raise ResultsError(f"{where}: 'results' must be a list of attempt rows")
    rows = []
    for index, raw in enumerate(raw_rows):
        try:
            rows.append(AttemptResult.model_validate(raw))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "(row)"
            raise ResultsError(f"{where}: results[{index}].{field}: {first['msg']} "
                               "(fix or remove that row)") from None
    return RunResults(path, run, tuple(rows))
