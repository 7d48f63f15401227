"""One attempt's cost at the user's own prices, for budgets checked while and after it runs.

The harness invents no price: without one there is no cost. With separate input and
output prices, an attempt that did not split its tokens has no known cost.
"""

from __future__ import annotations


def attempt_cost(
    tokens: int, prompt: int | None, completion: int | None, prices: dict[str, float | None]
) -> float | None:
    """The cost of ``tokens`` (``prompt`` + ``completion``) at ``prices`` per million."""
    flat = prices.get("per_million")
    if flat is not None:
        return tokens * flat / 1e6
    price_in, price_out = prices.get("input_per_million"), prices.get("output_per_million")
    if price_in is None and price_out is None:
        return None
    if prompt is None or completion is None:
        return None
    # The exact sum over one denominator, then one correctly rounded division: the float
    # that float(prompt * Fraction(price_in) + completion * Fraction(price_out)) / 10**6
    # gives, without building a Fraction per attempt (a report prices every attempt).
    top_in, bottom_in = (price_in or 0.0).as_integer_ratio()
    top_out, bottom_out = (price_out or 0.0).as_integer_ratio()
    numerator = prompt * top_in * bottom_out + completion * top_out * bottom_in
    return numerator / (bottom_in * bottom_out * 1_000_000)
