"""Planning a comparison: how many repeats or tasks it takes to see a difference, the
smallest difference a design can see, and a seeded check of the power
(docs/statistics.md)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from agent_eval.score.permutation import permutation_test
from agent_eval.score.stats import (
    PairCount,
    harmonic_repeats,
    no_spread,
    norm_ppf,
    within_variance,
)


def z_sum(alpha: float = 0.05, power: float = 0.8) -> float:
    """z_{alpha/2} + z_beta for a two-sided test at level alpha with the given power."""
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must lie in (0, 1) (got {alpha}, {power})")
    return norm_ppf(1 - alpha / 2) + norm_ppf(power)


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
    not_estimable: dict[str, str] = field(default_factory=dict)
    """Why each figure above that is None cannot be estimated. ``repeats_needed`` is also
    None, with no reason here, when it was estimated and no number of repeats is enough."""


NO_VARIATION = (
    "no attempt varied within its task and the difference was the same on every task: "
    "a variance of 0 observed says nothing of the noise, so no precision can be claimed"
)
ONE_ATTEMPT = (
    "one attempt per task; attempt noise cannot be told apart from real differences "
    "between tasks: run 2 or more repeats to plan"
)


def plan_from_pairs(
    pairs: Sequence[PairCount],
    delta: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    diff_variance: float | None = None,
) -> Plan:
    """Estimate sigma², omega² and K from two runs and derive repeats, tasks and MDE.

    Where the runs cannot support a figure (too few tasks, one attempt each, no variation
    at all, or no difference to plan for) it is None and ``not_estimable`` says why; a
    variance of 0 never turns into a detectable difference of 0 or a single repeat.

    ``diff_variance`` replaces var(d_i, ddof=1) when the tasks are clustered: n times the
    cluster-robust variance of d-bar (score/clusters.py).
    """
    usable = [p for p in pairs if p[0] > 0 and p[2] > 0]
    n = len(usable)
    diffs = [b / nb - a / na for na, a, nb, b in usable]
    spread = diff_variance
    if spread is None and len(diffs) >= 2:
        spread = float(np.var(diffs, ddof=1))
    target = abs(float(np.mean(diffs))) if delta is None and diffs else abs(delta or 0.0)
    repeats = harmonic_repeats([k for p in usable for k in (p[0], p[2])])
    s2a = within_variance([(p[0], p[1]) for p in usable])
    s2b = within_variance([(p[2], p[3]) for p in usable])
    derived = ("omega2", "repeats_needed", "tasks_needed", "mde")
    if repeats is None or n < 2:
        why = (
            "no task has attempts in both runs" if n == 0 else "one task; planning needs 2 or more"
        )
        return Plan(repeats, s2a, s2b, None, target, None, None, None, dict.fromkeys(derived, why))
    same_everywhere = no_spread(diffs)
    if s2a is None or s2b is None:
        missing = [name for name, value in (("sigma2_a", s2a), ("sigma2_b", s2b)) if value is None]
        why_not = dict.fromkeys((*missing, *derived[:3]), ONE_ATTEMPT)
        mde = None
        if same_everywhere:
            why_not["mde"] = f"{ONE_ATTEMPT}; and the difference was the same on every task"
        else:
            # With one attempt the spread of d_i already holds both kinds of variance.
            assert spread is not None  # two or more tasks, so var(d_i) exists
            mde = minimum_detectable_difference(n, spread, 0.0, 0.0, 1.0, alpha, power)
        return Plan(repeats, s2a, s2b, None, target, None, None, mde, why_not)
    assert spread is not None  # two or more tasks, so var(d_i) exists
    omega2 = max(0.0, spread - (s2a + s2b) / repeats)
    if s2a + s2b == 0 and same_everywhere:
        why_not = dict.fromkeys(derived[1:], NO_VARIATION)
        return Plan(repeats, s2a, s2b, 0.0, target, None, None, None, why_not)
    why_not = {}
    if target == 0:
        tie = "the runs tie on average (a difference of 0): there is no difference to plan for"
        why_not = dict.fromkeys(derived[1:3], tie)
    return Plan(
        repeats,
        s2a,
        s2b,
        omega2,
        target,
        repeats_needed(n, target, omega2, s2a, s2b, alpha, power),
        tasks_needed(target, omega2, s2a, s2b, repeats, alpha, power),
        minimum_detectable_difference(n, omega2, s2a, s2b, repeats, alpha, power),
        why_not,
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
