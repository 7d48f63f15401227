"""One attempt's cost at the user's own prices, for budgets checked while and after it runs.

The harness invents no price: without one there is no cost. With separate input and
output prices, an attempt that did not split its tokens has no known cost.
"""

from __future__ import annotations

from collections.abc import Sequence


def attempt_cost(
    tokens: int, prompt: int | None, completion: int | None, prices: dict[str, float | None]
) -> float | None:
    """The cost of ``tokens`` (``prompt`` + ``completion``) at ``prices`` per million."""
    return attempt_costs((tokens,), (prompt,), (completion,), prices)[0]


def attempt_costs(
    tokens: Sequence[int],
    prompts: Sequence[int | None],
    completions: Sequence[int | None],
    prices: dict[str, float | None],
) -> list[float | None]:
    """``attempt_cost`` of each attempt, the prices worked out once: a report prices
    every attempt, 200,000 of them for a comparison."""
    flat = prices.get("per_million")
    if flat is not None:
        return [count * flat / 1e6 for count in tokens]
    price_in, price_out = prices.get("input_per_million"), prices.get("output_per_million")
    if price_in is None and price_out is None:
        return [None] * len(tokens)
    # The exact sum over one denominator, then one correctly rounded division: the float
    # that float(prompt * Fraction(price_in) + completion * Fraction(price_out)) / 10**6
    # gives, without building a Fraction per attempt.
    top_in, bottom_in = (price_in or 0.0).as_integer_ratio()
    top_out, bottom_out = (price_out or 0.0).as_integer_ratio()
    scale_in, scale_out = top_in * bottom_out, top_out * bottom_in
    denominator = bottom_in * bottom_out * 1_000_000
    return [
        None
        if prompt is None or completion is None
        else (prompt * scale_in + completion * scale_out) / denominator
        for prompt, completion in zip(prompts, completions, strict=True)
    ]
