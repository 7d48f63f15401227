"""An attempt's cost at split prices: the exact rational cost, rounded once."""

from __future__ import annotations

import random
from fractions import Fraction

from agent_eval.score import attempt_cost


def _exact(prompt: int, completion: int, price_in: float | None, price_out: float | None) -> float:
    cost = prompt * Fraction(price_in or 0.0) + completion * Fraction(price_out or 0.0)
    return float(cost / 1_000_000)


def test_split_prices_give_the_correctly_rounded_exact_cost() -> None:
    rng = random.Random(29)
    prices = [None, 0.0, 0.1, 0.5, 1.5, 2.5e-7, 3.0, 15.0, 1e12, rng.random(), 1 / 3]
    for _ in range(20_000):
        price_in, price_out = rng.choice(prices), rng.choice(prices)
        if price_in is None and price_out is None:
            continue
        prompt, completion = rng.randint(0, 10**7), rng.randint(0, 10**6)
        split = {"input_per_million": price_in, "output_per_million": price_out}
        got = attempt_cost(prompt + completion, prompt, completion, split)
        assert got == _exact(prompt, completion, price_in, price_out)


def test_cost_without_a_price_or_a_split_is_unknown() -> None:
    assert attempt_cost(10, 6, 4, {}) is None
    assert attempt_cost(10, None, 4, {"input_per_million": 1.0}) is None
    assert attempt_cost(2_000_000, None, None, {"per_million": 1.5}) == 3.0
