"""Run a Python check command and report, from inside, whether it ran to its end.

`python -P -s [FLAGS] -m agent_eval.score.check_report REPORT [--safe-path] (SCRIPT |
-m MODULE | -c CODE) [ARGS]` runs the check as `python [FLAGS] ...` would, counts the
tests that unittest or pytest ran and failed, and only when the program has finished
(returned, or raised SystemExit) writes ``{"exit", "tests", "failed", "framework"}`` to
REPORT. A check whose process ends some other way, such as agent code it imported calling
os._exit(0), leaves no report, and so cannot pass (score/command_check.py).

The check runs in the agent's workspace, so nothing there may stand in for the code that
judges it. The folder `python` would put first on sys.path (the script's, or the current
one; none with ``--safe-path``, the check's own -I or -P) goes last instead, so a file the
agent wrote never shadows this reporter, pytest or any installed module. pytest reads
no configuration file and imports its tests' folders last for the same reason; the only
conftest.py files left in the copy are the suite's own (command_check.place_hidden).
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import traceback
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import unittest


@dataclass
class Counts:
    tests: int = 0
    failed: int = 0
    framework: str | None = None


SAFE_PATH_FLAG = "--safe-path"
"""Given when the check's own flags ask for no folder on sys.path (-I or -P)."""
PYTEST_SETTINGS = {"-c": ["-c", "/dev/null"], "--rootdir": ["--rootdir=."],
                   "--import-mode": ["--import-mode=append"]}  # fmt: skip
"""Options pytest gets unless the check gives its own: no configuration file from the
workspace (its ``addopts`` or ``pythonpath`` could load the agent's plugin), the current
folder as rootdir, and test folders appended to sys.path, not put first."""


def main() -> None:
    report, rest = sys.argv[1], sys.argv[2:]
    safe = rest[:1] == [SAFE_PATH_FLAG]
    rest = rest[1:] if safe else rest
    counts = Counts()
    _count_unittest(counts)
    code = _run(rest, counts, safe)
    with open(report, "w", encoding="utf-8") as handle:
        json.dump({"exit": code, **asdict(counts)}, handle)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _run(rest: list[str], counts: Counts, safe: bool) -> int:
    try:
        if not safe:  # where `python` would look first, looked in last
            here = os.path.dirname(os.path.abspath(rest[0])) if rest[0][:1] != "-" else ""
            sys.path.append(here or os.getcwd())
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
    unittest support). Imported here, since the harness imports this module for its flag."""
    import unittest

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
    given = {arg.partition("=")[0] if arg[:2] == "--" else arg[:2] for arg in args}
    if "--config-file" in given:
        given.add("-c")
    settings = [word for name, words in PYTEST_SETTINGS.items() if name not in given
                for word in words]  # fmt: skip
    return int(pytest.main([*settings, *args], plugins=[_PytestCounts(counts)]))


if __name__ == "__main__":
    main()
