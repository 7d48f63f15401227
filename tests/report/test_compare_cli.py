"""`agent-eval compare` black-box on the worked example of docs/statistics.md, as results files."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from agent_eval.score import planning

Invoke = Callable[..., tuple[int, str, str]]
MakeResults = Callable[..., Path]


def _runs(
    repeats: int, b_passes: dict[int, int]
) -> tuple[dict[str, list[bool]], dict[str, list[bool]]]:
    """A passes tasks 0-8 every time and fails 9-14; B's passes per task override A's."""
    a = {f"t{i:02d}": [i < 9] * repeats for i in range(15)}
    b = dict(a)
    for index, passes in b_passes.items():
        b[f"t{index:02d}"] = [True] * passes + [False] * (repeats - passes)
    return a, b


@pytest.fixture
def concentrated(make_results: MakeResults) -> tuple[Path, Path]:
    """+1.0, +0.8, +0.7 on three of A's failing tasks, -0.5 on a passing one; 10 repeats."""
    a, b = _runs(10, {9: 10, 10: 8, 11: 7, 8: 5})
    return make_results(a, name="a.json"), make_results(b, name="b.json", model="local/answer")


@pytest.fixture
def spread(make_results: MakeResults) -> tuple[Path, Path]:
    """The same +2/15 as p = 1/3 on all six of A's failing tasks; 9 repeats."""
    a, b = _runs(9, dict.fromkeys(range(9, 15), 3))
    return make_results(a, name="a.json"), make_results(b, name="b.json", model="local/answer")


def test_concentrated_gain_needs_tasks_not_repeats(
    agent_eval: Invoke, concentrated: tuple[Path, Path]
) -> None:
    code, out, err = agent_eval("compare", *concentrated, "--format", "json")
    assert (code, err) == (0, "")
    r = json.loads(out)
    assert r["tasks"] == 15
    assert (r["mean_a"], r["mean_b"]) == (pytest.approx(0.6), pytest.approx(11 / 15))
    assert r["difference"] == pytest.approx(2 / 15)
    d = [0.0] * 8 + [-0.5, 1.0, 0.8, 0.7] + [0.0] * 3
    assert r["se_paired"] == pytest.approx(np.std(d, ddof=1) / math.sqrt(15))
    assert r["p_population"] > 0.05 and r["p_fixed_suite"] < 0.001
    assert r["fixed_suite_test"] == "exact within-task permutation"
    sigma2_b = 10 / 9 * (0.25 + 0.16 + 0.21) / 15
    assert r["omega2"] == pytest.approx(np.var(d, ddof=1) - sigma2_b / 10)
    assert r["repeats_needed"] is None
    assert r["mde"] == pytest.approx(
        math.sqrt(planning.z_sum() ** 2 * (r["omega2"] + sigma2_b / 10) / 15)
    )
    assert (
        "Claim (b), on exactly this suite: B is better than A beyond attempt noise" in r["verdict"]
    )
    assert "Claim (a), on tasks like these: not shown" in r["verdict"]
    assert "no number of repeats is enough: add tasks" in r["verdict"]
    assert {"ci95", "correlation", "per_task"} <= set(r)
    changed = [row["task_id"] for row in r["per_task"] if row["change"] != "same"]
    assert changed == ["t08", "t09", "t10", "t11"]


def test_spread_gain_gives_a_number_of_repeats(
    agent_eval: Invoke, spread: tuple[Path, Path]
) -> None:
    code, out, _ = agent_eval("compare", *spread, "--format", "json")
    r = json.loads(out)
    assert code == 0
    # The estimators of docs/statistics.md on these files: sigma2_B = mean over tasks of
    # K/(K-1) m(1-m), omega2 = var(d, ddof=1) - sigma2_B/K, then
    # ceil(sigma2 / (n delta^2 / z^2 - omega2)).
    sigma2_b = 6 * (9 / 8 * (1 / 3) * (2 / 3)) / 15
    omega2 = float(np.var([0.0] * 9 + [1 / 3] * 6, ddof=1)) - sigma2_b / 9
    budget = 15 * (2 / 15) ** 2 / planning.z_sum() ** 2
    assert r["repeats_needed"] == math.ceil(sigma2_b / (budget - omega2)) == 7
    assert "about 7 repeats per task are needed at 15 tasks (these runs had 9)" in r["verdict"]
    assert "no number of repeats" not in r["verdict"]


