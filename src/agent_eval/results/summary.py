"""The run summary and per-task view of a results file, computed from its rows.

This is the one place they are computed: ``run`` writes them, ``rescore`` rewrites them,
and every report reads its course figures from here. Rounding follows the course
harness exactly (success rate to 3 decimals, steps to 2, tokens and seconds to 1;
population stdevs only with more than one attempt); the exact figures are kept too.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from fractions import Fraction
from itertools import compress, groupby, repeat
from operator import attrgetter, mul
from typing import Any, Protocol

from agent_eval.results.rows import Attempt
from agent_eval.results.schema import Summary, TaskSummary
from agent_eval.score import is_copied_pass, pass_hat_every_k

UNKNOWN_CLASS = "unknown"
"""Failure class counted for a course-harness row whose checks do not tell."""


class Row(Protocol):
    """What the summary reads of an attempt row (a full record or a report's compact)."""

    @property
    def id(self) -> str: ...
    @property
    def category(self) -> str: ...
    @property
    def passed(self) -> bool: ...
    @property
    def steps(self) -> int: ...
    @property
    def tokens(self) -> int: ...
    @property
    def prompt_tokens(self) -> int | None: ...
    @property
    def completion_tokens(self) -> int | None: ...
    @property
    def seconds(self) -> float: ...
    @property
    def failure_class(self) -> str | None: ...
    @property
    def infra_retries(self) -> int: ...
    @property
    def failure(self) -> str | None: ...
    @property
    def checks(self) -> Any: ...
    @property
    def answer(self) -> str: ...
    @property
    def copied_share(self) -> float | None: ...


class Tally:
    """The summary and per-task view, gathered a row (``add``) or many (``add_rows``)
    at a time.

    Memory stays flat however many attempts a run has: integer sums (exact, so the
    stdevs match the course's to the last digit it prints) and one small record per task.
    """

    def __init__(self, prices: dict[str, float | None] | None = None) -> None:
        self.prices = prices or {}
        self.runs = self.passed = self.infra = self.retried = self.first_try = 0
        self.copied = 0
        self.retried_passed = 0
        self.steps = self.steps_sq = self.tokens = self.tokens_sq = 0
        self.millis = 0  # rows keep seconds to 3 decimals, so milliseconds sum exactly
        self.classes: Counter[str] = Counter()
        self.prompt = self.completion = self.unsplit = 0
        self.tasks: dict[str, _TaskTally] = {}

    def add(self, row: Row) -> None:
        """Count one attempt (``add_rows`` of that one row)."""
        self.add_rows((row,))

    def add_rows(self, rows: Sequence[Row]) -> None:
        """Count attempts, in their order: a task's first failure is the first of its
        rows given.

        A column at a time, by builtins over ``map``, rather than a Python call per row: a
        report counts 100,000 rows, where a call each took a quarter of a second.
        """
        if not rows:
            return
        passed = list(map(_PASSED, rows))
        steps, tokens = list(map(_STEPS, rows)), list(map(_TOKENS, rows))
        classes, retries = list(map(_CLASS, rows)), list(map(_RETRIES, rows))
        passes = passed.count(True)
        self.runs += len(rows)
        self.passed += passes
        self.steps += sum(steps)
        self.steps_sq += sum(map(mul, steps, steps))
        self.tokens += sum(tokens)
        self.tokens_sq += sum(map(mul, tokens, tokens))
        self.millis += sum(map(round, map(mul, map(_SECONDS, rows), repeat(1000))))
        counts = Counter(classes)
        for unknown in (None, ""):
            if unknown in counts:
                self.classes[UNKNOWN_CLASS] += counts.pop(unknown)
        self.classes.update(counts)
        self.infra += counts["infra_error"]
        retried_passed = list(compress(passed, retries)).count(True)
        self.retried += len(retries) - retries.count(0)
        self.retried_passed += retried_passed
        self.first_try += passes - retried_passed
        shares = map(_SHARE, rows)
        self.copied += sum(
            is_copied_pass(True, row.answer, share)
            for row, ok, share in zip(rows, passed, shares, strict=True)
            if ok and share is not None
        )
        prompts, completions = list(map(_PROMPT, rows)), list(map(_COMPLETION, rows))
        if None in prompts or None in completions:  # count the attempts that have both
            split = [
                (prompt, completion)
                for prompt, completion in zip(prompts, completions, strict=True)
                if prompt is not None and completion is not None
            ]
            prompts = [prompt for prompt, _ in split]
            completions = [completion for _, completion in split]
        self.unsplit += len(rows) - len(prompts)
        self.prompt += sum(prompts)
        self.completion += sum(completions)
        start = 0
        for task_id, group in groupby(map(_ID, rows)):
            stop = start + len(list(group))
            self._add_task(task_id, rows, passed, steps, tokens, start, stop)
            start = stop

    def _add_task(
        self,
        task_id: str,
        rows: Sequence[Row],
        passed: list[bool],
        steps: list[int],
        tokens: list[int],
        start: int,
        stop: int,
    ) -> None:
        """Count rows[start:stop], which are all of one task."""
        ok, its_steps, its_tokens = passed[start:stop], steps[start:stop], tokens[start:stop]
        task = self.tasks.get(task_id)
        if task is None:
            task = self.tasks[task_id] = _TaskTally(rows[start])
        task.attempts += stop - start
        task.successes += ok.count(True)
        task.min_steps = min(task.min_steps, *its_steps)
        task.max_steps = max(task.max_steps, *its_steps)
        task.min_tokens = min(task.min_tokens, *its_tokens)
        task.max_tokens = max(task.max_tokens, *its_tokens)
        if task.first_failure is None and False in ok:
            task.fail(rows[start + ok.index(False)])

    def summary(self) -> Summary:
        """runs, passed, success_rate, mean/stdev steps and tokens, mean_seconds, cost."""
        runs = self.runs
        exact: dict[str, float | None] = {
            "success_rate": self.passed / runs if runs else None,
            "mean_steps": self.steps / runs if runs else None,
            "mean_tokens": self.tokens / runs if runs else None,
            "mean_seconds": self.millis / runs / 1000 if runs else None,
        }
        figures: dict[str, Any] = {
            "runs": runs,
            "passed": self.passed,
            "success_rate": _round(exact["success_rate"], 3),
            "mean_steps": _round(exact["mean_steps"], 2),
            "mean_tokens": _round(exact["mean_tokens"], 1),
            "mean_seconds": _round(exact["mean_seconds"], 1),
            "total_tokens": self.tokens,
        }
        if runs > 1:
            stdev_steps = _pstdev(runs, self.steps, self.steps_sq)
            stdev_tokens = _pstdev(runs, self.tokens, self.tokens_sq)
            exact.update(stdev_steps=stdev_steps, stdev_tokens=stdev_tokens)
            figures.update(stdev_steps=round(stdev_steps, 2), stdev_tokens=round(stdev_tokens, 1))
        figures["failure_classes"] = dict(sorted(self.classes.items()))
        figures["copied_passes"] = self.copied
        figures.update(self._reliability())
        figures.update(self._course_cost(exact))
        figures["exact"] = exact
        return Summary(**figures)

    def per_task(self) -> list[TaskSummary]:
        """One entry per task in first-seen order: the course's attempts, successes,
        extremes and first failure's checks, then the reason in words and pass^k."""
        view = []
        for task in self.tasks.values():
            n, c = task.attempts, task.successes
            view.append(
                TaskSummary(
                    id=task.id,
                    category=task.category,
                    attempts=n,
                    successes=c,
                    success_rate=round(c / n, 3),
                    steps_min=task.min_steps,
                    steps_max=task.max_steps,
                    tokens_min=task.min_tokens,
                    tokens_max=task.max_tokens,
                    first_failure=task.first_failure,
                    first_failure_reason=task.first_failure_reason,
                    pass_hat_k=pass_hat_every_k(n, c),
                )
            )
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
            "retried_passed": self.retried_passed,
            "first_try_success_rate": _round(self.first_try / runs if runs else None, 3),
        }

    def _course_cost(self, exact: dict[str, float | None]) -> dict[str, Any]:
        """The cost figures as the course writes them: its price, the total to 6
        decimals and the rounded total over the attempts to 6; the exact ones go into
        ``exact``."""
        figures = self.cost()
        total = figures["cost_total"]
        if total is None:
            return figures
        exact.update(cost_total=total, cost_per_task=figures["cost_per_task"])
        flat = self.prices.get("per_million")
        if flat is not None:
            figures["cost_per_million_tokens"] = flat
            total = self.tokens / 1e6 * flat  # the course's expression, to its last digit
        figures["cost_total"] = round(total, 6)
        per_task = figures["cost_total"] / self.runs if self.runs else None
        figures["cost_per_task"] = None if per_task is None else round(per_task, 6)
        return figures

    def cost(self) -> dict[str, Any]:
        """Cost from the user's own price only; never an invented one.

        With separate input and output prices, attempts that did not report prompt and
        completion tokens are counted and left out rather than guessed. Token sums times
        a price, computed exactly and rounded once.
        """
        prices, unsplit = self.prices, self.unsplit
        flat = prices.get("per_million")
        price_in, price_out = prices.get("input_per_million"), prices.get("output_per_million")
        total: float | None = None
        if flat is not None:
            total, unsplit = self.tokens * flat / 1e6, 0
        elif price_in is not None or price_out is not None:
            exact = self.prompt * Fraction(price_in or 0.0)
            exact += self.completion * Fraction(price_out or 0.0)
            total = float(exact / 1_000_000)
        else:
            unsplit = 0
        per_task = total / self.runs if total is not None and self.runs else None
        return {"cost_total": total, "cost_per_task": per_task, "cost_unpriced_attempts": unsplit}


