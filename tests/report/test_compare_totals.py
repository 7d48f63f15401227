"""`compare` from each run's totals, run B loaded in a second process: the same comparison
and the same errors as from the loaded runs in one process."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_eval.report import compare_runs, compare_totals, load_results, render_compare, run_totals

Invoke = Callable[..., tuple[int, str, str]]
MakeResults = Callable[..., Path]


@pytest.fixture
def pair(make_results: MakeResults) -> tuple[Path, Path]:
    """Two runs of one suite in two categories and groups, one pass flagged as copied,
    priced, with a task only A ran and unequal repeats."""
    a = {"x": [True, False, True], "y": [False, False], "z": [True], "w": [False, True]}
    b = {"x": [True, True, True], "y": [True, False], "z": [False], "v": [True]}
    categories = {"x": "retrieval", "y": "arithmetic", "z": "arithmetic", "w": "state"}
    extra = {"x": {"group": "g1", "copied_share": 0.95, "answer": "copied words " * 40},
             "y": {"group": "g2"}, "z": {"group": "g2"}}  # fmt: skip
    prices = {"per_million": None, "input_per_million": 0.5, "output_per_million": 1.5}
    common = {"categories": categories, "row_extra": extra, "prices": prices}
    return (
        make_results(a, name="a.json", **common),
        make_results(b, name="b.json", model="local/other", **common),
    )


@pytest.mark.parametrize("cluster", ["none", "group", "category"])
def test_totals_compare_as_the_loaded_runs(pair: tuple[Path, Path], cluster: str) -> None:
    a, b = map(load_results, pair)
    expected = compare_runs(a, b, cluster=cluster)
    assert compare_totals(run_totals(a), run_totals(b), cluster=cluster) == expected
    assert expected["copied"]["a"] == 2 and expected["figures"]["cost"]["a"] is not None


@pytest.mark.parametrize("copied_share", [None, 0.95])
def test_counting_the_copied_passes_as_failures_changes_only_what_they_touch(
    make_results: MakeResults, copied_share: float | None
) -> None:
    """Flagged passes count as failures in the figures "without" them; with none flagged,
    those figures are the comparison's own and the verdict says nothing of copies."""
    a = make_results({"x": [True, False], "y": [False, False], "z": [True, True]}, name="a.json")
    outcomes = {"x": [True, True], "y": [True, False], "z": [True, True]}
    extra = {"z": {"copied_share": copied_share, "answer": "copied words " * 40}}
    b = make_results(outcomes, name="b.json", row_extra=extra)
    result = compare_runs(load_results(a), load_results(b))
    copied = result["copied"]
    if copied_share is None:
        assert copied == {"a": 0, "b": 0, "difference_without": result["difference"],
                          "p_fixed_suite_without": result["p_fixed_suite"],
                          "moves_difference": False}  # fmt: skip
        assert "copy" not in result["verdict"]
    else:  # z's two passes in B fail: differences 0.5, 0.5, -1 rather than 0.5, 0.5, 0
        assert (copied["a"], copied["b"], copied["moves_difference"]) == (0, 2, True)
        assert result["difference"] == pytest.approx(1 / 3)
        assert copied["difference_without"] == pytest.approx(0)
        assert copied["p_fixed_suite_without"] != result["p_fixed_suite"]
        assert "0 of A's and 2 of B's passes mostly copy" in result["verdict"]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_the_command_prints_the_loaded_runs_comparison(
    agent_eval: Invoke, pair: tuple[Path, Path], fmt: str
) -> None:
    a, b = pair
    code, out, err = agent_eval("compare", a, b, "--format", fmt, "--cluster", "group")
    expected = compare_runs(load_results(a), load_results(b), cluster="group")
    assert (code, out, err) == (0, render_compare(expected, fmt), "")
    if fmt == "json":
        assert json.loads(out)["only_a"] == ["w"]


def test_a_damaged_b_gives_its_own_error(agent_eval: Invoke, pair: tuple[Path, Path]) -> None:
    a, b = pair
    b.write_text(b.read_text()[:-40])
    code, out, err = agent_eval("compare", a, b)
    assert (code, out) == (1, "")
    assert (
        err
        == f"Error: results file {b}: not valid JSON at line 1 column "
        + (err.split(" column ", 1)[1])
    )
    assert "the file is damaged or truncated" in err
    _, _, report_err = agent_eval("report", b)
    assert err == report_err


def test_a_damaged_a_is_named_before_b(agent_eval: Invoke, pair: tuple[Path, Path]) -> None:
    a, b = pair
    for path in (a, b):
        document = json.loads(path.read_text())
        document["results"][0]["steps"] = "many"
        path.write_text(json.dumps(document))
    code, out, err = agent_eval("compare", a, b)
    assert (code, out) == (1, "")
    assert err.startswith(f"Error: results file {a}: results[0].steps: ")


def test_a_missing_b_is_named(agent_eval: Invoke, pair: tuple[Path, Path], tmp_path: Path) -> None:
    missing = tmp_path / "gone.json"
    code, _, err = agent_eval("compare", pair[0], missing)
    assert code == 1 and err.startswith(f"Error: results file {missing}: not found")
