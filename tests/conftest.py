"""Shared fixtures: a tiny suite on disk, an agent file factory, a scripted model server,
and process checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from agent_eval.models.mock_script import parse_script
from agent_eval.models.mock_server import MockModelServer
from agent_eval.suite import shipped_suites

# Most tests' agents write beside themselves to show what the harness did, which the
# kernel sandbox forbids: they run unsandboxed, and tests/run/test_sandbox.py (and every
# test that asks for it) puts the sandbox on explicitly.
os.environ.setdefault("AGENT_EVAL_SANDBOX", "off")

# Property tests hold for every input, on any machine: no per-example deadline or
# too-slow check (a busy machine is slow, not wrong), and no example database, so that a
# run does not depend on what earlier runs on this machine happened to find.
settings.register_profile(
    "any-machine", deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("any-machine")


@pytest.fixture
def write_suite(tmp_path: Path) -> Callable[..., Path]:
    """Write a suite JSON file and return its path.

    Unless ``top`` names a ``workspace``, the suite gets a documents folder ``docs/`` with
    one note, since a run refuses to start from no documents; ``workspace=None`` leaves
    the suite without one.
    """

    def write(tasks: list[dict[str, Any]], name: str = "suite.json", **top: Any) -> Path:
        if "workspace" not in top:
            docs = tmp_path / "docs"
            docs.mkdir(exist_ok=True)
            (docs / "notes.md").write_text("Notes for the tests.\n", encoding="utf-8")
            top["workspace"] = "docs"
        top = {key: value for key, value in top.items() if value is not None}
        body = {"name": "tiny", "version": "1.0.0", **top, "tasks": tasks}
        path = tmp_path / name
        path.write_text(json.dumps(body), encoding="utf-8")
        return path

    return write


@pytest.fixture
def student(tmp_path: Path) -> Path:
    """A course student's folder: the lesson's agent-tasks.json (the shipped part26 file,
    byte for byte) standing alone, with no documents and no agent-workspace yet."""
    folder = tmp_path / "student"
    folder.mkdir()
    (folder / "agent-tasks.json").write_bytes(shipped_suites()["part26"].read_bytes())
    return folder


@pytest.fixture
def write_agent(tmp_path: Path) -> Callable[[str], Path]:
    """Write an agent entry-point file from source text and return its path."""

    def write(source: str, name: str = "agent.py") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(source), encoding="utf-8")
        return path

    return write


COURSE = Path(__file__).resolve().parents[2] / "shared" / "course" / "agent-eval.py"
"""The course harness, which ships beside the repository: course-shaped files are its own."""


def course_harness() -> Path:
    """COURSE; a test that needs it skips without it, and in CI fails."""
    if not COURSE.is_file():
        reason = f"the course harness is not at {COURSE} (it ships beside the repository)"
        if os.environ.get("CI"):
            pytest.fail(reason + "; CI must run the tests that need it")
        pytest.skip(reason)
    return COURSE


@pytest.fixture
def mock_model() -> Iterator[Callable[..., MockModelServer]]:
    """Start scripted servers from script dicts; every one is stopped after the test."""
    started: list[MockModelServer] = []

    def start(script: dict[str, Any], **options: Any) -> MockModelServer:
        server = MockModelServer(parse_script(script), **options).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def alive() -> Callable[[int], bool]:
    """Whether a process id still names a running (or unreaped) process."""
    return _alive


@pytest.fixture
def gone_soon() -> Callable[[int], bool]:
    """Waits up to 10 s for a process to end; False when it is still there."""

    def wait(pid: int) -> bool:
        deadline = time.monotonic() + 10
        while _alive(pid):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    return wait


AGENT_EVAL = Path(sys.executable).with_name("agent-eval")
"""The installed command: unlike `python -m agent_eval`, it puts no folder on sys.path."""


def _cli(
    *args: str, cwd: Path, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}, **(env or {})}
    return subprocess.run(
        [str(AGENT_EVAL), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


@pytest.fixture
def agent_eval() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run `agent-eval ARGS...` in a folder as a user types it, with no OPENAI_* settings
    but those ``env`` gives."""
    return _cli
