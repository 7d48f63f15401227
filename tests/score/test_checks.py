"""The course's checks, exactly, with near misses."""

from __future__ import annotations

from typing import Any

import pytest

from agent_eval.records import Task
from agent_eval.score.checks import classify, score_attempt, tools_used


def task(**fields: Any) -> Task:
    return Task(id="t", task="q", **fields)


@pytest.mark.parametrize(
    ("expected", "answer", "missing"),
    [
        (["4000"], "The gateway listens on 4000.", []),
        (["4000"], "port 40000", []),  # substring semantics: the course accepts this
        (["40000"], "port 4000", ["40000"]),
        (["sunday"], "Every SUNDAY", []),
        (["Sunday"], "on sundays", []),  # substring, case-insensitive
        (["sundays"], "on Sunday", ["sundays"]),
        (["02:00", "04:00"], "from 02:00 to 4:00", ["04:00"]),
        (["petrel"], "", ["petrel"]),
    ],
)
def test_expect_in_answer(expected: list[str], answer: str, missing: list[str]) -> None:
    checks = score_attempt(task(expect_in_answer=expected), answer, 1, [])
    assert checks.missing == missing
    assert checks.passed is (not missing)


@pytest.mark.parametrize(
    ("forbidden", "answer", "found"),
    [
        (["tern", "skua"], "Only petrel.", []),
        (["tern", "skua"], "Petrel, not Tern or skua.", ["tern", "skua"]),
        (["tern"], "Lantern petrel", ["tern"]),  # substring: 'Lantern' contains 'tern'
        (["password is"], "The password is unknown", ["password is"]),
        (["password is"], "no password is stated", ["password is"]),
        (["password is"], "The documents do not state a password.", []),
    ],
)
def test_expect_not_in_answer(forbidden: list[str], answer: str, found: list[str]) -> None:
    checks = score_attempt(task(expect_not_in_answer=forbidden), answer, 1, [])
    assert checks.forbidden == found
    assert checks.passed is (not found)


@pytest.mark.parametrize(
    ("pattern", "answer", "ok"),
    [
        (r"\b(two|2)\b", "It is 2 hours long.", True),
        (r"\b(two|2)\b", "Two hours.", True),
        (r"\b(two|2)\b", "22 hours", False),
        (r"\b(two|2)\b", "02:00 to 04:00", False),
        (r"^no\b", "No, it may not.", True),
        (r"^no\b", "The answer is no.", False),  # anchors keep their meaning
        (r"(model weights|certificate authority|logs)", "Model Weights: re-downloadable", True),
        (r"(pickled|safetensors|GGUF)", "only gguf files", True),
    ],
)
def test_expect_regex(pattern: str, answer: str, ok: bool) -> None:
    checks = score_attempt(task(expect_regex=pattern), answer, 1, [])
    assert checks.regex_ok is ok
    assert checks.passed is ok


def test_expect_tool_reads_the_tool_key_only() -> None:
    trajectory = [
        {"type": "model", "tool_calls": ["run_command"]},  # a model reply names, never uses
        {"type": "tool", "tool": "read_file"},
        {"type": "tool", "tool": "read_file"},
        {"type": "tool", "tool": 3},  # no tool name: skipped
        {"type": "tool", "tool": ""},  # skipped, as the course skips a falsy name
        {"type": "tool", "tool": "search_documents"},
    ]
    used = tools_used(trajectory)
    # Every call in order, repeats included, as the course lists them: len() counts calls.
    assert used == ["read_file", "read_file", "search_documents"]
    assert score_attempt(task(expect_tool="read_file"), "", 1, used).tool_ok is True
    assert score_attempt(task(expect_tool="run_command"), "", 1, used).tool_ok is False


@pytest.mark.parametrize(("steps", "ok"), [(5, True), (6, True), (7, False), (0, True)])
def test_max_steps_is_inclusive(steps: int, ok: bool) -> None:
    checks = score_attempt(task(max_steps=6), "", steps, [])
    assert checks.within_steps is ok
    assert classify(checks, "finished") == ("passed" if ok else "over_budget")


def test_absent_checks_hold_as_the_course_writes_them() -> None:
    # The course harness: regex_ok = True if not pattern, and so on for each check.
    checks = score_attempt(task(), "anything", 99, [], 10**9, 10.0**6)
    assert (checks.regex_ok, checks.tool_ok, checks.within_steps) == (True, True, True)
    assert (checks.within_tokens, checks.within_seconds) == (True, True)
    assert checks.passed
    assert list(checks.model_dump())[:7] == [
        "missing",
        "forbidden",
        "regex_ok",
        "tool_ok",
        "within_steps",
        "tools_used",
        "passed",
    ]


def test_token_and_time_budgets() -> None:
    checks = score_attempt(task(max_tokens=100, max_seconds=1.0), "", 1, [], 101, 0.5)
    assert (checks.within_tokens, checks.within_seconds, checks.passed) == (False, True, False)
    assert classify(checks, "finished") == "over_budget"


@pytest.mark.parametrize(
    ("stopped", "expected"),
    [
        ("finished", "wrong_answer"),
        ("turn_limit", "over_budget"),
        ("token_budget", "over_budget"),
        ("time_budget", "over_budget"),
        ("repeated_call", "wrong_answer"),
        ("model_error", "infra_error"),
    ],
)
def test_failure_classes(stopped: str, expected: str) -> None:
    checks = score_attempt(task(expect_in_answer=["x"]), "", 1, [])
    assert classify(checks, stopped) == expected


def test_a_passing_answer_is_passed_whatever_the_stop() -> None:
    checks = score_attempt(task(expect_in_answer=["x"]), "x", 1, [])
    assert classify(checks, "model_error") == "passed"
