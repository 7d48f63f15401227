"""Statistics for runs and pairs of runs, with the task as the unit of analysis.

Every function is pure: no I/O, no clock, and randomness only from a seeded numpy
Generator that the caller passes in or seeds. Attempts are nested in tasks, so each
task is reduced to its own mean first (docs/statistics.md); treating attempts as
independent would understate every standard error.

Where the data cannot estimate a figure (no task, one task, one attempt, or no variation
at all) the figure is None and a reason in words says why, so that no report prints a
zero-width interval or a zero standard error as if it were a measured certainty.

A task's outcome is given as ``(attempts, passes)``; a pair of runs on one task as
``(attempts_a, passes_a, attempts_b, passes_b)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np
from scipy import special

from agent_eval.score.pass_k import every_k, pass_hat_k

TaskCount = tuple[int, int]
"""(attempts, passes) for one task."""
PairCount = tuple[int, int, int, int]
"""(attempts_a, passes_a, attempts_b, passes_b) for one task both runs share."""


def norm_ppf(q: float) -> float:
    """scipy.stats.norm.ppf, by the special function it calls; importing scipy.stats costs
    more than half a second, which every report and compare paid before printing a line.
    """
    return float(special.ndtri(q))


def _t_ppf(q: float, df: int) -> float:
    """scipy.stats.t.ppf, by the special function it calls."""
    if q == 0:
        return -math.inf  # scipy.stats answers with the support's end, stdtrit with +inf
    return float(special.stdtrit(df, q))


def _t_sf(x: float, df: int) -> float:
    """scipy.stats.t.sf, by the special function it calls."""
    return float(special.stdtr(df, -x))


@dataclass(frozen=True)
class NotEstimable:
    """A figure the data cannot estimate, and why, in words for the reader."""

    reason: str
    """Why, for example "one attempt per task; the split needs 2 or more"."""


@dataclass(frozen=True)
class MeanEstimate:
    """A mean over tasks with its standard error and t-interval; None where undefined."""

    n: int
    """How many tasks went into the mean."""
    mean: float | None
    """The mean over tasks, None with no task."""
    se: float | None
    """sd(ddof=1)/sqrt(n), None with fewer than two tasks."""
    lo: float | None
    """Lower end of the t-interval."""
    hi: float | None
    """Upper end of the t-interval."""
    why_not: str | None = None
    """Why ``se`` and the interval are None: no task, one task, or every task the same."""


@dataclass(frozen=True)
class VarianceSplit:
    """How the spread of task means divides into attempt noise and task differences."""

    within: float
    """E[sigma^2]: mean within-task variance of one attempt."""
    between: float
    """Var(x): variance of the true task means, truncated at 0."""
    repeats: float
    """K used in the split (harmonic mean of the attempt counts)."""


def wilson_interval(passes: int, attempts: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial rate; the whole [0, 1] with no attempt."""
    if attempts <= 0:
        return (0.0, 1.0)
    z = norm_ppf(0.5 + confidence / 2)
    p = passes / attempts
    denom = 1 + z * z / attempts
    centre = (p + z * z / (2 * attempts)) / denom
    half = z * math.sqrt(p * (1 - p) / attempts + z * z / (4 * attempts**2)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def no_spread(values: Sequence[float]) -> bool:
    """True when the values are all equal (up to rounding: 2/3 - 1/3 is not 1/3 in floats)."""
    return not values or max(values) - min(values) <= 1e-12


def mean_estimate(
    values: Sequence[float],
    confidence: float = 0.95,
    bounds: tuple[float, float] | None = None,
    what: str = "value",
) -> MeanEstimate:
    """Mean of per-task values with SE over tasks and a t-interval on n-1 df.

    ``bounds`` clips the interval to the values' possible range, (0, 1) for rates: with
    few tasks a t-interval can otherwise reach past what the mean could ever be. When
    every task has the same value the sample spread is 0, and an SE of 0 would claim
    certainty that no variation was seen to support: the SE and interval are then None,
    with the reason (``what`` names the value in it).
    """
    n = len(values)
    if n == 0:
        return MeanEstimate(0, None, None, None, None, "no task to estimate from")
    mean = float(np.mean(values))
    if n == 1:
        return MeanEstimate(1, mean, None, None, None, "one task; a spread needs 2 or more")
    if no_spread(values):
        why = f"every task has the same {what} ({mean:.3f}); no spread to estimate from"
        return MeanEstimate(n, mean, None, None, None, why)
    se = float(np.std(values, ddof=1)) / math.sqrt(n)
    half = _t_ppf(0.5 + confidence / 2, n - 1) * se
    lo, hi = mean - half, mean + half
    if bounds is not None:
        lo, hi = max(bounds[0], lo), min(bounds[1], hi)
    return MeanEstimate(n, mean, se, lo, hi)


def task_means(counts: Sequence[TaskCount]) -> list[float]:
    """Each task's pass rate; tasks with no attempt carry no information and are dropped."""
    return [c / n for n, c in counts if n > 0]


def harmonic_repeats(attempts: Sequence[int]) -> float | None:
    """K for unequal repeats: the harmonic mean of per-task attempt counts."""
    positive = [a for a in attempts if a > 0]
    if not positive or len(positive) != len(attempts):
        return None
    # Exact fractions, so that equal repeats give K itself rather than K minus an ulp.
    return float(Fraction(len(positive)) / sum(Fraction(1, a) for a in positive))


def within_variance(counts: Sequence[TaskCount]) -> float | None:
    """Mean over tasks of K/(K-1)·m(1-m); None unless every task has two attempts or more."""
    if not counts or any(n < 2 for n, _ in counts):
        return None
    return float(np.mean([n / (n - 1) * (c / n) * (1 - c / n) for n, c in counts]))


def variance_split(counts: Sequence[TaskCount]) -> VarianceSplit | NotEstimable:
    """Within-task and between-task variance, or why they cannot be told apart."""
    within = within_variance(counts)
    repeats = harmonic_repeats([n for n, _ in counts])
    if len(counts) < 2:
        return NotEstimable("one task; the split between tasks needs 2 or more")
    if within is None or repeats is None:
        return NotEstimable("some task has one attempt; the split needs 2 or more per task")
    spread = float(np.var(task_means(counts), ddof=1))
    return VarianceSplit(within, max(0.0, spread - within / repeats), repeats)


# Cached: a report asks for every k of every task, and tasks share (attempts, passes).
@lru_cache(maxsize=1 << 16)
def pass_at_k(attempts: int, passes: int, k: int) -> float:
    """Unbiased chance that at least one of k attempts drawn from this task's passes."""
    if not 1 <= k <= attempts or not 0 <= passes <= attempts:
        raise ValueError(
            f"pass@k needs 1 <= k <= attempts and 0 <= passes <= attempts "
            f"(got k={k}, attempts={attempts}, passes={passes})"
        )
    if attempts - passes < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(attempts - passes + 1, attempts + 1)))


