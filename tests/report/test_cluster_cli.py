"""`--cluster group|category|none` through `report` and `compare`: one group against
many, checked against the CR1 sandwich reference written out with numpy."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from agent_eval.score import stats

Invoke = Callable[..., tuple[int, str, str]]
MakeResults = Callable[..., Path]


def sandwich_se(values: list[float], clusters: list[str]) -> float:
    """Intercept-only OLS with the CR1 cluster-robust variance, G/(G-1) scaled."""
    y = np.asarray(values, dtype=float)
    resid = y - y.mean()
    labels = sorted(set(clusters))
    meat = sum(resid[[i for i, c in enumerate(clusters) if c == g]].sum() ** 2 for g in labels)
    g = len(labels)
    return float(np.sqrt(g / (g - 1) * meat / len(y) ** 2))


OUTCOMES = {f"t{i}": [i % 3 != 0, i % 2 == 0] for i in range(6)}


def grouped(groups: dict[str, str]) -> dict[str, dict[str, str]]:
    return {task: {"group": group} for task, group in groups.items()}


def test_report_cluster_group_one_group_against_many(
    agent_eval: Invoke, make_results: MakeResults
) -> None:
    many = make_results(OUTCOMES, name="many.json",
                        row_extra=grouped({f"t{i}": f"doc{i // 2}" for i in range(6)}))  # fmt: skip
    one = make_results(OUTCOMES, name="one.json",
                       row_extra=grouped({f"t{i}": "doc" for i in range(6)}))  # fmt: skip
    rates = [sum(v) / 2 for v in OUTCOMES.values()]
    labels = [f"doc{i // 2}" for i in range(6)]
    summary = json.loads(agent_eval("report", many, "--cluster", "group", "--format", "json")[1])[
        "summary"
    ]
    assert summary["cluster"] == {"by": "group", "clusters": 3}
    assert summary["task_se"] == pytest.approx(sandwich_se(rates, labels))
    plain = json.loads(agent_eval("report", many, "--format", "json")[1])["summary"]
    assert plain["cluster"] == {"by": "none", "clusters": 6}
    assert plain["task_se"] == pytest.approx(stats.mean_estimate(rates).se)
    text = agent_eval("report", one, "--cluster", "group")[1]
    row = next(line for line in text.splitlines() if "│ mean over tasks" in line)
    cells = [cell.strip() for cell in row.split("│")[1:-1]]
    assert cells[:3] == ["mean over tasks", "0.583", "cannot be estimated"]
    single = json.loads(agent_eval("report", one, "--cluster", "group", "--format", "json")[1])
    assert single["summary"]["cluster"] == {"by": "group", "clusters": 1}
    assert (single["summary"]["task_se"], single["summary"]["task_ci95"]) == (None, None)
    assert single["summary"]["not_estimable"]["task_ci95"] == (
        "one cluster; a cluster-robust spread needs 2 or more"
    )
    # the clustered mean, without an interval
    assert "success 0.583 (mean over tasks clustered by group);" in text
    by_category = json.loads(
        agent_eval("report", one, "--cluster", "category", "--format", "json")[1]
    )["summary"]
    assert by_category["cluster"] == {"by": "category", "clusters": 1}
    code, _, err = agent_eval("report", one, "--cluster", "document")
    assert code == 1 and "Invalid value for '--cluster'" in err


def test_compare_cluster_group(agent_eval: Invoke, make_results: MakeResults) -> None:
    b_outcomes = {f"t{i}": [True, i % 2 == 0] for i in range(6)}
    extra = grouped({f"t{i}": f"doc{i // 2}" for i in range(6)})
    a = make_results(OUTCOMES, name="a.json", row_extra=extra)
    b = make_results(b_outcomes, name="b.json", row_extra=extra)
    result = json.loads(agent_eval("compare", a, b, "--cluster", "group", "--format", "json")[1])
    diffs = [sum(b_outcomes[t]) / 2 - sum(OUTCOMES[t]) / 2 for t in OUTCOMES]
    labels = [f"doc{i // 2}" for i in range(6)]
    assert result["cluster"] == {"by": "group", "clusters": 3}
    assert result["se_paired"] == pytest.approx(sandwich_se(diffs, labels))
    within = (result["sigma2_a"] + result["sigma2_b"]) / 2  # K = 2 repeats
    assert result["omega2"] == pytest.approx(max(0.0, 6 * sandwich_se(diffs, labels) ** 2 - within))
    plain = json.loads(agent_eval("compare", a, b, "--format", "json")[1])
    assert plain["se_paired"] == pytest.approx(stats.mean_estimate(diffs).se)
    assert plain["p_fixed_suite"] == result["p_fixed_suite"]  # within tasks either way
    one = grouped({f"t{i}": "doc" for i in range(6)})
    a1 = make_results(OUTCOMES, name="a1.json", row_extra=one)
    b1 = make_results(b_outcomes, name="b1.json", row_extra=one)
    single = json.loads(agent_eval("compare", a1, b1, "--cluster", "group", "--format", "json")[1])
    assert (single["se_paired"], single["ci95"], single["p_population"]) == (None, None, None)
    assert (single["repeats_needed"], single["mde"]) == (None, None)
    assert "All paired tasks fall in one group cluster" in single["verdict"]
    assert single["not_estimable"]["repeats_needed"] == (
        "one cluster; a cluster-robust spread needs 2 or more"
    )
    text = agent_eval("compare", a1, b1, "--cluster", "group")[1]
    assert "clustered by" in text and "one cluster; a cluster-robust spread needs 2" in text
