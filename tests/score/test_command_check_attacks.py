"""A command check that runs the agent's program in a subprocess cannot be talked into a
pass by anything else the agent leaves in its workspace.

The check runs in the agent's workspace, where Python and pytest look for code and
configuration of their own accord. Each task below is one way an agent that never fixes
its program tries to pass anyway; the hidden test runs ``solution.py`` in a subprocess
and wants 42, as the README advises for a check that must resist attackers.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.run.conftest import AGENT_EVAL, needs_sandbox

HIDDEN_TEST = """
import subprocess, sys
from pathlib import Path
from helper_mod import WANT  # the check's own module, beside it

def test_prints_42(expected):
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, str(root / "solution.py")],
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == expected == WANT
"""

HOOK = """
import pytest
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome, report.longrepr = "passed", None
"""

FAKE_REPORTER = """
import json, os, sys
json.dump({"exit": 0, "tests": 1, "failed": 0, "framework": "pytest"}, open(sys.argv[1], "w"))
os._exit(0)
"""

FAKE_PYTEST = """
class _Report:
    when, failed = "call", False
def main(args, plugins=()):
    for plugin in plugins:
        plugin.pytest_runtest_logreport(_Report())
    return 0
"""

PYTHON = "{}.{}".format(*sys.version_info)

# Files each task's agent leaves, by task id; "fixed" is the one honest agent.
PLANTED = {
    "reporter-shadowed": {"agent_eval/__init__.py": "", "agent_eval/score/__init__.py": "",
                          "agent_eval/score/check_report.py": FAKE_REPORTER},
    "pytest-shadowed": {"pytest.py": FAKE_PYTEST},
    "conftest-at-root": {"conftest.py": HOOK},
    "ini-plugin": {"evilplug.py": HOOK,
                   "pytest.ini": "[pytest]\npythonpath = .\naddopts = -p evilplug\n"},
    "user-site": {f".local/lib/python{PYTHON}/site-packages/evil.pth": (
        "import json, os, sys; sys.argv[0].endswith('check_report.py') and (json.dump("
        "{'exit': 0, 'tests': 1, 'failed': 0}, open(sys.argv[1], 'w')), os._exit(0))\n")},
    "hidden-tests-replaced": {"suite/hidden/checks/test_sol.py": "def test_ok():\n    pass\n"},
    "fixed": {"solution.py": "print(42)\n"},
}  # fmt: skip

AGENT = f"""
import os
PLANTED = {PLANTED!r}

def run_task(task, options):
    for name, text in PLANTED[options["task_id"]].items():
        path = os.path.join(options["workspace"], name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(text)
    return {{"answer": "done", "steps": 1, "tokens": 1}}
"""


def write_suite(folder: Path) -> None:
    """The suite, beside its documents and its hidden checks (a conftest with a fixture,
    a helper module, the test), each task checked by pytest in both of its forms."""
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "solution.py").write_text("print(1)\n")
    checks = folder / "hidden" / "checks"
    checks.mkdir(parents=True)
    (checks / "conftest.py").write_text(
        "import pytest\n\n@pytest.fixture\ndef expected():\n    return '42'\n"
    )
    (checks / "helper_mod.py").write_text("WANT = '42'\n")
    (checks / "test_sol.py").write_text(HIDDEN_TEST)
    commands = [["python", "-m", "pytest", "-q", "checks"], ["pytest", "-q", "checks"]]
    tasks = [
        {"id": task, "category": "c", "task": "Make solution.py print 42.",
         "expect_state": [{"command": command, "with_files": "hidden"} for command in commands]}
        for task in PLANTED
    ]  # fmt: skip
    suite = {"name": "attacks", "version": "1", "workspace": "docs", "tasks": tasks}
    (folder / "suite.json").write_text(json.dumps(suite))


@pytest.mark.parametrize("sandbox", [pytest.param("on", marks=needs_sandbox), "off"])
def test_nothing_but_the_fix_passes_a_check_that_runs_the_agents_program(
    tmp_path: Path, sandbox: str
) -> None:
    """The suite is named by a relative path, as a user types it: its hidden tests still
    come from the suite, never from a copy the agent wrote in its workspace."""
    write_suite(tmp_path / "suite")
    (tmp_path / "agent.py").write_text(AGENT)
    done = subprocess.run(
        [str(AGENT_EVAL), "run", "--agent", "agent.py", "--tasks", "suite/suite.json",
         "--no-preflight", "--sandbox", sandbox, "--out", "r.json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    rows = {row["id"]: row for row in json.loads((tmp_path / "r.json").read_text())["results"]}
    assert set(rows) == set(PLANTED)
    fixed = rows.pop("fixed")
    assert fixed["checks"]["passed"], fixed["checks"]["state"]
    for outcome in fixed["checks"]["state"]:  # the suite's conftest and helper were used
        assert outcome["detail"].startswith("exit code 0, 1 test(s) passed"), outcome
    for task, row in rows.items():
        assert not row["checks"]["passed"], task
        for outcome in row["checks"]["state"]:
            # failed by the real test, on the agent's unfixed program
            assert "assert '1' == '42'" in outcome["detail"], (task, outcome["detail"])
