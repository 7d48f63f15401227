"""A loaded run in memory: compact attempt rows, grouped by task.

A pydantic row costs about 3 KB and this compact one about 1 KB, so a 100,000-row run
(two of them for compare) fits in a few hundred megabytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from operator import attrgetter
from pathlib import Path
from typing import Any, NamedTuple, get_origin

from agent_eval.records import RESULTS_SCHEMA, BadCitation, Checks, StateOutcome
from agent_eval.results.schema import AttemptResult, RunHead, describe_failure
from agent_eval.trajectory import trajectory_excerpt, trajectory_path

CHECK_FIELDS = tuple(Checks.model_fields)
"""Checks' fields, in the order ``Attempt.checks`` holds their values."""


class CheckValues(NamedTuple):
    """One attempt's validated Checks, compact: the same fields under the same names,
    lists as tuples."""

    missing: tuple[str, ...]
    """Strings of expect_in_answer absent from the answer."""
    forbidden: tuple[str, ...]
    """Strings of expect_not_in_answer present in the answer."""
    regex_ok: bool
    """Whether expect_regex matched."""
    tool_ok: bool
    """Whether expect_tool was used."""
    within_steps: bool
    """Whether the steps were within max_steps."""
    tools_used: tuple[str, ...]
    """Every trajectory record's tool, in order."""
    passed: bool
    """True when every check holds."""
    within_tokens: bool
    """Whether the tokens were within max_tokens."""
    within_seconds: bool
    """Whether the wall time was within max_seconds."""
    within_cost: bool
    """Whether the attempt's cost was within --max-cost-per-task."""
    citations_ok: bool
    """Whether every citation held and one named an expected file."""
    bad_citations: tuple[BadCitation, ...]
    """Citations the starting workspace does not bear out."""
    state: tuple[StateOutcome, ...]
    """Each expect_state check's outcome, in the task's order."""

    def __reduce__(self) -> tuple[Any, ...]:
        return _unpickled(self)


def _unpickled(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """How pickle rebuilds a row: by ``tuple.__new__``, in C, rather than the named tuple's
    ``__new__`` of keyword arguments in Python; a third of the time for rows a forked
    child loaded (cli/reports.py)."""
    return (tuple.__new__, (type(row), tuple(row)))


if CheckValues._fields != CHECK_FIELDS:
    # compact() copies Checks' fields by position, and a field left out here would
    # silently vanish from every report.
    raise RuntimeError("results.rows.CheckValues must list Checks' fields, in order")


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
    """The agent's own seconds when it gave them, else the harness's."""
    stopped: str | None
    """Why the attempt stopped."""
    checks: CheckValues
    """The validated Checks, lists as tuples; ``check_record`` rebuilds the Checks."""
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
    citations: tuple[Any, ...] | None
    """The passages the agent cited, when it cited any."""
    group: str | None
    """The task's group, when it has one."""
    traceback: tuple[Any, ...] | None
    """Where run_task raised: the agent's own frames (results.records.Frame)."""
    copied_share: float | None
    """The share of the answer copied from the task or the documents (score.copied)."""
    recording_file: str | None
    """The attempt's recorded model calls, when it was recorded."""
    harness_seconds: float | None
    """The attempt's wall time by the harness's clock, when recorded."""
    passed: bool
    """The verdict."""

    def __reduce__(self) -> tuple[Any, ...]:
        return _unpickled(self)

    @property
    def failure(self) -> str | None:
        """Why it failed, None when it passed: the full record's reason, worked out when
        asked (a comparison never asks, a report once per failed attempt)."""
        return None if self.passed else describe_failure(self)

    def check_record(self) -> Checks:
        """The attempt's Checks, rebuilt without validating again (it was validated)."""
        values = (list(v) if isinstance(v, tuple) else v for v in self.checks)
        fields: dict[str, Any] = dict(zip(CHECK_FIELDS, values, strict=True))
        return Checks.model_construct(**fields)


if Attempt._fields[:-1] != tuple(AttemptResult.model_fields):
    # compact() copies AttemptResult's fields by position, and a field left out here
    # would silently vanish from every report.
    raise RuntimeError(
        "results.rows.Attempt must list AttemptResult's fields, in order, then 'passed'"
    )


_CHECKS_AT = Attempt._fields.index("checks")
_CHANGED_AT = Attempt._fields.index("changed_files")
_CITED_AT = Attempt._fields.index("citations")
_TRACE_AT = Attempt._fields.index("traceback")
_LIST_CHECKS = [
    index
    for index, field in enumerate(Checks.model_fields.values())
    if get_origin(field.annotation) is list
]


shared: dict[tuple[Any, ...], tuple[Any, ...]] = {}
"""Equal CheckValues and changed-file tuples, one object each while a file loads (the
loader empties it when done)."""


def _share(value: tuple[Any, ...]) -> tuple[Any, ...]:
    """One object for equal tuples: rows repeat a few combinations of checks and files,
    and every tuple kept is memory."""
    return shared.setdefault(value, value)


def compact(row: AttemptResult) -> Attempt:
    """The validated row as an Attempt (its ``failure`` is worked out when asked).

    A validated model's ``__dict__`` holds its fields in declaration order, so values are
    copied by position. Lists become tuples, so that an Attempt holds no mutable
    container and equal checks can share one object.
    """
    checks = [*row.checks.__dict__.values()]
    for index in _LIST_CHECKS:
        checks[index] = tuple(checks[index])
    values = [*row.__dict__.values()]
    values[_CHECKS_AT] = _share(tuple.__new__(CheckValues, checks))
    if row.changed_files is not None:
        values[_CHANGED_AT] = _share(tuple(row.changed_files))
    if row.citations is not None:
        values[_CITED_AT] = tuple(row.citations)
    if row.traceback is not None:
        values[_TRACE_AT] = tuple(row.traceback)
    values.append(row.checks.passed)
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
        return trajectory_excerpt(trajectory_path(self.path, row.trajectory_file), limit)
