"""Hidden checks of ops_tools.durations, copied into a copy of the workspace only after
the agent has finished, so they judge the fix itself and not the visible tests."""

from __future__ import annotations

import sys
import unittest
from pathlib import Path

# Appended, not prepended: a module the agent left in the workspace cannot shadow the
# standard library (the check runs with -I, so the workspace is not on the path at all).
sys.path.append(str(Path(__file__).resolve().parents[1]))

from ops_tools.durations import parse_duration


class EveryUnit(unittest.TestCase):
    def test_each_unit(self) -> None:
        cases = {"45s": 45, "15m": 900, "3h": 10_800, "1h": 3600, "2d": 172_800, "1w": 604_800}
        for text, seconds in cases.items():
            with self.subTest(text=text):
                self.assertEqual(parse_duration(text), seconds)

    def test_units_agree(self) -> None:
        self.assertEqual(parse_duration("24h"), parse_duration("1d"))
        self.assertEqual(parse_duration("60m"), parse_duration("1h"))

    def test_case_and_spaces(self) -> None:
        self.assertEqual(parse_duration(" 2H "), 7200)
        self.assertEqual(parse_duration("0s"), 0)


class Refusals(unittest.TestCase):
    def test_refuses_what_is_not_a_duration(self) -> None:
        for text in ("", "h", "10", "1.5h", "-1h", "10x", "h2", "2 h"):
            with self.subTest(text=text), self.assertRaises(ValueError):
                parse_duration(text)


if __name__ == "__main__":
    unittest.main()
