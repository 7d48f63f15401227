"""The specification of ops_tools.durations, as examples."""

from __future__ import annotations

import unittest

from ops_tools.durations import parse_duration


class ParseDuration(unittest.TestCase):
    def test_seconds(self) -> None:
        self.assertEqual(parse_duration("90s"), 90)

    def test_hours(self) -> None:
        self.assertEqual(parse_duration("2h"), 7200)

    def test_days(self) -> None:
        self.assertEqual(parse_duration("7d"), 604_800)

    def test_rejects_a_bare_number(self) -> None:
        with self.assertRaises(ValueError):
            parse_duration("10")


if __name__ == "__main__":
    unittest.main()
