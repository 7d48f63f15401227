"""The course's checks, exactly, as pure functions of a task and what an attempt produced.

These semantics are the contract that keeps runs comparable with the course harness:
case-insensitive substring tests, ``re.search`` with IGNORECASE, a tool name looked up
under the trajectory key ``tool``, and reported steps against ``max_steps``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agent_eval.records import Checks, FailureClass, StateOutcome, Task
from agent_eval.score.citations import CitationVerdict

BUDGET_STOPS = frozenset({"turn_limit", "token_budget", "time_budget", "cost_budget", "reply_cut"})
"""Agent stop reasons that mean a budget ran out (``reply_cut``: one reply's token limit)."""


def tools_used(trajectory: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every record's ``tool``, in order, repeats included, as the course lists them
    (``len`` counts the tool calls); a record with an empty name is skipped, as there."""
    return [name for record in trajectory if isinstance(name := record.get("tool"), str) and name]


def score_attempt(
    task: Task,
    answer: str,
    steps: int,
    used: list[str],
    tokens: int = 0,
    seconds: float = 0.0,
    state: Sequence[StateOutcome] = (),
    *,
    cost: float | None = None,
    max_cost: float | None = None,
    citations: CitationVerdict | None = None,
) -> Checks:
    """Every named check for one attempt; ``passed`` needs all of them.

    ``state`` carries the outcomes of the task's state checks, judged on the workspace
    after the agent stopped (score/state.py); they count like any answer check.
    ``cost`` is the attempt's cost at the user's price, held against ``max_cost``.
    ``citations`` is the verdict on the answer's citations (score/citations.py).
    """
    lowered = answer.lower()
    missing = [s for s in task.expect_in_answer if s.lower() not in lowered]
    forbidden = [s for s in task.expect_not_in_answer if s.lower() in lowered]
    # The course's convention: a check the task does not ask for holds.
    regex_ok = (
        task.expect_regex is None or re.search(task.expect_regex, answer, re.IGNORECASE) is not None
    )
    tool_ok = task.expect_tool is None or task.expect_tool in used
    within_steps = task.max_steps is None or steps <= task.max_steps
    within_tokens = task.max_tokens is None or tokens <= task.max_tokens
    within_seconds = task.max_seconds is None or seconds <= task.max_seconds
    # Without a cost limit, or with a cost unknown (no price split), the budget holds.
    within_cost = max_cost is None or cost is None or cost <= max_cost
    cited = citations or CitationVerdict(None, [])
    passed = (
        not missing
        and not forbidden
        and regex_ok
        and tool_ok
        and within_steps
        and within_tokens
        and within_seconds
        and within_cost
        and cited.ok is not False
        and all(outcome.ok for outcome in state)
    )
    return Checks(
        missing=missing,
        forbidden=forbidden,
        regex_ok=regex_ok,
        tool_ok=tool_ok,
        within_steps=within_steps,
        tools_used=used,
        passed=passed,
        within_tokens=within_tokens,
        within_seconds=within_seconds,
        within_cost=within_cost,
        citations_ok=cited.ok is not False,
        bad_citations=list(cited.bad),
        state=list(state),
    )


def classify(checks: Checks, stopped: str) -> FailureClass:
    """The failure class of a scored attempt whose agent returned normally.

    The verdict stays the course's (every check holds). A failed attempt whose model
    endpoint failed is infrastructure, never a wrong answer; one whose budget ran out is
    over_budget. A replayed attempt whose agent asked what its recording did not is a
    replay_mismatch, whatever it then answered: the recording cannot judge it.
    """
    if stopped == "replay_mismatch":
        return "replay_mismatch"
    if checks.passed:
        return "passed"
    if stopped == "model_error":
        return "infra_error"
    within = (checks.within_steps and checks.within_tokens and checks.within_seconds
              and checks.within_cost)  # fmt: skip
    if stopped in BUDGET_STOPS or not within:
        return "over_budget"
    return "wrong_answer"
