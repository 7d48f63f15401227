"""The report's headline gives one figure with one interval, named, to the digits of its
row in the Success table, and never claims a verification that did not happen."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Invoke = Callable[..., tuple[int, str, str]]
FORMATS = ("text", "markdown", "html", "junit", "json")


def table_row(text: str, figure: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith(f"│ {figure} "))
    return [cell.strip() for cell in line.split("│")[1:-1]]


def test_with_repeats_the_headline_is_the_mean_over_tasks_row(
    agent_eval: Invoke, make_results: Callable[..., Path]
) -> None:
    path = make_results({"t1": [True, True], "t2": [False, False], "t3": [True, False]})
    text = agent_eval("report", path)[1]
    mean = table_row(text, "mean over tasks")
    headline = text.splitlines()[2]
    assert headline.startswith(f"success {mean[1]} {mean[2]} (mean over tasks, t-interval)")
    wilson = table_row(text, "success rate")
    assert wilson[2] not in headline  # the Wilson interval is the table's, not the headline's


def test_with_one_attempt_a_task_the_headline_is_the_wilson_row(
    agent_eval: Invoke, make_results: Callable[..., Path]
) -> None:
    path = make_results({"t1": [True], "t2": [False], "t3": [True]})
    text = agent_eval("report", path)[1]
    rate = table_row(text, "success rate")
    assert text.splitlines()[2].startswith(
        f"success {rate[1]} {rate[2]} (success rate, Wilson interval)"
    )


@pytest.mark.parametrize("form", FORMATS)
def test_no_format_says_verified(
    agent_eval: Invoke, make_results: Callable[..., Path], tmp_path: Path, form: str
) -> None:
    path = make_results({"t1": [True, True], "t2": [False, True]})
    out = tmp_path / f"report.{form}"
    code, stdout, _ = agent_eval("report", path, "--format", form, "--out", out)
    written = out.read_text(encoding="utf-8") if out.exists() else stdout
    assert code == 0 and written
    assert not re.search(r"\bverified success\b", written, re.IGNORECASE)
    if form == "json":
        summary: dict[str, Any] = json.loads(written)["summary"]
        assert summary["headline"].startswith(f"success {summary['task_mean']:.3f} [")
