"""Statistics for runs and pairs of runs, with the task as the unit of analysis.

Every function is pure: no I/O, no clock, and randomness only from a seeded numpy
Generator that the caller passes in or seeds. Attempts are nested in tasks, so each
task is reduced to its own mean first (see STATS.md); treating attempts as
independent would understate every standard error.

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

TaskCount = tuple[int, int]
"""(attempts, passes) for one task."""
PairCount = tuple[int, int, int, int]
"""(attempts_a, passes_a, attempts_b, passes_b) for one task both runs share."""

MAX_EXACT_WORK = 50_000_000
"""Multiply-adds one convolution step of the exact permutation test may take; beyond
that (many tasks with very unequal repeats) it samples instead."""
MONTE_CARLO_PERMUTATIONS = 100_000
"""Permutations drawn when exact enumeration is infeasible."""


def _norm_ppf(q: float) -> float:
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
    z = _norm_ppf(0.5 + confidence / 2)
    p = passes / attempts
    denom = 1 + z * z / attempts
    centre = (p + z * z / (2 * attempts)) / denom
    half = z * math.sqrt(p * (1 - p) / attempts + z * z / (4 * attempts**2)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def mean_estimate(
    values: Sequence[float], confidence: float = 0.95, bounds: tuple[float, float] | None = None
) -> MeanEstimate:
    """Mean of per-task values with SE over tasks and a t-interval on n-1 df.

    ``bounds`` clips the interval to the values' possible range, (0, 1) for rates: with
    few tasks a t-interval can otherwise reach past what the mean could ever be.
    """
    n = len(values)
    if n == 0:
        return MeanEstimate(0, None, None, None, None)
    mean = float(np.mean(values))
    if n == 1:
        return MeanEstimate(1, mean, None, None, None)
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


def variance_split(counts: Sequence[TaskCount]) -> VarianceSplit | None:
    """Within-task and between-task variance; None when some task has fewer than 2 attempts."""
    within = within_variance(counts)
    repeats = harmonic_repeats([n for n, _ in counts])
    if within is None or repeats is None or len(counts) < 2:
        return None
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


@lru_cache(maxsize=1 << 16)
def pass_hat_k(attempts: int, passes: int, k: int) -> float:
    """Unbiased chance that all k attempts drawn from this task's pass (tau-bench pass^k)."""
    if not 1 <= k <= attempts or not 0 <= passes <= attempts:
        raise ValueError(
            f"pass^k needs 1 <= k <= attempts and 0 <= passes <= attempts "
            f"(got k={k}, attempts={attempts}, passes={passes})"
        )
    return math.comb(passes, k) / math.comb(attempts, k)


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


def paired_comparison(pairs: Sequence[PairCount], confidence: float = 0.95) -> PairedComparison:
    """Paired difference of two runs' task means, with the paired t test."""
    usable = [p for p in pairs if p[0] > 0 and p[2] > 0]
    m_a = [c / n for n, c, _, _ in usable]
    m_b = [c / n for _, _, n, c in usable]
    diffs = tuple(b - a for a, b in zip(m_a, m_b, strict=True))
    diff = mean_estimate(diffs, confidence, bounds=(-1, 1))
    est_a, est_b = mean_estimate(m_a), mean_estimate(m_b)
    se_unpaired = None
    if est_a.se is not None and est_b.se is not None:
        se_unpaired = math.hypot(est_a.se, est_b.se)
    correlation = None
    if len(usable) >= 2 and np.std(m_a) > 0 and np.std(m_b) > 0:
        correlation = float(np.corrcoef(m_a, m_b)[0, 1])
    return PairedComparison(
        len(usable),
        est_a.mean,
        est_b.mean,
        diffs,
        diff,
        se_unpaired,
        correlation,
        _paired_t_p(diff),
    )


