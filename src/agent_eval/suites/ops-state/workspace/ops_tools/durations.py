"""Read the short durations used in ops configs, such as '90s', '15m', '2h', '7d', '1w'."""

from __future__ import annotations

UNITS = {"s": 1, "m": 60, "h": 60, "d": 86_400, "w": 604_800}
"""Seconds in one of each unit."""


def parse_duration(text: str) -> int:
    """The number of seconds in a duration such as '90s', '15m', '2h', '7d' or '1w'.

    The number is a whole number (zero or more digits, at least one); the unit is one of
    s, m, h, d and w, in either case. Spaces around the whole text are ignored. Anything
    else raises ValueError.
    """
    cleaned = text.strip().lower()
    number, unit = cleaned[:-1], cleaned[-1:]
    if not (number.isascii() and number.isdigit()) or unit not in UNITS:
        raise ValueError(f"not a duration: {text!r}")
    return int(number) * UNITS[unit]
