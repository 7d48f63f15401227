"""Cluster-robust SEs against a reference computation, and `--cluster` through the CLI.

The reference is the CR1 sandwich of an intercept-only least-squares fit, written out
with numpy: bread (X'X)^-1, meat sum_g (X_g' e_g)^2, scaled by G/(G-1).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from agent_eval.score import stats
from agent_eval.score.clusters import clustered_mean, clustered_t_p, effective_variance


def sandwich_se(values: list[float], clusters: list[str]) -> float:
    """The reference: OLS of values on a constant, cluster-robust CR1 variance."""
    y = np.asarray(values, dtype=float)
    x = np.ones((len(y), 1))
    beta = np.linalg.solve(x.T @ x, x.T @ y)
    resid = y - x @ beta
    bread = np.linalg.inv(x.T @ x)
    labels = sorted(set(clusters))
    meat = np.zeros((1, 1))
    for label in labels:
        rows = [i for i, c in enumerate(clusters) if c == label]
        score = x[rows].T @ resid[rows]
        meat += np.outer(score, score)
    g = len(labels)
    return float(np.sqrt((g / (g - 1) * bread @ meat @ bread)[0, 0]))


@pytest.mark.parametrize(
    ("values", "clusters"),
    [
        ([1, 0, 1, 1, 0, 0], ["a", "a", "b", "b", "c", "c"]),
        ([1, 1, 1, 0, 0, 0, 0.5, 1], ["a", "a", "a", "b", "b", "b", "c", "d"]),
        ([0.2, 0.9, 0.4, 0.4, 0.7], ["x", "y", "x", "y", "x"]),
    ],
)
def test_matches_the_sandwich_reference(values: list[float], clusters: list[str]) -> None:
    found = clustered_mean(values, clusters)
    assert found.clusters == len(set(clusters))
    assert found.estimate.mean == pytest.approx(float(np.mean(values)))
    assert found.estimate.se == pytest.approx(sandwich_se(values, clusters))
    half = sps.t.ppf(0.975, found.clusters - 1) * sandwich_se(values, clusters)
    assert found.estimate.lo == pytest.approx(float(np.mean(values)) - half)
    assert found.estimate.hi == pytest.approx(float(np.mean(values)) + half)
    t = float(np.mean(values)) / sandwich_se(values, clusters)
    assert clustered_t_p(found) == pytest.approx(2 * sps.t.sf(abs(t), found.clusters - 1))


def test_first_example_by_hand() -> None:
    # mean 0.5; residual sums per cluster 0, +1, -1; Var = 3/2 * 2 / 36 = 1/12.
    found = clustered_mean([1, 0, 1, 1, 0, 0], ["a", "a", "b", "b", "c", "c"])
    assert found.estimate.se == pytest.approx(math.sqrt(1 / 12))
    assert effective_variance(found) == pytest.approx(6 / 12)


def test_one_task_per_cluster_is_the_unclustered_estimate() -> None:
    values = [1.0, 0.0, 0.5, 1.0, 0.25]
    found = clustered_mean(values, [str(i) for i in range(5)])
    plain = stats.mean_estimate(values)
    assert (found.estimate.se, found.estimate.lo, found.estimate.hi) == pytest.approx(
        (plain.se, plain.lo, plain.hi)
    )
    assert effective_variance(found) == pytest.approx(float(np.var(values, ddof=1)))


def test_empty_and_one_cluster_are_explicit() -> None:
    empty = clustered_mean([], [])
    assert (empty.clusters, empty.estimate.n, empty.estimate.mean, empty.estimate.se) == (
        0, 0, None, None)  # fmt: skip
    one = clustered_mean([1.0, 0.0, 1.0], ["a", "a", "a"])
    assert (one.clusters, one.estimate.mean, one.estimate.se, one.estimate.lo) == (
        1, pytest.approx(2 / 3), None, None)  # fmt: skip
    assert clustered_t_p(one) is None and effective_variance(one) is None
    with pytest.raises(ValueError, match="one cluster label per value"):
        clustered_mean([1.0], [])
