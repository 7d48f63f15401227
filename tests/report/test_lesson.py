"""The demo's closing lesson, rendered from saved runs: table, verdicts, unstable tasks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agent_eval.report import compare_runs, load_results, summarise_run
from agent_eval.report.lesson import pair_verdict, render_lesson

MakeResults = Callable[..., Path]

TASKS = [f"t-{i:02d}" for i in range(15)]


def suite(passing: dict[str, list[bool]]) -> dict[str, list[bool]]:
    """15 tasks x 3 attempts: the given outcomes, every other task failed three times."""
    return {t: passing.get(t, [False, False, False]) for t in TASKS}


def runs(make_results: MakeResults, **scaffolds: dict[str, list[bool]]) -> list[Path]:
    return [
        make_results(suite(outcomes), name=f"{name}.json", scaffold=name)
        for name, outcomes in scaffolds.items()
    ]


def lesson(paths: list[Path], price: float = 0.5, example: bool = True) -> str:
    return render_lesson([load_results(p) for p in paths], price, example)


def test_a_large_gap_is_real_on_the_suite_and_for_tasks_like_these(
    make_results: MakeResults,
) -> None:
    strong = {t: [True, True, True] for t in TASKS[:12]}
    paths = runs(make_results, weak={}, strong=strong)
    text = lesson(paths)
    (verdict,) = [line for line in text.splitlines() if line.startswith("- strong vs weak")]
    assert verdict.startswith("- strong vs weak: +0.80 (95% interval")
    assert "real on exactly these 15 tasks (p < 0.001, exact within-task permutation)" in verdict
    assert "  Also shown for tasks like these (paired t p < 0.001)." in text.splitlines()


def test_a_small_gap_is_noise_and_the_lesson_says_how_many_tasks_it_would_take(
    make_results: MakeResults,
) -> None:
    paths = runs(
        make_results,
        a={"t-00": [True, True, True], "t-01": [True, False, False]},
        b={"t-00": [True, True, False], "t-01": [True, False, False]},
    )
    a, b = (load_results(p) for p in paths)
    result = compare_runs(b, a)
    lines = pair_verdict("a", "b", result)
    assert lines[0] == (
        f"- a vs b: +0.02 (95% interval {result['ci95'][0]:+.2f} to {result['ci95'][1]:+.2f}): "
        f"within attempt noise, even on exactly these 15 tasks (p = "
        f"{result['p_fixed_suite']:.3f}, exact within-task permutation)."
    )
    assert result["tasks_needed"] is not None and result["tasks_needed"] > 15
    assert lines[1].startswith("  Not shown for tasks like these (paired t p = ")
    assert (
        f"about {result['tasks_needed']} tasks at 3 attempts each would show a gap of 0.02"
        in (lines[1])
    )
    assert lines[1] in lesson(paths).splitlines()


def test_level_runs_say_what_difference_could_hide(make_results: MakeResults) -> None:
    same = {"t-03": [True, False, True]}
    paths = runs(make_results, first=same, second=same)
    a, b = (load_results(p) for p in paths)
    result = compare_runs(a, b)
    text = lesson(paths)
    assert "- first vs second: +0.00: level on average over these 15 tasks." in (text.splitlines())
    assert f"smaller than about {result['mde']:.2f} could hide in the noise of 15 tasks" in text


def test_the_table_puts_the_best_first_with_its_interval_over_tasks(
    make_results: MakeResults,
) -> None:
    paths = runs(make_results, low={"t-00": [True, False, False]}, high={"t-00": [True] * 3})
    lines = lesson(paths).splitlines()
    header = lines[0]
    assert header.split() == [
        "scaffold", "success", "(95%", "interval)", "steps", "tokens", "seconds", "cost/attempt",
    ]  # fmt: skip
    high = summarise_run(load_results(paths[1]))["summary"]
    lo, hi = high["task_ci95"]
    # conftest rows: steps 3 + attempt, tokens 1000 + 100 * attempt, 1.5 s each.
    assert lines[1].split() == [
        "high", "0.07", f"[{lo:.2f},", f"{hi:.2f}]", "3/45", "5.0", "1200", "1.5", "0.000600",
    ]  # fmt: skip
    assert lines[2].split()[0] == "low" and lines[2].split()[4] == "1/45"
    assert lines[3] == (
        "15 tasks x 3 attempts each; the interval is over tasks "
        "(attempts of one task are not independent)"
    )
    assert lines[4] == "cost at 0.5 per million tokens, an example price: replace it with yours"


def test_the_users_price_is_called_theirs(make_results: MakeResults) -> None:
    paths = runs(make_results, only={"t-00": [True] * 3})
    text = lesson(paths, price=2.0, example=False)
    assert "cost at 2 per million tokens, your price" in text
    assert "0.002400" in text and "example" not in text


def test_unstable_tasks_are_listed_per_scaffold(make_results: MakeResults) -> None:
    paths = runs(
        make_results,
        steady={"t-00": [True] * 3},
        shaky={"t-04": [True, False, True], "t-09": [False, False, True]},
    )
    tail = lesson(paths).splitlines()[-3:]
    assert tail == [  # both pass 3 of 45: a tie keeps the order the runs were given in
        "Unstable tasks (passed in some attempts, failed in others):",
        "- steady: none",
        "- shaky: t-04 2/3, t-09 1/3",
    ]


def test_three_scaffolds_give_three_pairs_strongest_first(make_results: MakeResults) -> None:
    paths = runs(
        make_results,
        c={},
        a={t: [True] * 3 for t in TASKS[:6]},
        b={"t-00": [True] * 3},
    )
    verdicts = [line.split(":")[0] for line in lesson(paths).splitlines() if line.startswith("- ")]
    assert verdicts[:3] == ["- a vs b", "- a vs c", "- b vs c"]


def test_no_runs() -> None:
    assert render_lesson([], 0.5) == "No runs to compare."