def test_text_output(agent_eval: Invoke, concentrated: tuple[Path, Path]) -> None:
    code, out, err = agent_eval("compare", *concentrated)
    lines = out.splitlines()
    assert (code, err) == (0, "")
    a, b = concentrated
    assert lines[:3] == [
        f"A: builtin:minimal x local/chat  ({a})",
        f"B: builtin:minimal x local/answer  ({b})",
        "Tasks that changed (4 of 15)",
    ]
    assert "│ t08  │ retrieval │ 10/10 │ 5/10  │ worse (-0.50)  │" in lines
    figures = {
        cells[0]: cells[1]
        for cells in (
            [c.strip() for c in line.strip("│").split("│")]
            for line in lines
            if line.startswith("│ ") and line.count("│") == 3
        )
    }
    assert figures["repeats needed (delta 0.133)"] == "none is enough: add tasks"
    assert figures["p, this suite"] == "6.4e-06 (exact within-task permutation)"
    assert figures["difference B - A"] == "0.133  95% [-0.082, 0.348]"
    assert "verdict:" in lines


def test_fail_if_worse(agent_eval: Invoke, concentrated: tuple[Path, Path]) -> None:
    a, b = concentrated
    assert agent_eval("compare", a, b, "--fail-if-worse")[0] == 0
    code, _, err = agent_eval("compare", b, a, "--fail-if-worse")
    assert (code, err) == (2, "B is worse than A beyond attempt noise (--fail-if-worse)\n")
    assert agent_eval("compare", b, a)[0] == 0


def test_worse_within_noise_passes(agent_eval: Invoke, make_results: MakeResults) -> None:
    a = make_results({"x": [True], "y": [True], "z": [False]}, name="a.json")
    b = make_results({"x": [True], "y": [False], "z": [False]}, name="b.json")
    code, out, _ = agent_eval("compare", a, b, "--fail-if-worse", "--format", "json")
    r = json.loads(out)
    assert code == 0 and r["p_fixed_suite"] == 1.0 and r["repeats_needed"] is None
    assert r["fixed_suite_test"] == "McNemar exact (one attempt each)"
    assert "Repeats >= 2 per task are needed to plan" in r["verdict"]


def test_refuses_a_changed_suite(agent_eval: Invoke, make_results: MakeResults) -> None:
    a = make_results({"x": [True], "y": [False]}, name="a.json")
    b = make_results({"x": [True], "z": [True]}, name="b.json", suite_hash="b" * 64)
    assert agent_eval("compare", a, b) == (
        1,
        "",
        (
            f"Error: compare {a} {b}: the runs used different suites (part26 1.0 hash "
            f"{'a' * 12} against part26 1.0 hash {'b' * 12}), so a difference could come from the "
            "tasks rather than the agents; re-run both on one suite, or pass --allow-suite-change "
            "to pair the task ids they share\n"
        ),
    )
    code, out, _ = agent_eval("compare", a, b, "--allow-suite-change", "--format", "json")
    r = json.loads(out)
    assert code == 0 and r["tasks"] == 1 and (r["only_a"], r["only_b"]) == (["y"], ["z"])
    assert r["verdict"].endswith("The suites differ: only the shared task ids were paired.")


def test_bad_planning_flags(agent_eval: Invoke, concentrated: tuple[Path, Path]) -> None:
    code, _, err = agent_eval("compare", *concentrated, "--alpha", "1.5")
    assert code == 1 and err == (
        "Error: compare: --alpha 1.5 and --power 0.8 must each lie "
        "strictly between 0 and 1 (for example --alpha 0.05 "
        "--power 0.8)\n"
    )
    code, out, _ = agent_eval("compare", *concentrated, "--delta", "0.5", "--format", "json")
    assert code == 0 and json.loads(out)["delta"] == 0.5


def test_many_changed_tasks_are_plain_aligned_text(
    agent_eval: Invoke, make_results: MakeResults
) -> None:
    from agent_eval.report.text import PLAIN_ABOVE

    ids = [f"t{i:03d}" for i in range(PLAIN_ABOVE + 2)]
    a = make_results({t: [True, True] for t in ids}, name="a.json")
    b = make_results(
        {t: [i % 2 == 0, False] for i, t in enumerate(ids)} | {"t201": [True, True]}, name="b.json"
    )
    code, out, _ = agent_eval("compare", a, b)
    lines = out.splitlines()
    assert code == 0
    assert lines[2:7] == [
        "Tasks that changed (201 of 202)",
        "task  category   A    B    change",
        "----  ---------  ---  ---  -------------",
        "t000  retrieval  2/2  1/2  worse (-0.50)",
        "t001  retrieval  2/2  0/2  worse (-1.00)",
    ]
    assert lines[5 + PLAIN_ABOVE : 7 + PLAIN_ABOVE] == [
        "t200  retrieval  2/2  1/2  worse (-0.50)",
        "Paired by task",
    ]
