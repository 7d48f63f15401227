"""The four numbers every configuration is reported with, and their paired differences.

"Report all four or none": success rate, steps, tokens and seconds, with cost when the
run was priced. Success has its own statistics (score/stats.py); this module gives the
other three and cost, per run and paired by task between two runs, so a cheaper or faster
configuration shows up as plainly as a more successful one.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from operator import attrgetter
from typing import Any, cast

from agent_eval.results import Attempt, RunResults, TaskOutcome
from agent_eval.score import attempt_costs, stats

FIGURES = ("steps", "tokens", "seconds", "cost")
"""The per-attempt figures next to success, in the order every report shows them."""
_TOKENS, _PROMPT, _COMPLETION = (
    attrgetter(name) for name in ("tokens", "prompt_tokens", "completion_tokens")
)


def _figures(
    rows: Sequence[Attempt], name: str, prices: dict[str, float | None]
) -> list[float | None]:
    """One figure of each attempt; a cost is None when it cannot be priced."""
    if name == "cost":
        return attempt_costs(
            list(map(_TOKENS, rows)),
            list(map(_PROMPT, rows)),
            list(map(_COMPLETION, rows)),
            prices,
        )
    return list(map(float, map(attrgetter(name), rows)))


def _mean(values: list[float | None]) -> float | None:
    """The mean, or None when there is nothing or any value is unknown."""
    if not values or None in values:
        return None
    return statistics.fmean(cast("list[float]", values))  # None is ruled out above


def run_figures(results: RunResults) -> dict[str, float | None]:
    """Mean steps, tokens and seconds per attempt, and cost per attempt when priced."""
    priced = any(v is not None for v in results.prices.values())
    return {
        f"mean_{name}": (
            _mean(_figures(results.rows, name, results.prices))
            if name != "cost" or priced
            else None
        )
        for name in FIGURES
    }


def task_figure(task: TaskOutcome, name: str, prices: dict[str, float | None]) -> float | None:
    """One task's mean of a figure over its attempts."""
    return _mean(_figures(task.rows, name, prices))


def task_figures(task: TaskOutcome, prices: dict[str, float | None]) -> dict[str, float | None]:
    """One task's mean of each figure over its attempts, by name."""
    return {name: task_figure(task, name, prices) for name in FIGURES}


def paired_figures(
    side_a: Sequence[dict[str, float | None]],
    side_b: Sequence[dict[str, float | None]],
    confidence: float = 0.95,
) -> dict[str, dict[str, Any]]:
    """Each figure's mean over the shared tasks in A and in B (``task_figures`` of each
    shared task, paired by position), and the paired difference B - A with its SE and
    t-interval over tasks; None where a side is unpriced."""
    found: dict[str, dict[str, Any]] = {}
    for name in FIGURES:
        values_a = [figures[name] for figures in side_a]
        values_b = [figures[name] for figures in side_b]
        mean_a, mean_b = _mean(values_a), _mean(values_b)
        entry: dict[str, Any] = {"a": mean_a, "b": mean_b, "difference": None, "se": None,
                                 "ci95": None}  # fmt: skip
        if mean_a is not None and mean_b is not None:
            diffs = [float(y or 0) - float(x or 0) for x, y in zip(values_a, values_b, strict=True)]
            est = stats.mean_estimate(diffs, confidence)
            interval = None if est.lo is None or est.hi is None else [est.lo, est.hi]
            entry.update(difference=est.mean, se=est.se, ci95=interval)
        found[name] = entry
    return found
