"""Run a Python check command and report, from inside, whether it ran to its end.

`python [FLAGS] -m agent_eval.score.check_report REPORT (SCRIPT | -m MODULE | -c CODE)
[ARGS]` runs the check as `python [FLAGS] ...` would, counts the tests that unittest or
pytest ran and failed, and only when the program has finished (returned, or raised
SystemExit) writes ``{"exit", "tests", "failed", "framework"}`` to REPORT. A check whose
process ends some other way, such as agent code it imported calling os._exit(0), leaves
no report, and so cannot pass (score/command_check.py).
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import traceback
import unittest
from dataclasses import asdict, dataclass
from typing import Any


@dataclass
class Counts:
    tests: int = 0
    failed: int = 0
    framework: str | None = None


def main() -> None:
    report, rest = sys.argv[1], sys.argv[2:]
    counts = Counts()
    _count_unittest(counts)
    code = _run(rest, counts)
    with open(report, "w", encoding="utf-8") as handle:
        json.dump({"exit": code, **asdict(counts)}, handle)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _run(rest: list[str], counts: Counts) -> int:
    try:
        if rest[0] == "-m":
            sys.argv = [rest[1], *rest[2:]]
            if rest[1] == "pytest":
                return _pytest(rest[2:], counts)
            runpy.run_module(rest[1], run_name="__main__", alter_sys=True)
        elif rest[0] == "-c":
            sys.argv = ["-c", *rest[2:]]
            exec(compile(rest[1], "<string>", "exec"), {"__name__": "__main__"})
        else:
            sys.argv = list(rest)
            if not (sys.flags.isolated or getattr(sys.flags, "safe_path", False)):
                sys.path[0] = os.path.dirname(os.path.abspath(rest[0]))  # as `python SCRIPT`
            runpy.run_path(rest[0], run_name="__main__")
    except SystemExit as exc:
        return _exit_code(exc.code)
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


def _exit_code(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    print(value, file=sys.stderr)
    return 1


def _count_unittest(counts: Counts) -> None:
    """Count what unittest runs, whoever starts it (unittest.main, a runner, pytest's
    unittest support)."""
    result = unittest.TestResult
    start, failure, error = result.startTest, result.addFailure, result.addError
    program = unittest.TestProgram.__init__

    def start_test(self: unittest.TestResult, test: unittest.TestCase) -> None:
        counts.tests += 1
        start(self, test)

    def add_failure(self: unittest.TestResult, test: unittest.TestCase, err: Any) -> None:
        counts.failed += 1
        failure(self, test, err)

    def add_error(self: unittest.TestResult, test: unittest.TestCase, err: Any) -> None:
        counts.failed += 1
        error(self, test, err)

    def test_program(self: unittest.TestProgram, *args: Any, **kwargs: Any) -> None:
        counts.framework = counts.framework or "unittest"
        program(self, *args, **kwargs)

    result.startTest = start_test  # type: ignore[method-assign]
    result.addFailure = add_failure  # type: ignore[method-assign]
    result.addError = add_error  # type: ignore[method-assign]
    unittest.TestProgram.__init__ = test_program  # type: ignore[method-assign]


class _PytestCounts:
    """A pytest plugin: pytest's own report of each test, counted."""

    def __init__(self, counts: Counts) -> None:
        self.counts = counts

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when == "call":
            self.counts.tests += 1
        if report.failed:  # in the test, or in its set-up or tear-down
            self.counts.failed += 1


def _pytest(args: list[str], counts: Counts) -> int:
    import pytest

    counts.framework = "pytest"
    return int(pytest.main(args, plugins=[_PytestCounts(counts)]))


if __name__ == "__main__":
    main()
