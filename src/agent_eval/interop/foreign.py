"""A run read from another harness's files, in the project's own records.

The converters build each attempt as a validated ``AttemptResult`` and keep its
trajectory records in memory (the other format has no trajectory file of ours), so that
reports, compare and the viewer read a foreign run as they read one of ours.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agent_eval.errors import ResultsError
from agent_eval.records import Checks, FailureClass
from agent_eval.results import Attempt, AttemptResult, RunHead, RunResults, compact, tally
from agent_eval.trajectory import Limits, read_trajectory, trajectory_path

TEXT_LIMIT = 2000
"""Characters kept of a model reply or a tool result in a trajectory record, as the
reference agents keep."""


@dataclass(frozen=True)
class ForeignRun(RunResults):
    """A run converted from another harness's log, with each attempt's trajectory."""

    source_format: str = ""
    """inspect or atif: the format it was read from."""
    trajectories: tuple[tuple[dict[str, Any], ...], ...] = ()
    """Each row's trajectory records (meta line first, score line last), by row position."""
    expected: dict[str, str | None] = field(default_factory=dict)
    """Each task's expected outcome as the format records it (Inspect's target); None
    when it records none."""

    @cached_property
    def _positions(self) -> dict[int, int]:
        return {id(row): position for position, row in enumerate(self.rows)}

    def records(self, row: Attempt) -> list[dict[str, Any]]:
        """The attempt's trajectory records, meta line first; none for a row of another run."""
        position = self._positions.get(id(row))
        return [] if position is None else list(self.trajectories[position])


@dataclass
class AttemptDraft:
    """What a converter knows of one attempt; ``finish`` makes the row and its records."""

    task_id: str
    """The task's id in the other format (Inspect's sample id, Harbor's task name)."""
    attempt: int
    """1-based; 0 until numbered, for a format that does not number attempts."""
    passed: bool
    """The verdict, as the other harness gave it."""
    answer: str = ""
    """The final answer, when the format records one."""
    category: str = ""
    """The task's category, when the format records one."""
    records: list[dict[str, Any]] = field(default_factory=list)
    """Model, tool and stop records in our trajectory shape."""
    prompt_tokens: int | None = None
    """Input tokens, when recorded."""
    completion_tokens: int | None = None
    """Output tokens, when recorded."""
    tokens: int | None = None
    """All tokens; the sum of the two above when not recorded apart."""
    seconds: float | None = None
    """The attempt's seconds; 0.0 in the row when not recorded."""
    stopped: str = "finished"
    """The stop reason, in our vocabulary."""
    failure_class: FailureClass | None = None
    """Set for a failure that is not a wrong answer (over_budget, agent_error)."""
    error: str | None = None
    """What went wrong, in a few words."""
    score: dict[str, Any] = field(default_factory=dict)
    """The other harness's own verdict fields (scorer, value, reward), kept on the score line."""
    task_text: str | None = None
    """The task as the agent was given it, when recorded."""
    row: AttemptResult | None = None
    """Our own row, when agent-eval wrote the file: taken whole, checks and failure
    included, over the fields above (only the trajectory comes from the format)."""
    position: int | None = None
    """Where the attempt stood among the rows of the run it was exported from, when the
    file says (an attempt per file is read in file-name order, not the run's)."""

    def steps(self) -> int:
        """One per model reply plus one per tool result, as ours are counted."""
        return sum(record.get("type") in ("model", "tool") for record in self.records)

    def finish(self, head: RunHead) -> tuple[AttemptResult, tuple[dict[str, Any], ...]]:
        """The validated row and the trajectory records (meta line first, score line last)."""
        row = self.row or self._row()
        meta = {
            "scaffold": head.scaffold,
            "model": head.model,
            "task_id": row.id,
            "attempt": row.attempt,
            "task": self.task_text,
            "suite": head.task_set,
            "suite_version": head.task_set_version,
            "suite_hash": head.suite_hash,
            "run_id": head.run_id,
            "source_format": None,
        }
        score = {
            "checks": row.checks.model_dump(mode="json"),
            "verdict": "passed" if row.passed else "failed",
            "failure_class": row.failure_class,
            **self.score,
        }
        records = ({"meta": meta}, *self.records, {"type": "score", **score})
        return row, records

    def _row(self) -> AttemptResult:
        """The row of what the format records. The checks it has no counterpart for hold,
        as the course harness's do for a task without such a check; only the verdict and
        the tools used are the format's."""
        tools = [str(r["tool"]) for r in self.records if r.get("type") == "tool"]
        checks = Checks(
            missing=[],
            forbidden=[],
            regex_ok=True,
            tool_ok=True,
            within_steps=True,
            tools_used=tools,
            passed=self.passed,
        )
        failure = self.failure_class or ("passed" if self.passed else "wrong_answer")
        tokens = self.tokens
        if tokens is None:
            tokens = (self.prompt_tokens or 0) + (self.completion_tokens or 0)
        return AttemptResult(
            id=self.task_id,
            category=self.category,
            attempt=self.attempt,
            answer=self.answer,
            steps=self.steps(),
            tokens=tokens,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            seconds=self.seconds if self.seconds is not None else 0.0,
            stopped=self.stopped,
            checks=checks,
            failure_class="passed" if self.passed else failure,
            error=self.error,
        )


