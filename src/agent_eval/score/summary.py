"""The course's run summary and per-task view, computed from result rows.

Rounding follows the course harness exactly (success rate to 3 decimals, steps to 2,
tokens and seconds to 1; population stdevs only with more than one attempt). The exact
figures are kept too, under ``exact``, for the statistics.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from agent_eval.records import AttemptResult


def summarise(rows: Sequence[AttemptResult], prices: dict[str, float | None]) -> dict[str, Any]:
    """runs, passed, success_rate, mean/stdev steps and tokens, mean_seconds, totals, cost."""
    runs = len(rows)
    passed = sum(row.passed for row in rows)
    steps = [row.steps for row in rows]
    tokens = [row.tokens for row in rows]
    seconds = [row.seconds for row in rows]
    exact: dict[str, Any] = {
        "success_rate": passed / runs if runs else None,
        "mean_steps": statistics.fmean(steps) if runs else None,
        "mean_tokens": statistics.fmean(tokens) if runs else None,
        "mean_seconds": statistics.fmean(seconds) if runs else None,
    }
    summary: dict[str, Any] = {
        "runs": runs,
        "passed": passed,
        "success_rate": _round(exact["success_rate"], 3),
        "mean_steps": _round(exact["mean_steps"], 2),
        "mean_tokens": _round(exact["mean_tokens"], 1),
        "mean_seconds": _round(exact["mean_seconds"], 1),
        "total_tokens": sum(tokens),
    }
    if runs > 1:
        exact["stdev_steps"] = statistics.pstdev(steps)
        exact["stdev_tokens"] = statistics.pstdev(tokens)
        summary["stdev_steps"] = round(exact["stdev_steps"], 2)
        summary["stdev_tokens"] = round(exact["stdev_tokens"], 1)
    classes: dict[str, int] = {}
    for row in rows:
        classes[row.failure_class] = classes.get(row.failure_class, 0) + 1
    summary["failure_classes"] = dict(sorted(classes.items()))
    summary.update(reliability(rows))
    summary.update(cost(rows, prices))
    summary["exact"] = exact
    return summary


def reliability(rows: Sequence[AttemptResult]) -> dict[str, Any]:
    """Usable and model success rates, and what retries changed.

    The usable rate counts every attempt; the model rate leaves out attempts whose
    endpoint failed even after retries, because those say nothing about the agent. The
    first-try rate counts an attempt that needed a retry as failed, so a reader can see
    how much the figure owes to retries.
    """
    runs = len(rows)
    passed = sum(row.passed for row in rows)
    infra = sum(row.failure_class == "infra_error" for row in rows)
    retried = sum(row.infra_retries > 0 for row in rows)
    first_try = sum(row.passed and row.infra_retries == 0 for row in rows)
    model_runs = runs - infra
    return {
        "usable_success_rate": _round(passed / runs if runs else None, 3),
        "model_success_rate": _round(passed / model_runs if model_runs else None, 3),
        "model_runs": model_runs,
        "infra_errors": infra,
        "retried_attempts": retried,
        "first_try_success_rate": _round(first_try / runs if runs else None, 3),
    }


def cost(rows: Sequence[AttemptResult], prices: dict[str, float | None]) -> dict[str, Any]:
    """Cost from the user's own price only; never an invented one.

    With separate input and output prices, attempts that did not report the split are
    counted and left out of the total rather than guessed.
    """
    flat, price_in, price_out = (
        prices.get("per_million"),
        prices.get("input_per_million"),
        prices.get("output_per_million"),
    )
    total: float | None = None
    unsplit = 0
    if flat is not None:
        total = sum(row.tokens for row in rows) * flat / 1e6
    elif price_in is not None or price_out is not None:
        total = 0.0
        for row in rows:
            if row.prompt_tokens is None or row.completion_tokens is None:
                unsplit += 1
                continue
            total += row.prompt_tokens * (price_in or 0.0) / 1e6
            total += row.completion_tokens * (price_out or 0.0) / 1e6
    per_task = total / len(rows) if total is not None and rows else None
    return {"cost_total": total, "cost_per_task": per_task, "cost_unpriced_attempts": unsplit}


def per_task(rows: Sequence[AttemptResult]) -> list[dict[str, Any]]:
    """One entry per task in first-seen order: attempts, successes, extremes, pass^k."""
    by_task: dict[str, list[AttemptResult]] = {}
    for row in rows:
        by_task.setdefault(row.task_id, []).append(row)
    view = []
    for task_id, attempts in by_task.items():
        n = len(attempts)
        c = sum(a.passed for a in attempts)
        failed = next((a for a in attempts if not a.passed), None)
        view.append(
            {
                "task_id": task_id,
                "category": attempts[0].category,
                "attempts": n,
                "successes": c,
                "success_rate": round(c / n, 3),
                "min_steps": min(a.steps for a in attempts),
                "max_steps": max(a.steps for a in attempts),
                "min_tokens": min(a.tokens for a in attempts),
                "max_tokens": max(a.tokens for a in attempts),
                "first_failure": describe_failure(failed) if failed else None,
                "pass_hat_k": {str(k): math.comb(c, k) / math.comb(n, k) for k in range(1, n + 1)},
            }
        )
    return view


def describe_failure(row: AttemptResult) -> str:
    """A short reason an attempt failed, for people reading the per-task view."""
    if row.failure_class in ("agent_error", "infra_error") or row.error:
        return f"r{row.attempt}: {row.failure_class}: {row.error or row.stopped}"
    checks, reasons = row.checks, []
    if checks.missing:
        reasons.append("missing " + ", ".join(repr(s) for s in checks.missing))
    if checks.forbidden_found:
        reasons.append("forbidden " + ", ".join(repr(s) for s in checks.forbidden_found))
    if checks.regex_ok is False:
        reasons.append("regex did not match")
    if checks.tool_ok is False:
        reasons.append("expected tool not used")
    if checks.within_steps is False:
        reasons.append(f"{row.steps} steps over the limit")
    if checks.within_tokens is False:
        reasons.append(f"{row.tokens} tokens over the limit")
    if checks.within_seconds is False:
        reasons.append("over the time limit")
    return f"r{row.attempt}: " + ("; ".join(reasons) or f"stopped: {row.stopped}")


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)
