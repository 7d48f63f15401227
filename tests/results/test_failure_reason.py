"""The first failure in words: said once, without the failure class that every view
already shows beside it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_eval.cli.console import attempt_detail
from agent_eval.records import BadCitation, Checks, StateOutcome
from agent_eval.results import AttemptResult, compact, describe_failure, iter_rows, load_results

DATA = Path(__file__).with_name("data")


def _failed(failure_class: str, stopped: str, error: str | None) -> AttemptResult:
    checks = Checks(missing=["4000"], forbidden=[], regex_ok=True, tool_ok=True,
                    within_steps=True, tools_used=[], passed=False)  # fmt: skip
    return AttemptResult(id="port", category="c", attempt=2, answer="", steps=0, tokens=0,
                         seconds=0.1, stopped=stopped, checks=checks,
                         failure_class=failure_class, error=error)  # type: ignore[arg-type]  # fmt: skip


def test_an_agent_error_is_named_once() -> None:
    row = _failed("agent_error", "entry point raised ValueError: boom",
                  "run_task raised ValueError: boom")  # fmt: skip
    assert describe_failure(row) == "r2: run_task raised ValueError: boom"
    assert attempt_detail(row)[2] == "        agent_error: run_task raised ValueError: boom"


def test_an_infra_error_is_named_once() -> None:
    row = _failed("infra_error", "model_error", "model_error: HTTP 503")
    assert describe_failure(row) == "r2: model_error: HTTP 503"
    assert attempt_detail(row)[2] == "        infra_error: model_error: HTTP 503"


def test_a_course_row_that_raised_is_named_by_its_stop() -> None:
    row = _failed("agent_error", "entry point raised KeyError: 'x'", None)
    assert describe_failure(row, numbered=False) == "entry point raised KeyError: 'x'"
    assert attempt_detail(row)[2] == "        agent_error: entry point raised KeyError: 'x'"


def _checks(**changes: Any) -> Checks:
    fields: dict[str, Any] = {"missing": [], "forbidden": [], "regex_ok": True, "tool_ok": True,
                              "within_steps": True, "tools_used": [], "passed": False}  # fmt: skip
    return Checks(**{**fields, **changes})


BAD = BadCitation(file="a.md", quote="q", reason="no such file")
FAILED_STATE = StateOutcome(name="file x holds y", ok=False)
HELD_STATE = StateOutcome(name="row z", ok=True)
REASONS = [  # every reason describe_failure gives, alone and together
    ("wrong_answer", None, _checks(missing=["4000", "sunday"], forbidden=["8080"])),
    ("wrong_answer", None, _checks(regex_ok=False, tool_ok=False, within_steps=False)),
    ("over_budget", None, _checks(within_tokens=False, within_seconds=False, within_cost=False)),
    ("wrong_answer", None, _checks(citations_ok=False)),
    ("wrong_answer", None, _checks(citations_ok=False, bad_citations=[BAD])),
    ("wrong_answer", None, _checks(state=[FAILED_STATE, HELD_STATE])),
    ("wrong_answer", None, _checks()),
    ("agent_error", "run_task raised ValueError: boom", _checks()),
    ("passed", None, _checks(passed=True)),
]


@pytest.mark.parametrize(("failure_class", "error", "checks"), REASONS)
def test_a_loaded_attempt_gives_its_full_rows_reason(
    failure_class: str, error: str | None, checks: Checks
) -> None:
    row = AttemptResult(id="port", category="c", attempt=3, answer="a", steps=9, tokens=99,
                        seconds=1.0, checks=checks, failure_class=failure_class,  # type: ignore[arg-type]
                        error=error)  # fmt: skip
    loaded = compact(row)
    assert loaded.failure == row.failure
    assert (loaded.failure is None) == row.passed
    assert loaded.check_record() == checks


def test_every_loaded_attempt_of_a_file_gives_its_full_rows_reason() -> None:
    for name in ("course-results.json", "course-results-raises.json", "schema1-results.json"):
        full = list(iter_rows(DATA / name))
        loaded = load_results(DATA / name).rows
        assert [r.failure for r in loaded] == [r.failure for r in full]
        assert any(r.failure for r in full)