def _paired_t_p(diff: MeanEstimate) -> float | None:
    if diff.mean is None or diff.se is None:
        return None
    if diff.se == 0:
        # Identical differences on every task: no evidence either way when they are all
        # zero, and a t statistic that does not exist otherwise.
        return 1.0 if diff.mean == 0 else None
    t = diff.mean / diff.se
    return float(min(1.0, 2 * _t_sf(abs(t), diff.n - 1)))


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts b and c."""
    if b + c == 0:
        return 1.0
    from scipy import stats as sps  # only here: see _norm_ppf

    return float(min(1.0, 2 * sps.binom.cdf(min(b, c), b + c, 0.5)))


@dataclass(frozen=True)
class PermutationTest:
    """Result of the within-task permutation test (claim: B beats A on this suite)."""

    p_value: float
    """Two-sided p-value in (0, 1]."""
    exact: bool
    """True when every relabelling was accounted for, False for a Monte Carlo estimate."""
    permutations: int | None
    """Permutations drawn for a Monte Carlo estimate; None when exact."""


_TINY = float(np.finfo(float).tiny)
"""Probabilities below the smallest normal double (2.2e-308) are dropped from the ends of
a distribution: together they stay far below the 1e-300 floor of a reported p-value,
and arithmetic on subnormal numbers is many times slower than on normal ones."""


@lru_cache(maxsize=1 << 10)
def _hypergeom_pmf(total: int, passes: int, drawn: int) -> tuple[int, np.ndarray]:
    """Distribution of B's passes when ``drawn`` of ``total`` pooled attempts are B's:
    the lowest possible count, and the probabilities from there up (read-only: cached,
    because tasks with the same counts share it).
    """
    denom = math.comb(total, drawn)
    low, high = max(0, drawn - (total - passes)), min(passes, drawn)
    pmf = np.array(
        [
            math.comb(passes, b) * math.comb(total - passes, drawn - b) / denom
            for b in range(low, high + 1)
        ]
    )
    pmf.flags.writeable = False
    return low, pmf


def _add_task(
    dist: np.ndarray, start: int, low: int, pmf: np.ndarray, stride: int
) -> tuple[np.ndarray, int]:
    """The law of a sum on an integer grid (``dist[j]`` is the chance of ``start + j``)
    after adding ``stride`` times a count drawn from ``pmf``, which starts at ``low``.
    """
    kernel = pmf
    if stride > 1:
        kernel = np.zeros((len(pmf) - 1) * stride + 1)
        kernel[::stride] = pmf
    dist = np.convolve(dist, kernel)
    kept = dist >= _TINY
    first, last = int(kept.argmax()), len(dist) - int(kept[::-1].argmax())
    return dist[first:last], start + low * stride + first


def permutation_test(
    pairs: Sequence[PairCount],
    seed: int | np.random.Generator = 0,
    permutations: int = MONTE_CARLO_PERMUTATIONS,
    max_exact_work: int = MAX_EXACT_WORK,
) -> PermutationTest:
    """Shuffle A/B labels of attempts inside each task; statistic sum_i (m_B,i - m_A,i).

    Given each task's pooled passes, B's passes follow a hypergeometric law, so the
    statistic's exact law is a convolution on an integer grid. When that would take
    more than ``max_exact_work`` steps (many tasks with very unequal repeats), a Monte
    Carlo estimate is returned instead, drawn from ``seed`` (an int, or a numpy
    Generator the caller owns). With one attempt each this is McNemar's exact test.
    """
    live = [p for p in pairs if p[0] > 0 and p[2] > 0 and 0 < p[1] + p[3] < p[0] + p[2]]
    if not live:
        return PermutationTest(1.0, True, None)
    # d_i scaled by the common multiple of the attempt counts is an integer, linear in
    # B's passes b: step_i·b - s_i·scale/K_A with step_i = scale/K_B + scale/K_A. Ties
    # then compare exactly. Every sum of steps is a multiple of their common divisor,
    # so the grid counts in that unit (2 with equal repeats): no cell is always empty.
    scale = math.lcm(*(n for p in live for n in (p[0], p[2])))
    steps = [scale // p[2] + scale // p[0] for p in live]
    unit = math.gcd(*steps)
    base = sum((p[1] + p[3]) * (scale // p[0]) for p in live)
    observed = abs(sum(step * p[3] for p, step in zip(live, steps, strict=True)) - base)
    dist, start = np.ones(1), 0  # dist[j]: chance that the scaled sum is unit·(start+j) - base
    for p, step in zip(live, steps, strict=True):
        low, pmf = _hypergeom_pmf(p[0] + p[2], p[1] + p[3], p[2])
        stride = step // unit
        if len(dist) * ((len(pmf) - 1) * stride + 1) > max_exact_work:
            return _monte_carlo(live, seed, permutations)
        dist, start = _add_task(dist, start, low, pmf, stride)
    if observed == 0:
        p_value = float(dist.sum())  # every relabelling is at least as far from zero
    else:
        # Relabellings at least as far from zero: unit·(start+j) - base >= observed, or
        # <= -observed.
        above = -(-(base + observed) // unit) - start
        below = (base - observed) // unit - start
        p_value = float(dist[max(above, 0) :].sum()) + float(dist[: max(below + 1, 0)].sum())
    return PermutationTest(min(1.0, max(p_value, 1e-300)), True, None)


def _monte_carlo(
    live: list[PairCount], seed: int | np.random.Generator, permutations: int
) -> PermutationTest:
    """The permutation p-value from random relabellings: (1 + hits) / (1 + draws).

    Tasks with the same attempt counts (K_A, K_B) move the statistic only through the
    sum of their B passes, so each relabelling draws that sum once per such group, from
    its exact law (the convolution of the tasks' hypergeometric laws), by inverting its
    distribution function. That is the same law as drawing task by task, with the same
    number of relabellings, at a small fraction of the cost.
    """
    rng = np.random.default_rng(seed)
    groups: dict[tuple[int, int], list[PairCount]] = {}
    for p in live:
        groups.setdefault((p[0], p[2]), []).append(p)
    total = np.zeros(permutations)
    for (k_a, k_b), members in groups.items():
        law, start = np.ones(1), 0
        for p in members:
            low, pmf = _hypergeom_pmf(p[0] + p[2], p[1] + p[3], p[2])
            law, start = _add_task(law, start, low, pmf, 1)
        cdf = np.cumsum(law)
        index = np.searchsorted(cdf, rng.random(permutations) * cdf[-1], side="right")
        drawn = start + np.minimum(index, len(law) - 1)
        pooled = sum(p[1] + p[3] for p in members)
        total += drawn / k_b - (pooled - drawn) / k_a
    # Floats here, because the common scale can overflow 64 bits; the slack absorbs
    # rounding so that a relabelling equal to the observed one counts as a hit.
    observed = abs(sum(p[3] / p[2] - p[1] / p[0] for p in live))
    hits = int(np.count_nonzero(np.abs(total) >= observed - 1e-9))
    return PermutationTest((1 + hits) / (1 + permutations), False, permutations)


def z_sum(alpha: float = 0.05, power: float = 0.8) -> float:
    """z_{alpha/2} + z_beta for a two-sided test at level alpha with the given power."""
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must lie in (0, 1) (got {alpha}, {power})")
    return _norm_ppf(1 - alpha / 2) + _norm_ppf(power)


def repeats_needed(
    n: int,
    delta: float,
    omega2: float,
    sigma2_a: float,
    sigma2_b: float,
    alpha: float = 0.05,
    power: float = 0.8,
) -> int | None:
    """Repeats per task to detect delta with n tasks; None when no number of repeats is enough.

    The between-task variance omega2 is a floor that repeats cannot lower: when the
    budget n·delta²/z² does not exceed it, only more tasks help.
    """
    if n <= 0 or delta == 0:
        return None
    room = n * delta * delta / z_sum(alpha, power) ** 2 - omega2
    if room <= 0:
        return None
    return max(1, math.ceil((sigma2_a + sigma2_b) / room))


def tasks_needed(
    delta: float,
    omega2: float,
    sigma2_a: float,
    sigma2_b: float,
    repeats: float,
    alpha: float = 0.05,
    power: float = 0.8,
) -> int | None:
    """Tasks needed to detect delta with this many repeats each; None when delta is 0."""
    if delta == 0 or repeats <= 0:
        return None
    variance = omega2 + (sigma2_a + sigma2_b) / repeats
    return max(2, math.ceil(z_sum(alpha, power) ** 2 * variance / (delta * delta)))


def minimum_detectable_difference(
    n: int,
    omega2: float,
    sigma2_a: float,
    sigma2_b: float,
    repeats: float,
    alpha: float = 0.05,
    power: float = 0.8,
) -> float | None:
    """Smallest true difference detected with the given power; None with no task."""
    if n <= 0 or repeats <= 0:
        return None
    return z_sum(alpha, power) * math.sqrt((omega2 + (sigma2_a + sigma2_b) / repeats) / n)


@dataclass(frozen=True)
class Plan:
    """Planning inputs estimated from two runs, and what they imply."""

    repeats: float | None
    """K: harmonic mean of attempt counts over both runs."""
    sigma2_a: float | None
    """A's mean within-task variance; None with one attempt per task."""
    sigma2_b: float | None
    """B's mean within-task variance; None with one attempt per task."""
    omega2: float | None
    """Between-task variance of the true differences, truncated at 0."""
    delta: float
    """The difference planned for: |d-bar| unless given."""
    repeats_needed: int | None
    """Repeats per task at this many tasks; None when none is enough or K = 1."""
    tasks_needed: int | None
    """Tasks needed at the current repeats."""
    mde: float | None
    """Minimum detectable difference at this many tasks and repeats."""


def plan_from_pairs(
    pairs: Sequence[PairCount], delta: float | None = None, alpha: float = 0.05, power: float = 0.8
) -> Plan:
    """Estimate sigma², omega² and K from two runs and derive repeats, tasks and MDE."""
    usable = [p for p in pairs if p[0] > 0 and p[2] > 0]
    diffs = [b / nb - a / na for na, a, nb, b in usable]
    target = abs(float(np.mean(diffs))) if delta is None and diffs else abs(delta or 0.0)
    repeats = harmonic_repeats([n for p in usable for n in (p[0], p[2])])
    s2a = within_variance([(p[0], p[1]) for p in usable])
    s2b = within_variance([(p[2], p[3]) for p in usable])
    if repeats is None or s2a is None or s2b is None or len(usable) < 2:
        mde = None
        if repeats is not None and len(usable) >= 2:
            # With one attempt the spread of d_i already holds both kinds of variance.
            mde = minimum_detectable_difference(
                len(usable), float(np.var(diffs, ddof=1)), 0.0, 0.0, 1.0, alpha, power
            )
        return Plan(repeats, s2a, s2b, None, target, None, None, mde)
    omega2 = max(0.0, float(np.var(diffs, ddof=1)) - (s2a + s2b) / repeats)
    n = len(usable)
    return Plan(
        repeats,
        s2a,
        s2b,
        omega2,
        target,
        repeats_needed(n, target, omega2, s2a, s2b, alpha, power),
        tasks_needed(target, omega2, s2a, s2b, repeats, alpha, power),
        minimum_detectable_difference(n, omega2, s2a, s2b, repeats, alpha, power),
    )


def simulate_fixed_suite_power(
    p_a: Sequence[float],
    p_b: Sequence[float],
    repeats: int,
    trials: int,
    seed: int | np.random.Generator,
    alpha: float = 0.05,
) -> float:
    """Share of simulated pairs of runs on exactly these tasks where the permutation test
    rejects at alpha: the power of claim (b) with this many repeats, checked by the test
    that will actually be run rather than by the normal approximation.
    """
    if len(p_a) != len(p_b):
        raise ValueError("p_a and p_b must give one probability per task each")
    if trials <= 0 or repeats <= 0 or not p_a:
        return 0.0
    rng = np.random.default_rng(seed)
    rejected = 0
    for _ in range(trials):
        passes_a = rng.binomial(repeats, p_a)
        passes_b = rng.binomial(repeats, p_b)
        pairs = [
            (repeats, int(a), repeats, int(b)) for a, b in zip(passes_a, passes_b, strict=True)
        ]
        if permutation_test(pairs).p_value <= alpha:
            rejected += 1
    return rejected / trials
