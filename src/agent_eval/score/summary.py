"""The course's run summary and per-task view, computed from result rows.

Rounding follows the course harness exactly (success rate to 3 decimals, steps to 2,
tokens and seconds to 1; population stdevs only with more than one attempt). The exact
figures are kept too, under ``exact``, for the statistics.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

from agent_eval.records import AttemptResult


class Tally:
    """The summary and per-task view, gathered one row at a time.

    Memory stays flat however many attempts a run has: integer sums (exact, so the
    stdevs match the course's to the last digit it prints) and one small record per task.
    """

    def __init__(self, prices: dict[str, float | None]) -> None:
        self.prices = prices
        self.runs = self.passed = self.infra = self.retried = self.first_try = 0
        self.steps = self.steps_sq = self.tokens = self.tokens_sq = 0
        self.millis = 0  # rows keep seconds to 3 decimals, so milliseconds sum exactly
        self.classes: Counter[str] = Counter()
        self.prompt = self.completion = self.unsplit = 0
        self.tasks: dict[str, dict[str, Any]] = {}

    def add(self, row: AttemptResult) -> None:
        self.runs += 1
        self.passed += row.passed
        self.steps += row.steps
        self.steps_sq += row.steps * row.steps
        self.tokens += row.tokens
        self.tokens_sq += row.tokens * row.tokens
        self.millis += round(row.seconds * 1000)
        self.classes[row.failure_class] += 1
        self.infra += row.failure_class == "infra_error"
        self.retried += row.infra_retries > 0
        self.first_try += row.passed and row.infra_retries == 0
        if row.prompt_tokens is None or row.completion_tokens is None:
            self.unsplit += 1
        else:
            self.prompt += row.prompt_tokens
            self.completion += row.completion_tokens
        task = self.tasks.get(row.task_id)
        if task is None:
            task = self.tasks[row.task_id] = {
                "task_id": row.task_id, "category": row.category, "attempts": 0,
                "successes": 0, "min_steps": row.steps, "max_steps": row.steps,
                "min_tokens": row.tokens, "max_tokens": row.tokens, "first_failure": None,
            }  # fmt: skip
        task["attempts"] += 1
        task["successes"] += row.passed
        task["min_steps"] = min(task["min_steps"], row.steps)
        task["max_steps"] = max(task["max_steps"], row.steps)
        task["min_tokens"] = min(task["min_tokens"], row.tokens)
        task["max_tokens"] = max(task["max_tokens"], row.tokens)
        if not row.passed and task["first_failure"] is None:
            task["first_failure"] = describe_failure(row)

    def summary(self) -> dict[str, Any]:
        """runs, passed, success_rate, mean/stdev steps and tokens, mean_seconds, cost."""
        runs = self.runs
        exact: dict[str, Any] = {
            "success_rate": self.passed / runs if runs else None,
            "mean_steps": self.steps / runs if runs else None,
            "mean_tokens": self.tokens / runs if runs else None,
            "mean_seconds": self.millis / runs / 1000 if runs else None,
        }
        summary: dict[str, Any] = {
            "runs": runs,
            "passed": self.passed,
            "success_rate": _round(exact["success_rate"], 3),
            "mean_steps": _round(exact["mean_steps"], 2),
            "mean_tokens": _round(exact["mean_tokens"], 1),
            "mean_seconds": _round(exact["mean_seconds"], 1),
            "total_tokens": self.tokens,
        }
        if runs > 1:
            exact["stdev_steps"] = _pstdev(runs, self.steps, self.steps_sq)
            exact["stdev_tokens"] = _pstdev(runs, self.tokens, self.tokens_sq)
            summary["stdev_steps"] = round(exact["stdev_steps"], 2)
            summary["stdev_tokens"] = round(exact["stdev_tokens"], 1)
        summary["failure_classes"] = dict(sorted(self.classes.items()))
        summary.update(self._reliability())
        summary.update(self._cost())
        summary["exact"] = exact
        return summary

    def per_task(self) -> list[dict[str, Any]]:
        """One entry per task in first-seen order: attempts, successes, extremes, pass^k."""
        view = []
        for task in self.tasks.values():
            n, c = task["attempts"], task["successes"]
            pass_hat = _pass_hat_k(n, c)
            view.append({**task, "success_rate": round(c / n, 3), "pass_hat_k": pass_hat})
        return view

    def _reliability(self) -> dict[str, Any]:
        """Usable and model success rates, and what retries changed.

        The usable rate counts every attempt; the model rate leaves out attempts whose
        endpoint failed even after retries, because those say nothing about the agent.
        The first-try rate counts an attempt that needed a retry as failed, so a reader
        can see how much the figure owes to retries.
        """
        runs, model_runs = self.runs, self.runs - self.infra
        return {
            "usable_success_rate": _round(self.passed / runs if runs else None, 3),
            "model_success_rate": _round(self.passed / model_runs if model_runs else None, 3),
            "model_runs": model_runs,
            "infra_errors": self.infra,
            "retried_attempts": self.retried,
            "first_try_success_rate": _round(self.first_try / runs if runs else None, 3),
        }

    def _cost(self) -> dict[str, Any]:
        return price(self.runs, self.tokens, self.prompt, self.completion, self.unsplit,
                     self.prices)  # fmt: skip


def price(
    runs: int,
    tokens: int,
    prompt: int,
    completion: int,
    unsplit: int,
    prices: dict[str, float | None],
) -> dict[str, Any]:
    """Cost from the user's own price only; never an invented one.

    With separate input and output prices, ``unsplit`` attempts that did not report
    prompt and completion tokens are counted and left out rather than guessed. Token
    sums times a price, computed exactly and rounded once.
    """
    flat, price_in, price_out = (
        prices.get("per_million"),
        prices.get("input_per_million"),
        prices.get("output_per_million"),
    )
    total: float | None = None
    if flat is not None:
        total, unsplit = tokens * flat / 1e6, 0
    elif price_in is not None or price_out is not None:
        exact = prompt * Fraction(price_in or 0.0) + completion * Fraction(price_out or 0.0)
        total = float(exact / 1_000_000)
    else:
        unsplit = 0
    per_task = total / runs if total is not None and runs else None
    return {"cost_total": total, "cost_per_task": per_task, "cost_unpriced_attempts": unsplit}


def summarise(rows: Iterable[AttemptResult], prices: dict[str, float | None]) -> dict[str, Any]:
    """The run summary of ``rows``."""
    tally = Tally(prices)
    for row in rows:
        tally.add(row)
    return tally.summary()


def per_task(rows: Iterable[AttemptResult]) -> list[dict[str, Any]]:
    """The per-task view of ``rows``."""
    tally = Tally({})
    for row in rows:
        tally.add(row)
    return tally.per_task()


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
    failed_state = [outcome.name for outcome in checks.state if not outcome.ok]
    if failed_state:
        reasons.append("state check failed: " + "; ".join(failed_state))
    return f"r{row.attempt}: " + ("; ".join(reasons) or f"stopped: {row.stopped}")


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _pass_hat_k(n: int, c: int) -> dict[str, float]:
    """pass^k = C(c,k)/C(n,k) for k = 1..n, as a running product: no huge integers."""
    values, running = {}, 1.0
    for k in range(1, n + 1):
        running *= max(c - k + 1, 0) / (n - k + 1)
        values[str(k)] = running
    return values


def _pstdev(n: int, total: int, squares: int) -> float:
    """Population stdev from exact integer sums: the variance is exact, one rounding."""
    variance = Fraction(n * squares - total * total, n * n)
    return math.sqrt(variance)