def pass_at_every_k(attempts: int, passes: int) -> dict[str, float]:
    """pass@k for every k from 1 to ``attempts``, keyed by ``str(k)``."""
    return every_k(pass_at_k, attempts, passes)


def pass_at_k_over_tasks(counts: Sequence[TaskCount], k: int) -> MeanEstimate:
    """Mean pass@k over the tasks with at least k attempts, with its SE over tasks."""
    return mean_estimate([pass_at_k(n, c, k) for n, c in counts if n >= k], bounds=(0, 1))


def pass_hat_k_over_tasks(counts: Sequence[TaskCount], k: int) -> MeanEstimate:
    """Mean pass^k over the tasks with at least k attempts, with its SE over tasks."""
    return mean_estimate([pass_hat_k(n, c, k) for n, c in counts if n >= k], bounds=(0, 1))


@dataclass(frozen=True)
class PairedComparison:
    """Run B against run A over the tasks both ran, paired by task."""

    n: int
    """Tasks both runs share."""
    mean_a: float | None
    """Mean over tasks of A's pass rates."""
    mean_b: float | None
    """Mean over tasks of B's pass rates."""
    differences: tuple[float, ...]
    """d_i = m_B,i - m_A,i, in the order given."""
    difference: MeanEstimate
    """d-bar with SE_paired and its t-interval."""
    se_unpaired: float | None
    """sqrt(SE_A^2 + SE_B^2), what ignoring the pairing would give."""
    correlation: float | None
    """Pearson correlation of m_A with m_B; None when either has no spread."""
    p_population: float | None
    """Two-sided paired t p-value (claim: on tasks like these); None when undefined."""
    not_estimable: dict[str, str]
    """Why each of se_unpaired, correlation and p_population is None, when it is
    (``difference.why_not`` says it for the paired SE and interval)."""


def paired_comparison(pairs: Sequence[PairCount], confidence: float = 0.95) -> PairedComparison:
    """Paired difference of two runs' task means, with the paired t test."""
    usable = [p for p in pairs if p[0] > 0 and p[2] > 0]
    m_a = [c / n for n, c, _, _ in usable]
    m_b = [c / n for _, _, n, c in usable]
    diffs = tuple(b - a for a, b in zip(m_a, m_b, strict=True))
    diff = mean_estimate(diffs, confidence, bounds=(-1, 1), what="difference")
    est_a, est_b = mean_estimate(m_a, what="pass rate"), mean_estimate(m_b, what="pass rate")
    why: dict[str, str] = {}
    se_unpaired = None
    if est_a.se is not None and est_b.se is not None:
        se_unpaired = math.hypot(est_a.se, est_b.se)
    else:
        why["se_unpaired"] = f"A: {est_a.why_not}" if est_a.se is None else f"B: {est_b.why_not}"
    correlation = None
    if est_a.se is not None and est_b.se is not None:
        correlation = float(np.corrcoef(m_a, m_b)[0, 1])
    else:
        why["correlation"] = why["se_unpaired"]
    p_population = _paired_t_p(diff)
    if p_population is None:
        why["p_population"] = str(diff.why_not)
    return PairedComparison(
        len(usable),
        est_a.mean,
        est_b.mean,
        diffs,
        diff,
        se_unpaired,
        correlation,
        p_population,
        why,
    )


def _paired_t_p(diff: MeanEstimate) -> float | None:
    # Identical differences on every task leave the t statistic undefined (0/0 or x/0):
    # mean_estimate then gives no SE, and there is no p-value to give either.
    if diff.mean is None or diff.se is None:
        return None
    t = diff.mean / diff.se
    return float(min(1.0, 2 * _t_sf(abs(t), diff.n - 1)))


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts b and c."""
    if b + c == 0:
        return 1.0
    from scipy import stats as sps  # only here: see norm_ppf

    return float(min(1.0, 2 * sps.binom.cdf(min(b, c), b + c, 0.5)))
