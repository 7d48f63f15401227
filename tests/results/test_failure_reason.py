"""The first failure in words: said once, without the failure class that every view
already shows beside it."""

from __future__ import annotations

from agent_eval.cli.console import attempt_detail
from agent_eval.records import Checks
from agent_eval.results import AttemptResult, describe_failure


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
    assert attempt_detail(row)[1] == "      agent_error: run_task raised ValueError: boom"


def test_an_infra_error_is_named_once() -> None:
    row = _failed("infra_error", "model_error", "model_error: HTTP 503")
    assert describe_failure(row) == "r2: model_error: HTTP 503"
    assert attempt_detail(row)[1] == "      infra_error: model_error: HTTP 503"


def test_a_course_row_that_raised_is_named_by_its_stop() -> None:
    row = _failed("agent_error", "entry point raised KeyError: 'x'", None)
    assert describe_failure(row, numbered=False) == "entry point raised KeyError: 'x'"
    assert attempt_detail(row)[1] == "      agent_error: entry point raised KeyError: 'x'"
