"""An anytime-valid confidence sequence for the mean paired difference, round by round.

A duel runs one attempt per task on each side per round. Task i in round t gives
d_ti = passed_B - passed_A in {-1, 0, 1}, whose mean on a fixed suite is that task's
true difference mu_i; the target is their mean over tasks, mu, the paired difference
`compare` reports. This is claim (b), "B beats A on exactly this suite": the task is
the unit, attempts are nested in tasks, and only the attempts are random.

The sequence is the hedged betting confidence sequence of Waudby-Smith and Ramdas,
"Estimating means of bounded random variables by betting" (JRSS B, 2024), Theorem 3,
with predictable plug-in bets, applied per attempt inside each round. A round bets one
stake on all its tasks at once. For a candidate m its wealth then grows by the product
over tasks of (1 + lambda·(d_ti - m)), whose expectation is at most 1 when mu = m: the
tasks are independent, and by the inequality of arithmetic and geometric means a
product of terms with mean 1 + lambda·(mu - m) is at most (1 + lambda·(mu - m))^n. So
each wealth is a nonnegative supermartingale over rounds, Ville's inequality bounds the
chance that it ever reaches 1/alpha, and the interval of the m not yet rejected holds
at every round at once, however often it is looked at.

Every function is pure: no I/O, no clock, no randomness.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

Decision = Literal["a_better", "b_better", "no_difference", "undecided"]

_GRID = np.linspace(0.0, 1.0, 4001)
"""Candidate means on the [0, 1] scale, z = (d + 1) / 2; a step of 0.0005 in d."""
_STAKE_CAP = 0.5
"""The most of its wealth a bet may stake, as the paper suggests; it keeps late rounds tight."""


@dataclass(frozen=True)
class Interval:
    """Where the mean difference (B - A) lies after some rounds, at every round at once."""

    rounds: int
    """How many rounds went into it."""
    estimate: float
    """The mean of the differences seen so far: compare's paired difference."""
    lo: float
    """Lower end, in [-1, 1]."""
    hi: float
    """Upper end, in [-1, 1]."""


def _stake(log_term: float, variance: float, seen: int) -> float:
    """The predictable plug-in stake of the paper, for a bet after ``seen`` attempts."""
    return math.sqrt(2 * log_term / (variance * seen * math.log1p(seen)))


def confidence_sequence(
    rounds: Sequence[Sequence[int | float]], alpha: float = 0.05
) -> list[Interval]:
    """The interval after each round; a round lists each task's difference in [-1, 1].

    Each interval lies inside the one before it (the running intersection, itself valid).
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1) (got {alpha})")
    log_term = math.log(2 / alpha)
    threshold = math.log(1 / alpha) - math.log(0.5)  # each side holds half the wealth
    log_up = np.zeros_like(_GRID)  # betting that the mean is above m
    log_down = np.zeros_like(_GRID)  # betting that it is below m
    seen, total, squares, running_mean = 0, 0.0, 0.25, 0.5  # the estimates' priors
    lo, hi = 0.0, 1.0
    out: list[Interval] = []
    for number, diffs in enumerate(rounds, start=1):
        z = (np.asarray(diffs, dtype=float) + 1) / 2
        if z.size == 0 or np.any((z < 0) | (z > 1)):
            raise ValueError(f"round {number}: give each task's difference, in [-1, 1]")
        stake = _stake(log_term, squares / (seen + 1), seen + z.size)
        up = np.minimum(stake, _STAKE_CAP / np.maximum(_GRID, 1e-12))
        down = np.minimum(stake, _STAKE_CAP / np.maximum(1 - _GRID, 1e-12))
        deviation = z[:, None] - _GRID[None, :]
        log_up += np.log1p(up * deviation).sum(axis=0)
        log_down += np.log1p(-down * deviation).sum(axis=0)
        for value in z.tolist():  # the plug-in variance, updated attempt by attempt
            seen += 1
            total += value
            running_mean = (0.5 + total) / (seen + 1)
            squares += (value - running_mean) ** 2
        kept = np.flatnonzero(np.maximum(log_up, log_down) < threshold)
        if kept.size:  # widen by one grid step so the grid never cuts the interval short
            lo = max(lo, float(_GRID[max(kept[0] - 1, 0)]))
            hi = min(hi, float(_GRID[min(kept[-1] + 1, _GRID.size - 1)]))
        if lo > hi:  # every m rejected: only on a path of probability below alpha
            lo = hi = total / seen
        out.append(Interval(number, 2 * total / seen - 1, 2 * lo - 1, 2 * hi - 1))
    return out


def decide(interval: Interval, margin: float | None = None) -> Decision:
    """What the interval settles: a side is better once it excludes 0, and no difference
    once it lies within plus or minus the margin; otherwise nothing yet."""
    if interval.lo > 0:
        return "b_better"
    if interval.hi < 0:
        return "a_better"
    if margin is not None and -margin <= interval.lo and interval.hi <= margin:
        return "no_difference"
    return "undecided"


def projected_rounds(
    rounds: Sequence[Sequence[int | float]],
    alpha: float = 0.05,
    margin: float | None = None,
    limit: int = 1000,
) -> int | None:
    """Rounds in all that would likely settle the duel, were later rounds like these.

    It finds the first round count at which the expected log-wealth against a mean h
    away from the truth, sum of lambda·h - lambda²·(variance + h²)/2 over attempts,
    reaches the rejection threshold for h below the observed |difference| (a side wins)
    or below the margin less it (no difference). None before two rounds, with nothing
    to aim at, or when no count up to ``limit`` would do.
    """
    if len(rounds) < 2:
        return None
    flat = np.concatenate([np.asarray(r, dtype=float) for r in rounds])
    tasks = len(rounds[-1])
    mean = float(flat.mean())
    variance = max(float(flat.var(ddof=1)) / 4, 1e-4)  # on the [0, 1] scale
    targets = [abs(mean) / 2] if mean != 0 else []
    if margin is not None and margin > abs(mean):
        targets.append((margin - abs(mean)) / 2)
    if not targets:
        return None
    h = max(targets)
    log_term = math.log(2 / alpha)
    threshold = math.log(2 / alpha)
    growth, seen = 0.0, 0
    for number in range(1, limit + 1):
        stake = min(_stake(log_term, variance, seen + tasks), _STAKE_CAP)
        growth += tasks * (stake * h - stake * stake * (variance + h * h) / 2)
        seen += tasks
        if number >= len(rounds) and growth >= threshold:
            return number
    return None
