"""Cluster-robust uncertainty: tasks that share a document (a group) or a category are
not independent, so their errors are summed within each cluster before squaring.

For per-task values v_i (task means, or paired differences d_i) in clusters g, with n
tasks and G clusters (docs/statistics.md):

    v̄ = mean(v_i),   S_g = Σ_{i in g} (v_i − v̄)
    Var(v̄) = G/(G−1) · Σ_g S_g² / n²,   SE = sqrt(Var),   interval v̄ ± t_{G−1}·SE

With one task per cluster this is sd(v, ddof=1)/sqrt(n), the unclustered SE. It is the
CR1 sandwich estimator of an intercept-only regression. No task: nothing is defined. One
cluster: the mean is defined, its SE is not (G−1 = 0), and every figure built on it is
None rather than a number that looks precise; so are they when every task has the same
value, as in the unclustered estimate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# One t distribution for the package: stats.py's, by the special functions it calls.
from agent_eval.score.stats import MeanEstimate, _t_ppf, _t_sf, no_spread

CLUSTER_CHOICES = ("none", "group", "category")
"""How tasks are clustered: none (each task its own cluster), by group, by category."""


@dataclass(frozen=True)
class ClusteredMean:
    """A mean over tasks with its cluster-robust SE and t-interval on G−1 df."""

    estimate: MeanEstimate
    """The mean, SE and interval; ``estimate.n`` counts tasks."""
    clusters: int
    """G, the number of clusters the tasks fell into."""


def clustered_mean(
    values: Sequence[float],
    clusters: Sequence[str],
    confidence: float = 0.95,
    bounds: tuple[float, float] | None = None,
) -> ClusteredMean:
    """Mean of ``values`` with the cluster-robust SE over ``clusters`` (one label each)."""
    if len(values) != len(clusters):
        raise ValueError("give one cluster label per value")
    n = len(values)
    if n == 0:
        return ClusteredMean(MeanEstimate(0, None, None, None, None, "no task to estimate from"), 0)
    mean = math.fsum(values) / n
    sums: dict[str, float] = {}
    for value, label in zip(values, clusters, strict=True):
        sums[label] = sums.get(label, 0.0) + (value - mean)
    g = len(sums)
    if g == 1:
        why = "one cluster; a cluster-robust spread needs 2 or more"
        return ClusteredMean(MeanEstimate(n, mean, None, None, None, why), 1)
    if no_spread(values):
        why = f"every task has the same value ({mean:.3f}); no spread to estimate from"
        return ClusteredMean(MeanEstimate(n, mean, None, None, None, why), g)
    variance = g / (g - 1) * math.fsum(s * s for s in sums.values()) / (n * n)
    se = math.sqrt(variance)
    half = _t_ppf(0.5 + confidence / 2, g - 1) * se
    lo, hi = mean - half, mean + half
    if bounds is not None:
        lo, hi = max(bounds[0], lo), min(bounds[1], hi)
    return ClusteredMean(MeanEstimate(n, mean, se, lo, hi), g)


def clustered_t_p(found: ClusteredMean) -> float | None:
    """Two-sided p-value of mean = 0 by t on G−1 df; None where the SE is undefined."""
    est = found.estimate
    if est.mean is None or est.se is None:
        return None
    return float(min(1.0, 2 * _t_sf(abs(est.mean / est.se), found.clusters - 1)))


def effective_variance(found: ClusteredMean) -> float | None:
    """n·Var(v̄): the per-task variance that gives the clustered SE, for planning; with
    one task per cluster it is var(v, ddof=1)."""
    est = found.estimate
    return None if est.se is None else est.n * est.se * est.se


def cluster_labels(
    task_ids: Sequence[str],
    by: str,
    groups: dict[str, str | None],
    categories: dict[str, str],
) -> list[str]:
    """Each task's cluster under ``by``; a task without a group is a cluster of its own."""
    if by == "none":
        return list(task_ids)
    if by == "group":
        return [f"group:{groups[t]}" if groups.get(t) else f"task:{t}" for t in task_ids]
    if by == "category":
        return [categories[t] for t in task_ids]
    raise ValueError(f"cluster by {by!r}: use one of {', '.join(CLUSTER_CHOICES)}")
