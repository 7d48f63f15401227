"""The duel's confidence sequence: hand-computed cases, its shape, and its error rate."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from agent_eval.score.sequential import confidence_sequence, decide, projected_rounds
from agent_eval.score.stats import paired_comparison


def test_one_task_one_round_rejects_nothing() -> None:
    # After one attempt the stake is sqrt(2·ln 40 / (0.25·1·ln 2)) = 6.52, capped at
    # 0.5/m; the best wealth, near m = 0 on the [0, 1] scale, is 1 + 6.52 = 7.52 < 40.
    (only,) = confidence_sequence([[1]])
    assert (only.lo, only.hi) == (-1.0, 1.0)
    assert only.estimate == 1.0
    assert decide(only) == "undecided"


def test_a_round_that_b_wins_on_all_fifteen_tasks_settles_it() -> None:
    # Stake after 15 attempts: sqrt(2·ln 40 / (0.25·15·ln 16)) = 0.842; against d = 0
    # (m = 0.5) each win multiplies the wealth by 1 + 0.842·0.5, and 15 of them give
    # ln-wealth 15·ln(1.421) = 5.27 > ln 40 = 3.69: 0 is rejected in round one.
    stake = math.sqrt(2 * math.log(40) / (0.25 * 15 * math.log(16)))
    assert 15 * math.log1p(stake * 0.5) > math.log(40)
    (first,) = confidence_sequence([[1] * 15])
    assert first.lo > 0
    assert decide(first) == "b_better"


def test_swapping_the_sides_mirrors_the_interval() -> None:
    rng = np.random.default_rng(3)
    rounds = (rng.integers(0, 2, (8, 15)) - rng.integers(0, 2, (8, 15))).tolist()
    ahead = confidence_sequence(rounds)
    mirrored = confidence_sequence([[-d for d in r] for r in rounds])
    for one, other in zip(ahead, mirrored, strict=True):
        assert one.lo == pytest.approx(-other.hi, abs=1e-9)
        assert one.hi == pytest.approx(-other.lo, abs=1e-9)


def test_the_sequence_only_narrows_and_keeps_its_estimate() -> None:
    rounds = [[1, 0, -1, 0, 1]] * 12
    intervals = confidence_sequence(rounds)
    for before, after in itertools.pairwise(intervals):
        assert before.lo <= after.lo <= after.hi <= before.hi
    assert all(iv.estimate == pytest.approx(0.2) for iv in intervals)
    assert [iv.rounds for iv in intervals] == list(range(1, 13))


def test_identical_sides_settle_on_no_difference_within_a_margin() -> None:
    intervals = confidence_sequence([[0] * 15] * 20)
    assert decide(intervals[0], margin=0.1) == "undecided"
    assert decide(intervals[-1], margin=0.1) == "no_difference"
    assert decide(intervals[-1]) == "undecided"  # no margin: nothing but a difference ends it


def test_peeking_after_every_round_keeps_false_decisions_under_alpha() -> None:
    # Under the null both sides share each task's pass probability, drawn with a
    # U-shaped spread like a real suite's (most tasks nearly always or never pass).
    rng = np.random.default_rng(20261201)
    tasks, rounds, duels, alpha = 15, 20, 200, 0.05
    false = naive = 0
    for _ in range(duels):
        p = rng.beta(0.6, 0.6, size=tasks)
        a, b = (rng.random((rounds, tasks)) < p).astype(int), (rng.random((rounds, tasks)) < p)
        diffs = b - a
        false += any(decide(iv) != "undecided" for iv in confidence_sequence(diffs.tolist()))
        # Beside it, `compare`'s paired t test rerun after every round, stopping at p < alpha.
        totals = ((k, a[:k].sum(0), b[:k].sum(0)) for k in range(1, rounds + 1))
        looks = (
            paired_comparison([(k, int(x), k, int(y)) for x, y in zip(ta, tb, strict=True)])
            for k, ta, tb in totals
        )
        naive += any(c.p_population is not None and c.p_population < alpha for c in looks)
    assert false / duels <= alpha
    assert naive / duels > 2 * alpha  # about 0.25 over 2,000 duels (benchmarks/RESULTS.md)


def test_projection_needs_two_rounds_and_something_to_aim_at() -> None:
    assert projected_rounds([[1, 0, 0]]) is None
    assert projected_rounds([[0, 0], [0, 0]]) is None  # no difference and no margin
    clear = [[1, 1, 0, 1, 0, 1, 1, 0, 1, 1]] * 2
    soon = projected_rounds(clear)
    assert soon is not None and soon >= 2
    faint = [[1, 0, 0, 0, 0, 0, 0, 0, 0, -1, 0, 1, 0, 0, 0]] * 2
    later = projected_rounds(faint)
    assert later is None or later > soon


@pytest.mark.parametrize(
    ("rounds", "alpha", "message"),
    [
        ([[2]], 0.05, "round 1"),
        ([[]], 0.05, "round 1"),
        ([[0]], 1.5, "alpha"),
    ],
)
def test_bad_input_names_the_problem(rounds: list[list[int]], alpha: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        confidence_sequence(rounds, alpha)