class _TaskTally:
    """One task's running figures."""

    __slots__ = (
        "attempts",
        "category",
        "first_failure",
        "first_failure_reason",
        "id",
        "max_steps",
        "max_tokens",
        "min_steps",
        "min_tokens",
        "successes",
    )

    def __init__(self, row: Row) -> None:
        """A task first seen in ``row``, with nothing counted yet."""
        self.id, self.category = row.id, row.category
        self.attempts = self.successes = 0
        self.min_steps = self.max_steps = row.steps
        self.min_tokens = self.max_tokens = row.tokens
        self.first_failure: dict[str, Any] | None = None
        self.first_failure_reason: str | None = None

    def fail(self, row: Row) -> None:
        """Keep ``row`` as the task's first failure: its checks, as the course keeps
        them, and the reason in words."""
        checks = row.check_record() if isinstance(row, Attempt) else row.checks
        self.first_failure = checks.model_dump(mode="json")
        self.first_failure_reason = row.failure


def tally(rows: Iterable[Row], prices: dict[str, float | None] | None = None) -> Tally:
    """A Tally of every row."""
    counted = Tally(prices)
    counted.add_rows(rows if isinstance(rows, Sequence) else list(rows))
    return counted


_ID, _PASSED, _STEPS, _TOKENS = (attrgetter(name) for name in ("id", "passed", "steps", "tokens"))
_SECONDS, _CLASS, _RETRIES = (
    attrgetter("seconds"),
    attrgetter("failure_class"),
    attrgetter("infra_retries"),
)
_SHARE, _PROMPT, _COMPLETION = (
    attrgetter(name) for name in ("copied_share", "prompt_tokens", "completion_tokens")
)


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _pstdev(n: int, total: int, squares: int) -> float:
    """Population stdev from exact integer sums: the variance is exact, one rounding."""
    variance = Fraction(n * squares - total * total, n * n)
    return math.sqrt(variance)
