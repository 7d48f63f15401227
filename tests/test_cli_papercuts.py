"""Small things a first hour trips on: busy ports, file modes, documented exit codes and
install advice, the stop reason of an over-budget attempt, long task ids, a suite
edited without a version bump, a negative price, a run compared with itself."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import stat
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

Cli = Callable[..., subprocess.CompletedProcess[str]]
ROOT = Path(__file__).resolve().parent.parent
FIXED = """
SCAFFOLD_NAME = "fixed"
def run_task(task, options):
    return {"answer": "The gateway listens on 4000.", "steps": 2, "tokens": 10}
"""


def test_mock_model_on_a_busy_port_is_a_clean_error(tmp_path: Path, agent_eval: Cli) -> None:
    (tmp_path / "script.json").write_text(json.dumps({"default": {"content": "hi"}}))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = agent_eval("mock-model", "--script", "script.json", "--port", str(port),
                          cwd=tmp_path, timeout=30)  # fmt: skip
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"Error: cannot listen on 127.0.0.1:{port}: Address already in use; pick another "
        "--port (0 picks a free one)\n"
    )


@contextmanager
def umask(mask: int) -> Iterator[None]:
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_results_files_respect_the_umask(
    mask: int, mode: int, tmp_path: Path, write_agent: Callable[..., Path], agent_eval: Cli
) -> None:
    write_agent(FIXED, "fixed.py")
    with umask(mask):
        done = agent_eval("run", "--agent", "fixed.py", "--task-id", "r-gateway-port",
                          "--out", "r.json", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE((tmp_path / "r.json").stat().st_mode) == mode


def test_exit_codes_are_documented(tmp_path: Path, agent_eval: Cli) -> None:
    run_help = " ".join(agent_eval("run", "--help", cwd=tmp_path).stdout.split())
    assert "130 when interrupted (Ctrl-C;" in run_help
    audit_help = " ".join(agent_eval("audit", "--help", cwd=tmp_path).stdout.split())
    assert "Exit code 2 when some task can be gamed" in audit_help
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "130 when a run was interrupted" in readme
    assert "`audit` exits 2 when a baseline passes some task" in readme


def test_install_advice_names_no_unrelated_distribution() -> None:
    """`agent-eval` on the package index is another project: extras install from the clone."""
    shipped = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "src").rglob("*.py")]
    shipped += [*(ROOT / "examples").rglob("*.py"), *(ROOT / "examples").rglob("*.md")]
    advice = re.compile(r"pip install ['\"]?agent-eval\b")
    assert [str(p) for p in shipped if advice.search(p.read_text(encoding="utf-8"))] == []
    assert "pip install -e '.[otel]'" in (ROOT / "README.md").read_text()


def test_verbose_shows_why_an_over_budget_attempt_stopped(
    tmp_path: Path, write_agent: Callable[..., Path], agent_eval: Cli
) -> None:
    write_agent(
        'def run_task(task, options):\n'
        '    return {"answer": "", "steps": 3, "tokens": 9, "stopped": "turn_limit"}\n',
        "looping.py",
    )  # fmt: skip
    done = agent_eval("run", "--agent", "looping.py", "--task-id", "r-gateway-port",
                      "--verbose", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2
    assert done.stdout.splitlines()[3:6] == [
        "        answer: ",  # the course's two lines, then ours
        "        missing: ['4000']",
        "        over_budget: missing '4000'; stopped: turn_limit",
    ]


def test_a_long_task_id_runs_over_its_column_as_the_course_s_does(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path],
    agent_eval: Cli,
) -> None:  # fmt: skip
    write_agent(FIXED, "fixed.py")
    write_suite([{"id": "a-task-id-of-25-characters", "task": "t"}, {"id": "short", "task": "t"}])
    done = agent_eval("run", "--agent", "fixed.py", "--tasks", "suite.json", cwd=tmp_path)
    lines = done.stdout.splitlines()[2:4]
    assert lines == [
        "  ok  a-task-id-of-25-characters r1   2 step(s)       10 tok     0.0s",
        "  ok  short            r1   2 step(s)       10 tok     0.0s",
    ]
    part26 = agent_eval("run", "--agent", "fixed.py", "--task-id", "r-gateway-port",
                        "--task-id", "x-pickled-checkpoint", cwd=tmp_path)  # fmt: skip
    assert part26.stdout.splitlines()[2].startswith("  ok  r-gateway-port   r1  ")
    assert part26.stdout.splitlines()[3].startswith("  BAD x-pickled-checkpoint r1  ")
    alone = agent_eval("run", "--agent", "fixed.py", "--task-id", "r-gateway-port", cwd=tmp_path)
    assert alone.stdout.splitlines()[2].startswith("  ok  r-gateway-port   r1  ")  # the course's 16


def test_rescore_warns_of_a_suite_edited_without_a_version_bump(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path],
    agent_eval: Cli,
) -> None:  # fmt: skip
    write_agent(FIXED, "fixed.py")
    task = {"id": "port", "task": "Which port?", "expect_in_answer": ["4000"]}
    suite = write_suite([task])
    agent_eval("run", "--agent", "fixed.py", "--tasks", "suite.json", "--out", "r.json",
               cwd=tmp_path)  # fmt: skip
    unchanged = agent_eval("rescore", "r.json", "--tasks", "suite.json", cwd=tmp_path)
    assert (unchanged.returncode, unchanged.stderr) == (0, "")
    write_suite([{**task, "expect_in_answer": ["4001"]}])
    edited = agent_eval("rescore", "r.json", "--tasks", "suite.json", cwd=tmp_path)
    assert edited.returncode == 2
    (warning,) = edited.stderr.splitlines()
    assert re.fullmatch(
        r"Warning: suite tiny 1\.0\.0 changed since this run \(sha256:\w+ -> sha256:\w+\) "
        r"without a version bump; give the edited suite a new version so its numbers are "
        r"never mixed with the old ones",
        warning,
    )
    body = json.loads(suite.read_text())
    suite.write_text(json.dumps({**body, "version": "1.1.0"}))
    bumped = agent_eval("rescore", "r.json", "--tasks", "suite.json", cwd=tmp_path)
    assert (bumped.returncode, bumped.stderr) == (2, "")


@pytest.mark.parametrize(
    "flag", ["--cost-per-million", "--input-cost-per-million", "--output-cost-per-million"]
)
def test_a_negative_price_names_its_flag(flag: str, tmp_path: Path, agent_eval: Cli) -> None:
    done = agent_eval("run", "--agent", "builtin:empty", flag, "-0.5", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        1, f"Error: {flag} -0.5: a price is 0 or more; give your price\n"
    )  # fmt: skip


def test_comparing_a_run_with_itself_warns(
    tmp_path: Path, write_agent: Callable[..., Path], agent_eval: Cli
) -> None:
    write_agent(FIXED, "fixed.py")
    for out in ("a.json", "b.json"):
        agent_eval("run", "--agent", "fixed.py", "--only", "retrieval", "--out", out,
                   cwd=tmp_path)  # fmt: skip
    shutil.copy(tmp_path / "a.json", tmp_path / "a-copy.json")
    run_id = json.loads((tmp_path / "a.json").read_text())["run"]["run_id"]
    warning = (
        f"Warning: A and B are the same run ({run_id}); every difference is zero by "
        "construction; compare two different runs"
    )
    for pair in (("a.json", "a.json"), ("a.json", "a-copy.json")):
        done = agent_eval("compare", *pair, cwd=tmp_path)
        assert done.returncode == 0
        assert done.stderr.splitlines() == [warning]
    different = agent_eval("compare", "a.json", "b.json", cwd=tmp_path)
    assert (different.returncode, different.stderr) == (0, "")
