"""The within-task permutation test: is B's success on exactly this suite different from
A's beyond the luck of each task's attempts? Exact by convolution when feasible,
seeded Monte Carlo otherwise (see docs/statistics.md)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from agent_eval.score.stats import PairCount

MAX_EXACT_WORK = 50_000_000
"""Multiply-adds one convolution step of the exact permutation test may take; beyond
that (many tasks with very unequal repeats) it samples instead."""
MONTE_CARLO_PERMUTATIONS = 100_000
"""Permutations drawn when exact enumeration is infeasible."""


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
