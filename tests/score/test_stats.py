"""Statistics against docs/statistics.md's reference values, its worked example, and properties."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_eval.score import permutation, planning, stats
from agent_eval.score.pass_k import pass_hat_k

# The worked example: A passes 9 of 15 tasks every time. B adds +1.0, +0.8 and +0.7
# on three of A's failing tasks and -0.5 on one of A's passing tasks.
P_A = [1.0] * 9 + [0.0] * 6
P_B_CONCENTRATED = [1.0] * 8 + [0.5] + [1.0, 0.8, 0.7] + [0.0] * 3
# The same +2/15 spread as p = 1/3 on all six of A's failing tasks.
P_B_SPREAD = [1.0] * 9 + [1 / 3] * 6


def true_planning_inputs(p_a: list[float], p_b: list[float]) -> tuple[float, float, float]:
    """omega² over the fixed true differences (population variance), and each sigma²."""
    d = np.array(p_b) - np.array(p_a)
    return (
        float(np.var(d)),
        float(np.mean([p * (1 - p) for p in p_a])),
        float(np.mean([p * (1 - p) for p in p_b])),
    )


def test_wilson_9_of_15() -> None:
    lo, hi = stats.wilson_interval(9, 15)
    assert (round(lo, 3), round(hi, 3)) == (0.357, 0.802)


def test_wilson_empty_is_whole_range() -> None:
    assert stats.wilson_interval(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize(
    ("b", "c", "p"), [(2, 0, 0.5), (6, 0, 0.03125), (0, 6, 0.03125), (0, 0, 1.0), (3, 3, 1.0)]
)
def test_mcnemar_exact(b: int, c: int, p: float) -> None:
    assert stats.mcnemar_exact(b, c) == pytest.approx(p)


@pytest.mark.parametrize(("b", "c"), [(2, 0), (6, 0), (5, 2), (1, 4)])
def test_permutation_with_one_attempt_is_mcnemar(b: int, c: int) -> None:
    pairs = [(1, 0, 1, 1)] * b + [(1, 1, 1, 0)] * c + [(1, 1, 1, 1)] * 4 + [(1, 0, 1, 0)] * 3
    result = permutation.permutation_test(pairs)
    assert result.exact
    assert result.p_value == pytest.approx(stats.mcnemar_exact(b, c))


def test_permutation_monte_carlo_agrees_with_exact_and_is_seeded() -> None:
    pairs = [(4, 4, 4, 4)] * 8 + [(4, 0, 4, 4), (4, 0, 4, 3), (4, 0, 4, 3), (4, 4, 4, 2)]
    exact = permutation.permutation_test(pairs)
    sampled = permutation.permutation_test(pairs, seed=7, permutations=20_000, max_exact_work=0)
    again = permutation.permutation_test(pairs, seed=7, permutations=20_000, max_exact_work=0)
    assert exact.exact and not sampled.exact and sampled.permutations == 20_000
    assert sampled.p_value == again.p_value
    assert sampled.p_value == pytest.approx(exact.p_value, abs=0.005)


def _exact_by_enumeration(pairs: list[tuple[int, int, int, int]]) -> Fraction:
    """The permutation p-value from every relabelling, in exact rational arithmetic."""
    laws = []
    for k_a, a, k_b, b in pairs:
        s, total = a + b, k_a + k_b
        laws.append(
            [
                (
                    Fraction(
                        math.comb(s, x) * math.comb(total - s, k_b - x), math.comb(total, k_b)
                    ),
                    Fraction(x, k_b) - Fraction(s - x, k_a),
                )
                for x in range(max(0, k_b - (total - s)), min(s, k_b) + 1)
            ]
        )
    observed = abs(sum(Fraction(b, k_b) - Fraction(a, k_a) for k_a, a, k_b, b in pairs))
    p = Fraction(0)
    for outcome in itertools.product(*laws):
        if abs(sum(d for _, d in outcome)) >= observed:
            p += math.prod(q for q, _ in outcome)
    return p


mixed_pair_st = st.tuples(st.integers(1, 4), st.integers(1, 4)).flatmap(
    lambda k: st.tuples(st.just(k[0]), st.integers(0, k[0]), st.just(k[1]), st.integers(0, k[1]))
)


@settings(max_examples=150, deadline=None)
@given(st.lists(mixed_pair_st, min_size=1, max_size=5))
def test_exact_permutation_matches_enumerating_every_relabelling(
    pairs: list[tuple[int, int, int, int]],
) -> None:
    result = permutation.permutation_test(pairs)
    assert result.exact
    assert result.p_value == pytest.approx(float(_exact_by_enumeration(pairs)), rel=1e-12)


def _full_grid_p(pairs: list[tuple[int, int, int, int]]) -> float:
    """The exact test as first written: every task convolved on the full common grid, no
    cell skipped and no tail dropped (slow, but plainly right)."""
    scale = math.lcm(*(n for p in pairs for n in (p[0], p[2])))
    dist, offset, observed = np.ones(1), 0, 0
    for k_a, a, k_b, b in pairs:
        s, total, step = a + b, k_a + k_b, scale // k_b + scale // k_a
        low, high = max(0, k_b - (total - s)), min(s, k_b)
        kernel = np.zeros((high - low) * step + 1)
        for x in range(low, high + 1):
            kernel[(x - low) * step] = (
                math.comb(s, x) * math.comb(total - s, k_b - x) / math.comb(total, k_b)
            )
        dist = np.convolve(dist, kernel)
        offset += low * step - s * (scale // k_a)
        observed += step * b - s * (scale // k_a)
    return float(dist[np.abs(np.arange(len(dist)) + offset) >= abs(observed)].sum())


@pytest.mark.parametrize("lift", [0.0, 0.03, 0.15])
def test_exact_permutation_at_scale_matches_the_full_grid(lift: float) -> None:
    # 300 tasks of 30 attempts each: p-values from about 0.5 down to far below 1e-100,
    # where any tail the fast path drops would show.
    rng = np.random.default_rng(5)
    p_task = rng.beta(1.2, 0.9, size=300)
    pairs = [
        (30, int(rng.binomial(30, p)), 30, int(rng.binomial(30, min(1.0, p + lift))))
        for p in p_task
    ]
    result = permutation.permutation_test(pairs)
    assert result.exact
    assert result.p_value == pytest.approx(_full_grid_p(pairs), rel=1e-9)


def test_monte_carlo_with_mixed_repeats_agrees_with_exact() -> None:
    # An interrupted run: most tasks have 4 attempts in both runs, a few fewer in B.
    pairs = (
        [(4, 4, 4, 4)] * 6
        + [(4, 1, 4, 3), (4, 0, 4, 2), (4, 2, 4, 4), (4, 3, 4, 1)]
        + [(4, 1, 3, 3), (4, 0, 2, 1), (4, 2, 1, 1), (4, 1, 3, 2)]
    )
    exact = permutation.permutation_test(pairs)
    sampled = permutation.permutation_test(pairs, seed=3, permutations=50_000, max_exact_work=0)
    assert exact.exact and not sampled.exact and sampled.permutations == 50_000
    assert (
        sampled.p_value
        == permutation.permutation_test(
            pairs, seed=3, permutations=50_000, max_exact_work=0
        ).p_value
    )
    assert sampled.p_value == pytest.approx(exact.p_value, abs=0.006)


def test_permutation_empty_and_all_ties() -> None:
    assert permutation.permutation_test([]).p_value == 1.0
    assert permutation.permutation_test([(3, 3, 3, 3), (3, 0, 3, 0)]).p_value == 1.0


def test_task_mean_uses_t_interval() -> None:
    means = [1.0] * 9 + [0.0] * 6
    est = stats.mean_estimate(means)
    se = float(np.std(means, ddof=1)) / math.sqrt(15)
    assert est.mean == pytest.approx(0.6)
    assert est.se == pytest.approx(se)
    assert est.hi == pytest.approx(0.6 + 2.1447866879 * se)
    assert est.why_not is None
    assert stats.mean_estimate([]).mean is None
    assert stats.mean_estimate([0.5]).se is None


@pytest.mark.parametrize(
    ("values", "why"),
    [
        ([], "no task to estimate from"),
        ([0.5], "one task; a spread needs 2 or more"),
        ([0.0] * 15, "every task has the same value (0.000); no spread to estimate from"),
        ([1.0] * 15, "every task has the same value (1.000); no spread to estimate from"),
        (
            [2 / 3 - 1 / 3, 1 / 3],
            "every task has the same value (0.333); no spread to estimate from",
        ),
    ],
)
def test_no_variation_is_not_an_se_of_zero(values: list[float], why: str) -> None:
    est = stats.mean_estimate(values, bounds=(0, 1))
    assert (est.se, est.lo, est.hi, est.why_not) == (None, None, None, why)


def test_a_near_miss_of_no_variation_is_estimated() -> None:
    est = stats.mean_estimate([0.0] * 14 + [1 / 3])
    assert est.se is not None and est.se > 0 and est.why_not is None


def test_variance_split() -> None:
    counts = [(4, 4), (4, 0), (4, 2), (4, 1)]
    split = stats.variance_split(counts)
    assert isinstance(split, stats.VarianceSplit)
    within = float(np.mean([4 / 3 * m * (1 - m) for m in (1, 0, 0.5, 0.25)]))
    assert split.within == pytest.approx(within)
    between = float(np.var([1, 0, 0.5, 0.25], ddof=1)) - within / 4
    assert split.between == pytest.approx(between)
    one_attempt = stats.variance_split([(1, 1), (1, 0)])
    assert one_attempt == stats.NotEstimable(
        "some task has one attempt; the split needs 2 or more per task"
    )
    assert stats.variance_split([(3, 1)]) == stats.NotEstimable(
        "one task; the split between tasks needs 2 or more"
    )
    assert isinstance(stats.variance_split([]), stats.NotEstimable)
    deterministic = stats.variance_split([(3, 3), (3, 0)])
    assert isinstance(deterministic, stats.VarianceSplit) and deterministic.within == 0.0


@pytest.mark.parametrize(
    ("n", "c", "k", "at", "hat"),
    [
        (5, 2, 1, 0.4, 0.4),
        (5, 2, 2, 0.7, 0.1),
        (5, 0, 3, 0.0, 0.0),
        (5, 5, 5, 1.0, 1.0),
        (5, 3, 3, 1.0, 0.1),
        (4, 1, 4, 1.0, 0.0),
    ],
)
def test_pass_at_k_and_pass_hat_k(n: int, c: int, k: int, at: float, hat: float) -> None:
    assert stats.pass_at_k(n, c, k) == pytest.approx(at)
    assert pass_hat_k(n, c, k) == pytest.approx(hat)


def test_pass_k_uses_each_tasks_own_attempts() -> None:
    counts = [(3, 1), (1, 1), (3, 3)]
    est = stats.pass_hat_k_over_tasks(counts, 2)
    assert est.n == 2 and est.mean == pytest.approx((0 + 1) / 2)
    assert stats.pass_at_k_over_tasks(counts, 4).mean is None
    with pytest.raises(ValueError, match="k <= attempts"):
        stats.pass_at_k(2, 1, 3)


def test_worked_example_floor_binds() -> None:
    omega2, s2a, s2b = true_planning_inputs(P_A, P_B_CONCENTRATED)
    delta = 2 / 15
    assert round(omega2, 4) == 0.1409
    assert round(15 * delta**2 / planning.z_sum() ** 2, 4) == 0.0340
    assert round(planning.z_sum() ** 2, 3) == 7.849
    assert planning.repeats_needed(15, delta, omega2, s2a, s2b) is None
    assert planning.tasks_needed(delta, omega2, s2a, s2b, repeats=1) == 81
    assert planning.tasks_needed(delta, omega2, s2a, s2b, repeats=10**9) == 63
    # Claim (b) on a fixed suite has no between-task floor: the normal formula says 2.
    assert planning.repeats_needed(15, delta, 0.0, s2a, s2b) == 2


def test_worked_example_spread_needs_13_repeats() -> None:
    omega2, s2a, s2b = true_planning_inputs(P_A, P_B_SPREAD)
    assert (round(omega2, 4), round(s2b, 4)) == (0.0267, 0.0889)
    assert planning.repeats_needed(15, 2 / 15, omega2, s2a, s2b) == 13


def test_mde_matches_formula_and_planning_edges() -> None:
    mde = planning.minimum_detectable_difference(15, 0.02, 0.1, 0.1, 4)
    assert mde == pytest.approx(math.sqrt(7.848879734 * (0.02 + 0.2 / 4) / 15))
    assert planning.minimum_detectable_difference(0, 0.02, 0.1, 0.1, 4) is None
    assert planning.repeats_needed(15, 0.0, 0.0, 0.1, 0.1) is None
    assert planning.tasks_needed(0.0, 0.0, 0.1, 0.1, 4) is None
    with pytest.raises(ValueError, match="alpha and power"):
        planning.z_sum(0.0, 0.8)


def test_plan_from_pairs_needs_two_attempts() -> None:
    pairs = [(1, 1, 1, 0), (1, 0, 1, 1), (1, 1, 1, 1)]
    plan = planning.plan_from_pairs(pairs)
    assert plan.repeats_needed is None and plan.sigma2_a is None and plan.mde is not None
    assert plan.not_estimable == dict.fromkeys(
        ("sigma2_a", "sigma2_b", "omega2", "repeats_needed", "tasks_needed"), planning.ONE_ATTEMPT
    )


ALL_FAIL = [(3, 0, 3, 0)] * 15
ALL_PASS = [(3, 3, 3, 3)] * 15


@pytest.mark.parametrize("pairs", [ALL_FAIL, ALL_PASS, [(3, 0, 3, 3)] * 15])
@pytest.mark.parametrize("delta", [None, 0.1])
def test_plan_without_variation_estimates_nothing(
    pairs: list[tuple[int, int, int, int]], delta: float | None
) -> None:
    plan = planning.plan_from_pairs(pairs, delta)
    assert (plan.sigma2_a, plan.sigma2_b, plan.omega2) == (0.0, 0.0, 0.0)
    assert (plan.mde, plan.repeats_needed, plan.tasks_needed) == (None, None, None)
    assert plan.not_estimable == dict.fromkeys(
        ("repeats_needed", "tasks_needed", "mde"), planning.NO_VARIATION
    )


def test_plan_with_one_task_or_none() -> None:
    one = planning.plan_from_pairs([(3, 1, 3, 2)])
    assert (one.omega2, one.mde, one.repeats_needed, one.tasks_needed) == (None,) * 4
    assert set(one.not_estimable.values()) == {"one task; planning needs 2 or more"}
    none = planning.plan_from_pairs([])
    assert set(none.not_estimable.values()) == {"no task has attempts in both runs"}


def test_plan_with_one_attempt_and_no_variation() -> None:
    plan = planning.plan_from_pairs([(1, 0, 1, 0)] * 15)
    assert plan.mde is None
    assert plan.not_estimable["mde"].endswith("the difference was the same on every task")


def test_a_tie_has_no_difference_to_plan_for_but_a_detectable_one() -> None:
    plan = planning.plan_from_pairs([(3, 1, 3, 2), (3, 2, 3, 1), (3, 0, 3, 0)])
    assert plan.delta == 0 and plan.mde is not None and plan.mde > 0
    assert set(plan.not_estimable) == {"repeats_needed", "tasks_needed"}


def test_deterministic_tasks_that_differ_need_one_repeat() -> None:
    # Every attempt agreed within its task, but the tasks' differences vary: repeats buy
    # nothing, which is an estimate, not a missing one.
    pairs = [(3, 0, 3, 3)] * 10 + [(3, 0, 3, 0)] * 5
    plan = planning.plan_from_pairs(pairs)
    assert plan.omega2 is not None and plan.omega2 > 0 and plan.not_estimable == {}
    assert plan.mde is not None and plan.mde > 0


@pytest.mark.parametrize("pairs", [ALL_FAIL, ALL_PASS])
def test_paired_comparison_without_variation(pairs: list[tuple[int, int, int, int]]) -> None:
    cmp = stats.paired_comparison(pairs)
    assert cmp.difference.mean == 0.0
    assert (cmp.difference.se, cmp.difference.lo, cmp.difference.hi) == (None, None, None)
    assert cmp.difference.why_not == (
        "every task has the same difference (0.000); no spread to estimate from"
    )
    assert (cmp.se_unpaired, cmp.correlation, cmp.p_population) == (None, None, None)
    assert set(cmp.not_estimable) == {"se_unpaired", "correlation", "p_population"}
    assert cmp.not_estimable["se_unpaired"].startswith("A: every task has the same pass rate")


def test_plan_from_pairs_estimates() -> None:
    pairs = [(9, 9, 9, 9)] * 9 + [(9, 0, 9, 3)] * 6
    plan = planning.plan_from_pairs(pairs)
    s2b = 6 * (9 / 8 * (1 / 3) * (2 / 3)) / 15
    omega2 = float(np.var([0.0] * 9 + [1 / 3] * 6, ddof=1)) - s2b / 9
    assert plan.sigma2_a == 0.0 and plan.sigma2_b == pytest.approx(s2b)
    assert plan.omega2 == pytest.approx(omega2)
    budget = 15 * (2 / 15) ** 2 / planning.z_sum() ** 2
    assert plan.repeats_needed == math.ceil(s2b / (budget - omega2))


def test_paired_comparison() -> None:
    pairs = [(2, 2, 2, 2), (2, 0, 2, 1), (2, 1, 2, 2), (2, 0, 2, 0), (2, 2, 2, 1)]
    cmp = stats.paired_comparison(pairs)
    d = [0, 0.5, 0.5, 0, -0.5]
    assert cmp.n == 5 and cmp.difference.mean == pytest.approx(np.mean(d))
    assert cmp.difference.se == pytest.approx(np.std(d, ddof=1) / math.sqrt(5))
    m_a, m_b = [1, 0, 0.5, 0, 1], [1, 0.5, 1, 0, 0.5]
    assert cmp.correlation == pytest.approx(np.corrcoef(m_a, m_b)[0, 1])
    se_a = np.std(m_a, ddof=1) / math.sqrt(5)
    se_b = np.std(m_b, ddof=1) / math.sqrt(5)
    assert cmp.se_unpaired == pytest.approx(math.hypot(se_a, se_b))
    t = np.mean(d) / (np.std(d, ddof=1) / math.sqrt(5))
    assert cmp.p_population == pytest.approx(2 * (1 - _t_cdf(abs(t), 4)), abs=1e-9)
    empty = stats.paired_comparison([])
    assert empty.n == 0 and empty.mean_a is None and empty.p_population is None


def _t_cdf(x: float, df: int) -> float:
    from scipy.stats import t

    return float(t.cdf(x, df))


def test_fixed_suite_power_simulation_about_four_repeats() -> None:
    power = {
        k: planning.simulate_fixed_suite_power(P_A, P_B_CONCENTRATED, k, trials=300, seed=11)
        for k in (2, 3, 4)
    }
    assert power[2] < 0.5 < power[3] < 0.8 <= power[4]
    assert planning.simulate_fixed_suite_power(P_A, P_B_CONCENTRATED, 4, 300, 11) == power[4]


counts_st = st.integers(1, 12).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n)))


@settings(max_examples=200, deadline=None)
@given(counts_st, st.integers(1, 12))
def test_pass_at_k_at_least_pass_hat_k(count: tuple[int, int], k: int) -> None:
    n, c = count
    if k <= n:
        at, hat = stats.pass_at_k(n, c, k), pass_hat_k(n, c, k)
        # The stable product form of pass@k is a few ulps off the exact ratio.
        assert 0.0 <= hat <= at + 1e-12 and at <= 1.0


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 60).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
    st.sampled_from([0.8, 0.9, 0.95, 0.99]),
)
def test_wilson_inside_unit_interval(count: tuple[int, int], confidence: float) -> None:
    lo, hi = stats.wilson_interval(*count, confidence)
    assert 0.0 <= lo <= hi <= 1.0
    if count[1]:
        assert lo <= count[0] / count[1] + 1e-12 and count[0] / count[1] <= hi + 1e-12


pair_st = st.integers(1, 5).flatmap(
    lambda k: st.tuples(st.just(k), st.integers(0, k), st.just(k), st.integers(0, k))
)


@settings(max_examples=100, deadline=None)
@given(st.lists(pair_st, max_size=15))
def test_p_values_in_unit_interval(pairs: list[tuple[int, int, int, int]]) -> None:
    assert 0.0 < permutation.permutation_test(pairs).p_value <= 1.0
    p = stats.paired_comparison(pairs).p_population
    assert p is None or 0.0 < p <= 1.0


def test_pass_at_and_hat_every_k_are_each_k_in_a_fresh_dict() -> None:
    from agent_eval.score import pass_hat_every_k, pass_hat_k

    for attempts, passes in [(1, 0), (1, 1), (5, 2), (100, 37), (100, 100)]:
        ks = range(1, attempts + 1)
        at = stats.pass_at_every_k(attempts, passes)
        hat = pass_hat_every_k(attempts, passes)
        assert at == {str(k): stats.pass_at_k(attempts, passes, k) for k in ks}
        assert hat == {str(k): pass_hat_k(attempts, passes, k) for k in ks}
        at["1"] = hat["1"] = -1.0  # a caller's change reaches no other caller
        assert stats.pass_at_every_k(attempts, passes)["1"] != -1.0
        assert pass_hat_every_k(attempts, passes)["1"] != -1.0
    assert stats.pass_at_every_k(0, 0) == pass_hat_every_k(0, 0) == {}
