"""Runs that show no variation (all pass, all fail, one task, one attempt) in every format:
a figure the data cannot estimate says so and why, and is never a zero-width interval,
an SE of 0, a detectable difference of 0 or a number of repeats."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_eval.score import planning

Invoke = Callable[..., tuple[int, str, str]]
MakeResults = Callable[..., Path]
TASKS = [f"t{i:02d}" for i in range(15)]
CASES: dict[str, dict[str, list[bool]]] = {
    "all pass": {t: [True] * 3 for t in TASKS},
    "all fail": {t: [False] * 3 for t in TASKS},
    "one task": {"t00": [True, False, True]},
    "one attempt": {t: [i % 3 == 0] for i, t in enumerate(TASKS)},
    "one attempt, all fail": {t: [False] for t in TASKS},
}
NO_SPREAD = re.compile(r"every task has the same pass rate \((0|1)\.000\); no spread")
ZERO_CLAIMS = re.compile(r"SE 0\.000|\[([+-]?\d\.\d+), \1\]|about [+-]?0\.000")
"""A zero standard error, an interval whose ends are equal, a detectable difference of 0."""


def report(agent_eval: Invoke, path: Path, fmt: str) -> str:
    code, out, err = agent_eval("report", path, "--format", fmt)
    assert (code, err) == (0, "")
    return out


def strict_json(constant: str) -> None:
    raise AssertionError(f"{constant} in a JSON report: JSON has no such value, use null")


def nulls_have_reasons(figures: dict[str, Any], why: dict[str, Any], keys: list[str]) -> None:
    for key in keys:
        value = figures[key]
        if isinstance(value, dict):  # per k
            missing = [k for k, v in value.items() if v is None]
            assert all(k in why.get(key, {}) for k in missing), (key, missing)
        elif value is None:
            assert why.get(key), key
        else:
            assert key not in why, key


@pytest.mark.parametrize("case", list(CASES))
def test_report_json_gives_a_reason_for_every_missing_figure(
    agent_eval: Invoke, make_results: MakeResults, case: str
) -> None:
    text = report(agent_eval, make_results(CASES[case]), "json")
    summary = json.loads(text, parse_constant=strict_json)["summary"]
    keys = ["task_se", "task_ci95", "pass_at_k_se", "pass_hat_k_se", "within_task_var"]
    nulls_have_reasons(summary, summary["not_estimable"], keys)
    if case != "one attempt":  # the only case here whose tasks differ
        assert (summary["task_se"], summary["task_ci95"]) == (None, None)
    for category in summary["categories"].values():
        nulls_have_reasons(category, category["not_estimable"], ["task_ci95"])


@pytest.mark.parametrize(
    ("case", "why"),
    [
        ("all pass", "every task has the same pass rate (1.000); no spread to estimate from"),
        ("all fail", "every task has the same pass rate (0.000); no spread to estimate from"),
        ("one task", "one task; a spread needs 2 or more"),
        ("one attempt, all fail", "every task has the same pass rate (0.000); no spread"),
    ],
)
@pytest.mark.parametrize("fmt", ["text", "markdown", "html"])
def test_report_says_the_interval_cannot_be_estimated_and_why(
    agent_eval: Invoke, make_results: MakeResults, case: str, why: str, fmt: str
) -> None:
    out = report(agent_eval, make_results(CASES[case]), fmt)
    flat = " ".join(re.sub(r"[│|]|</?t[dh][^>]*>", " ", out).split())
    assert "mean over tasks" in flat
    assert f"SE and interval cannot be estimated: {why}" in flat
    assert "SE cannot be estimated" in flat
    assert not ZERO_CLAIMS.search(flat), ZERO_CLAIMS.search(flat)


@pytest.mark.parametrize("fmt", ["text", "markdown", "html"])
@pytest.mark.parametrize(
    ("case", "why"),
    [
        ("one task", "one task; the split between tasks needs 2 or more"),
        ("one attempt", "some task has one attempt; the split needs 2 or more per task"),
    ],
)
def test_report_says_why_the_variance_split_is_missing(
    agent_eval: Invoke, make_results: MakeResults, case: str, why: str, fmt: str
) -> None:
    out = report(agent_eval, make_results(CASES[case]), fmt)
    flat = " ".join(re.sub(r"[│|]|</?t[dh][^>]*>", " ", out).split())
    assert f"variance split - cannot be estimated: {why}" in flat


@pytest.mark.parametrize("fmt", ["text", "markdown", "html"])
def test_a_run_with_variation_still_shows_its_figures(
    agent_eval: Invoke, make_results: MakeResults, fmt: str
) -> None:
    mixed = {t: [i % 2 == 0, i % 3 == 0, i % 5 == 0] for i, t in enumerate(TASKS)}
    out = report(agent_eval, make_results(mixed), fmt)
    assert "cannot be estimated" not in out
    assert re.search(r"SE 0\.\d{3}, t on 14 df", out)


@pytest.mark.parametrize("case", list(CASES))
def test_junit_of_a_degenerate_run(
    agent_eval: Invoke, make_results: MakeResults, case: str
) -> None:
    suite = ET.fromstring(report(agent_eval, make_results(CASES[case]), "junit"))
    outcomes = CASES[case]
    failing = sum(not all(a) for a in outcomes.values())
    assert (suite.get("tests"), suite.get("failures")) == (str(len(outcomes)), str(failing))
    assert len(suite.findall("testcase")) == len(outcomes)
    assert len(suite.findall("testcase/failure")) == failing


COMPARES = {
    "both fail everything": ("all fail", "all fail"),
    "both pass everything": ("all pass", "all pass"),
    "fail everything, then pass everything": ("all fail", "all pass"),
    "one task": ("one task", "one task"),
    "one attempt, no variation": ("one attempt, all fail", "one attempt, all fail"),
}


def compare(
    agent_eval: Invoke, make_results: MakeResults, case: str, *flags: str
) -> tuple[dict[str, Any], str]:
    a, b = COMPARES[case]
    path_a = make_results(CASES[a], name="a.json")
    path_b = make_results(CASES[b], name="b.json", model="local/answer")
    code, out, err = agent_eval("compare", path_a, path_b, "--format", "json", *flags)
    assert (code, err) == (0, "")
    code, text, err = agent_eval("compare", path_a, path_b, *flags)
    assert (code, err) == (0, "")
    return json.loads(out), text


FIGURES = ["se_paired", "ci95", "se_unpaired", "correlation", "p_population", "mde"]


@pytest.mark.parametrize("case", list(COMPARES))
@pytest.mark.parametrize("flags", [(), ("--delta", "0.1")])
def test_compare_gives_a_reason_for_every_missing_figure(
    agent_eval: Invoke, make_results: MakeResults, case: str, flags: tuple[str, ...]
) -> None:
    result, text = compare(agent_eval, make_results, case, *flags)
    why = result["not_estimable"]
    assert result["ci95"] is None and result["mde"] is None
    assert result["repeats_needed"] is None and "repeats_needed" in why
    nulls_have_reasons(result, why, [*FIGURES, "repeats_needed", "tasks_needed"])
    flat = " ".join(text.replace("│", " ").split())
    assert "cannot be estimated, and why:" in flat
    assert "95% cannot be estimated" in flat
    assert "minimum detectable difference cannot be estimated" in flat
    assert "its interval cannot be estimated" in result["verdict"]
    assert not ZERO_CLAIMS.search(flat), ZERO_CLAIMS.search(flat)
    assert all(why[key] in flat for key in ("ci95", "mde", "repeats_needed"))


def test_compare_without_variation_names_the_cause(
    agent_eval: Invoke, make_results: MakeResults
) -> None:
    result, text = compare(agent_eval, make_results, "both fail everything")
    why = result["not_estimable"]
    assert why["ci95"] == "every task has the same difference (0.000); no spread to estimate from"
    assert why["mde"] == why["repeats_needed"] == planning.NO_VARIATION
    assert NO_SPREAD.search(why["se_unpaired"])
    assert result["p_fixed_suite"] == 1.0  # exact: no attempt could be relabelled otherwise
    assert (
        f"Nothing can be planned from these runs: {planning.NO_VARIATION}." in (result["verdict"])
    )
    assert "[+0.000, +0.000]" not in text and "about 0.000" not in text


def test_compare_of_one_attempt_each_says_repeats_are_needed(
    agent_eval: Invoke, make_results: MakeResults
) -> None:
    result, _ = compare(agent_eval, make_results, "one attempt, no variation")
    why = result["not_estimable"]
    assert why["repeats_needed"] == why["sigma2_a"] == planning.ONE_ATTEMPT
    assert why["mde"].endswith("the difference was the same on every task")
    assert "Repeats >= 2 per task are needed to plan" in result["verdict"]
