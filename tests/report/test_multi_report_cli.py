"""The four numbers everywhere, and `report A B C`: one row per configuration and the
paired verdicts against a baseline, in every format; different suites are refused."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_eval.report.text import fmt_sig
from agent_eval.score import stats

Invoke = Callable[..., tuple[int, str, str]]
MakeResults = Callable[..., Path]
PRICE = {"per_million": 0.5, "input_per_million": None, "output_per_million": None}


def cells(text: str, label: str) -> list[str]:
    """The cells of the table row that starts with ``label``."""
    for line in text.splitlines():
        found = [cell.strip() for cell in line.split("│")[1:-1]]
        if found and found[0] == label:
            return found
    raise AssertionError(f"no row {label!r} in:\n{text}")


@pytest.mark.parametrize(
    ("value", "shown"),
    [(0.000617, "0.000617"), (0.0006174, "0.000617"), (12.345, "12.3"), (1234.5, "1234"),
     (0.0, "0"), (None, "-"), (1.0, "1.00")],
)  # fmt: skip
def test_significant_digits(value: float | None, shown: str) -> None:
    assert fmt_sig(value) == shown


def test_report_shows_all_four_numbers_and_a_readable_cost(
    agent_eval: Invoke, make_results: MakeResults
) -> None:
    path = make_results({"t1": [True, False], "t2": [True, True]}, prices=PRICE)
    code, out, _ = agent_eval("report", path)
    assert code == 0
    # Attempts 1 and 2 of each task: steps 4 and 5, tokens 1100 and 1200, 1.5 s each.
    assert "steps         4.50 per attempt" in out.splitlines()
    assert "tokens        4600 total, 1150.0 per attempt" in out.splitlines()
    assert "seconds       1.50 per attempt" in out.splitlines()
    assert "cost          0.00230 total, 0.000575 per attempt (per_million=0.5)" in out.splitlines()
    markdown = agent_eval("report", path, "--format", "markdown")[1]
    assert "- per attempt: 4.50 steps, 1150 tokens, 1.50 seconds" in markdown
    assert "- cost 0.00230 total, 0.000575 per attempt" in markdown


def test_compare_gives_each_side_and_the_paired_difference_of_every_figure(
    agent_eval: Invoke, make_results: MakeResults
) -> None:
    a = make_results({"t1": [True], "t2": [False], "t3": [True]}, name="a.json", prices=PRICE)
    b = make_results(
        {"t1": [True], "t2": [True], "t3": [True]},
        name="b.json",
        prices=PRICE,
        row_extra={"t1": {"tokens": 3100, "steps": 9}, "t2": {"seconds": 4.5}},
    )
    code, out, _ = agent_eval("compare", a, b, "--format", "json")
    assert code == 0
    figures = json.loads(out)["figures"]
    token_diffs = [2000.0, 0.0, 0.0]
    est = stats.mean_estimate(token_diffs)
    assert figures["tokens"]["a"] == 1100 and figures["tokens"]["b"] == pytest.approx(5300 / 3)
    assert figures["tokens"]["difference"] == pytest.approx(2000 / 3)
    assert figures["tokens"]["se"] == pytest.approx(statistics.stdev(token_diffs) / 3**0.5)
    assert figures["tokens"]["ci95"] == pytest.approx([est.lo, est.hi])
    assert figures["steps"]["difference"] == pytest.approx(5 / 3)
    assert figures["seconds"]["difference"] == pytest.approx(1.0)
    assert figures["cost"]["difference"] == pytest.approx(2000 * 0.5 / 1e6 / 3)
    text = agent_eval("compare", a, b)[1]
    assert cells(text, "mean steps") == ["mean steps", "4.00", "5.67", "+1.67", "[-5.50, 8.84]"]
    assert cells(text, "mean tokens")[:4] == ["mean tokens", "1100", "1767", "+667"]
    assert cells(text, "mean seconds")[:4] == ["mean seconds", "1.50", "2.50", "+1.00"]
    assert cells(text, "cost per attempt")[:4] == [
        "cost per attempt", "0.000550", "0.000883", "+0.000333"]  # fmt: skip


def test_compare_says_when_a_side_is_not_priced(
    agent_eval: Invoke, make_results: MakeResults
) -> None:
    a = make_results({"t1": [True]}, name="a.json", prices=PRICE)
    b = make_results({"t1": [True]}, name="b.json")
    out = agent_eval("compare", a, b)[1]
    assert cells(out, "cost per attempt") == ["cost per attempt", "0.000550", "-", "not priced", ""]


def test_one_table_for_many_configurations(
    agent_eval: Invoke, make_results: MakeResults, tmp_path: Path
) -> None:
    base = make_results({"t1": [True], "t2": [False], "t3": [False]}, name="base.json",
                        prices=PRICE)  # fmt: skip
    better = make_results({"t1": [True], "t2": [True], "t3": [True]}, name="better.json",
                          model="big", prices=PRICE)  # fmt: skip
    same = make_results({"t1": [True], "t2": [False], "t3": [False]}, name="same.json",
                        scaffold="builtin:multi-agent")  # fmt: skip
    code, out, err = agent_eval("report", base, better, same, "--format", "json")
    assert (code, err) == (0, "")
    doc = json.loads(out)
    rows = {row["name"]: row for row in doc["configurations"]}
    assert list(rows) == ["base", "better", "same"]
    assert rows["better"]["model"] == "big"
    assert rows["base"]["success"] == pytest.approx(1 / 3)
    assert rows["base"]["success_ci95"] == pytest.approx(list(stats.wilson_interval(1, 3)))
    assert rows["base"]["mean_cost"] == pytest.approx(1100 * 0.5 / 1e6)
    assert rows["same"]["mean_cost"] is None  # not priced
    assert (rows["base"]["mean_steps"], rows["base"]["mean_seconds"]) == (4, 1.5)
    assert doc["baseline"]["name"] == "base"
    verdicts = {v["name"]: v for v in doc["verdicts"]}
    assert list(verdicts) == ["better", "same"]
    assert verdicts["better"]["difference"] == pytest.approx(2 / 3)
    assert verdicts["better"]["p_fixed_suite"] == pytest.approx(0.5)  # McNemar b=2, c=0
    assert verdicts["same"]["difference"] == 0
    text = agent_eval("report", base, better, same)[1]
    assert "paired against base (builtin:minimal x local/chat), B - A by task:" in text
    line = next(x for x in text.splitlines() if x.startswith("  better: "))
    assert line.startswith("  better: +0.667 [") and "p this suite 0.5000 (McNemar exact" in line
    # --baseline picks the run the others are paired against, even one not listed.
    doc = json.loads(agent_eval("report", better, same, "--baseline", base, "--format", "json")[1])
    assert [row["name"] for row in doc["configurations"]] == ["base", "better", "same"]
    assert [v["name"] for v in doc["verdicts"]] == ["better", "same"]
    html = tmp_path / "m.html"
    assert agent_eval("report", base, better, "--format", "html", "--out", html)[0] == 0
    page = html.read_text()
    assert page.count("<svg") == 2 and "http://" not in page.replace("http://www.w3.org", "")
    md = agent_eval("report", base, better, "--format", "markdown")[1]
    assert md.splitlines()[0] == "## 2 configurations on `part26` 1.0"


def test_runs_of_different_suites_are_refused_unless_allowed(
    agent_eval: Invoke, make_results: MakeResults
) -> None:
    a = make_results({"t1": [True], "t2": [False]}, name="a.json")
    b = make_results({"t1": [True], "t2": [True]}, name="b.json", suite_hash="b" * 64)
    code, out, err = agent_eval("report", a, b)
    assert code == 1 and out == ""
    assert err.startswith("Error: compare ") and "the runs used different suites" in err
    assert "pass --allow-suite-change" in err
    code, out, err = agent_eval("report", a, b, "--allow-suite-change", "--format", "json")
    assert code == 0 and json.loads(out)["verdicts"][0]["suite_changed"] is True
    code, _, err = agent_eval("report", a, b, "--format", "junit")
    assert code == 1 and err == (
        "Error: report: --format junit takes one results file; with several use one of "
        "text, markdown, html, json\n"
    )