def build_run(
    path: Path,
    head: RunHead,
    drafts: Sequence[AttemptDraft],
    source_format: str,
    expected: dict[str, str | None],
) -> ForeignRun:
    """The run of these attempts, rows attempt-major as ours are written, with its summary."""
    if all(draft.position is not None for draft in drafts):
        drafts = sorted(drafts, key=lambda draft: draft.position or 0)
    first_seen = _first_seen(drafts)
    ordered = sorted(drafts, key=lambda d: (d.attempt, first_seen[d.task_id]))
    finished = [draft.finish(head) for draft in ordered]
    for _, records in finished:
        records[0]["meta"]["source_format"] = source_format
    rows = tuple(compact(row) for row, _ in finished)
    counted = tally(rows, head.prices)
    repeats = max((row.attempt for row in rows), default=0)
    head = head.model_copy(update={"summary": counted.summary(), "repeats": repeats})
    return ForeignRun(
        path,
        head,
        rows,
        None,
        source_format=source_format,
        trajectories=tuple(records for _, records in finished),
        expected=expected,
    )


def _first_seen(drafts: Iterable[AttemptDraft]) -> dict[str, int]:
    order: dict[str, int] = {}
    for draft in drafts:
        order.setdefault(draft.task_id, len(order))
    return order


def task_identity(expected: dict[str, str | None]) -> str:
    """The suite identity a foreign run can state: its task ids and the expected outcome
    of each, hashed; an agent-eval run of the same task ids, exported, hashes alike."""
    canonical = json.dumps(sorted(expected.items(), key=lambda item: item[0]), ensure_ascii=False)
    return "tasks:" + hashlib.sha256(canonical.encode()).hexdigest()


def attempt_records(
    run: RunResults, row: Attempt, limit: int = 64 * 1024 * 1024
) -> list[dict[str, Any]]:
    """An attempt's trajectory records, meta line first, for an exporter: a foreign run's
    from memory, ours from its trajectory file; none when there is no file."""
    if isinstance(run, ForeignRun):
        return run.records(row)
    path = trajectory_path(run.path, row.trajectory_file)
    if path is None:
        return []
    try:  # what can be read of a damaged file is exported, as a viewer shows it
        read = read_trajectory(path, limits=Limits(bytes=limit), tolerant=True)
    except ResultsError:
        return []
    return [dict(line) for line in read.lines]


OWN_FILES = ("trajectory_file", "recording_file")
"""A row's fields that name files of the run's folder, which an export does not carry."""


def row_document(row: Attempt) -> dict[str, Any]:
    """The attempt's row as a results file holds it, without the files it names: what an
    export carries so that the run read back is the same run."""
    fields = row._asdict()
    del fields["passed"]
    fields["checks"] = row.check_record()
    document = AttemptResult.model_validate(fields).model_dump(mode="json")
    return {key: value for key, value in document.items() if key not in OWN_FILES}


def our_row(where: str, document: Any) -> AttemptResult:
    """The row an export of ours carries, validated; ResultsError naming ``where`` (the
    file and the key) and the first problem."""
    try:
        return AttemptResult.model_validate(document)
    except ValidationError as exc:
        raise ResultsError(f"{where}: {_first_problem(exc)}") from None


def our_head(where: str, document: Any) -> RunHead:
    """The run head an export of ours carries, validated, without its summary (the
    figures are worked out again from the rows); ResultsError as ``our_row``'s."""
    if isinstance(document, dict):
        document = {key: value for key, value in document.items() if key != "summary"}
    try:
        return RunHead.model_validate(document)
    except ValidationError as exc:
        raise ResultsError(f"{where}: {_first_problem(exc)}") from None


def _first_problem(exc: ValidationError) -> str:
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or "(the object)"
    return f"{field}: {first['msg']} (not a run agent-eval wrote)"


def clip(value: Any, limit: int = TEXT_LIMIT) -> str:
    """Text of a reply or a result, cut as the reference agents cut theirs."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def task_differences(a: RunResults, b: RunResults) -> list[str] | None:
    """How two runs' tasks differ when either comes from another harness: the task ids
    only one holds and the tasks whose expected outcomes differ (where both record one);
    None when both are agent-eval runs, whose suite hashes say it."""
    if not isinstance(a, ForeignRun) and not isinstance(b, ForeignRun):
        return None
    expected_a, expected_b = _expected(a), _expected(b)
    only_a = [t for t in expected_a if t not in expected_b]
    only_b = [t for t in expected_b if t not in expected_a]
    changed = [
        t
        for t, value in expected_a.items()
        if t in expected_b and None not in (value, expected_b[t]) and value != expected_b[t]
    ]
    found = []
    if only_a:
        found.append(f"only in A: {_names(only_a)}")
    if only_b:
        found.append(f"only in B: {_names(only_b)}")
    if changed:
        found.append(f"expected outcome differs: {_names(changed)}")
    return found


def _expected(run: RunResults) -> dict[str, str | None]:
    if isinstance(run, ForeignRun):
        return run.expected
    return dict.fromkeys((task.task_id for task in run.tasks), None)


def _names(task_ids: list[str], shown: int = 5) -> str:
    more = f" and {len(task_ids) - shown} more" if len(task_ids) > shown else ""
    return ", ".join(task_ids[:shown]) + more
