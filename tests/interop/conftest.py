"""Real runs of other harnesses, made by those harnesses: an Inspect AI eval (a tiny task
with a tool, 2 epochs) against the project's scripted model server, and an agent-eval run
of the same task ids against another script; and Harbor's own ATIF validator.

Harbor needs Python 3.12 or newer and a few dozen packages it would not use here, so the
validator is taken from Harbor's published wheel, fetched with pip, and only its ATIF
models and validator are imported (they need pydantic alone).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent_eval.models.mock_script import parse_script
from agent_eval.models.mock_server import MockModelServer

pytest.importorskip("inspect_ai", reason="the inspect extra is not installed")
pytest.importorskip("atif", reason="the harbor extra is not installed")

TASK_FILE = '''
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import tool


@tool
def add():
    async def execute(x: int, y: int) -> int:
        """Add two numbers.

        Args:
            x: The first number.
            y: The second number.
        """
        return x + y

    return execute


@task
def arith():
    return Task(
        dataset=[
            Sample(id="sum", input="What is 2 plus 3?", target="5"),
            Sample(id="capital", input="What is the capital of France?", target="Paris"),
            Sample(id="eight", input="What is 4 plus 4?", target="8"),
            Sample(id="loop", input="Keep adding 1 and 1 forever.", target="never"),
        ],
        solver=[use_tools(add()), generate()],
        scorer=includes(),
        epochs=2,
        message_limit=8,
    )
'''

INSPECT_SCRIPT = {
    "models": ["mock"],
    "rules": [
        {"task": "2 plus 3", "turn": 0,
         "reply": {"tool_calls": [{"name": "add", "arguments": {"x": 2, "y": 3}}]}},
        {"task": "2 plus 3", "turn": 1, "reply": {"content": "The answer is 5."}},
        {"task": "capital of France", "reply": {"content": "Paris."}},
        {"task": "4 plus 4", "reply": {"content": "I think it is 9."}},
        {"task": "forever",
         "reply": {"tool_calls": [{"name": "add", "arguments": {"x": 1, "y": 1}}]}},
    ],
    "default": {"content": "I cannot answer that."},
}  # fmt: skip
"""Inspect's model: sum and capital right, eight wrong, loop over its message limit, on
both epochs."""

OUR_SCRIPT = {
    "models": ["mock"],
    "rules": [
        {"task": "2 plus 3", "reply": {"content": "5"}},
        {"task": "capital of France", "reply": {"content": "Lyon."}},
        {"task": "4 plus 4", "reply": {"content": "It is 8."}},
    ],
    "default": {"content": "I cannot answer that."},
}  # fmt: skip
"""Ours: sum right, capital now wrong, eight now right."""

SUITE = {
    "name": "arith",
    "version": "1.0.0",
    "tasks": [
        {"id": "sum", "category": "math", "task": "What is 2 plus 3?",
         "expect_in_answer": ["5"]},
        {"id": "capital", "category": "facts", "task": "What is the capital of France?",
         "expect_in_answer": ["Paris"]},
        {"id": "eight", "category": "math", "task": "What is 4 plus 4?",
         "expect_in_answer": ["8"]},
        {"id": "loop", "category": "math", "task": "Keep adding 1 and 1 forever.",
         "expect_in_answer": ["never"]},
    ],
}  # fmt: skip


@dataclass(frozen=True)
class InspectRun:
    """An Inspect AI log made by ``inspect eval``, and what Inspect printed of it."""

    log: Path
    console: str


def _tool(name: str) -> str:
    return str(Path(sys.executable).parent / name)


@pytest.fixture(scope="session")
def inspect_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InspectRun]:
    folder = tmp_path_factory.mktemp("inspect")
    (folder / "task.py").write_text(TASK_FILE, encoding="utf-8")
    server = MockModelServer(parse_script(INSPECT_SCRIPT)).start()
    try:
        env = {**os.environ, "MOCK_API_KEY": "not-a-key", "MOCK_BASE_URL": server.base_url,
               "INSPECT_DISPLAY": "plain", "NO_COLOR": "1"}  # fmt: skip
        done = subprocess.run(
            [_tool("inspect"), "eval", "task.py", "--model", "openai-api/mock/mock",
             "--log-dir", "logs", "--display", "plain"],
            cwd=folder, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    finally:
        server.stop()
    assert done.returncode == 0, done.stdout + done.stderr
    logs = sorted((folder / "logs").glob("*.eval"))
    assert len(logs) == 1, logs
    yield InspectRun(logs[0], done.stdout + done.stderr)


@pytest.fixture(scope="session")
def our_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An agent-eval run of the same three task ids, 2 repeats, builtin:minimal."""
    return _run_ours(tmp_path_factory.mktemp("ours"), SUITE, OUR_SCRIPT, "ours.json")


def _run_ours(
    folder: Path, suite: dict[str, Any], script: dict[str, Any], out: str, *flags: str
) -> Path:
    """``builtin:minimal`` on ``suite`` (with one note as its documents), 2 repeats, against
    the scripted model server playing ``script``; the results file."""
    (folder / "docs").mkdir()
    (folder / "docs" / "notes.md").write_text("Arithmetic notes.\n", encoding="utf-8")
    (folder / "suite.json").write_text(json.dumps({**suite, "workspace": "docs"}), "utf-8")
    server = MockModelServer(parse_script(script)).start()
    try:
        done = subprocess.run(
            [_tool("agent-eval"), "run", "--agent", "builtin:minimal", "--tasks", "suite.json",
             "--repeats", "2", "--base-url", server.base_url, "--model", "mock", *flags,
             "--out", out, "--trajectory-dir", "trajectories"],
            cwd=folder, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    finally:
        server.stop()
    assert done.returncode in (0, 2), done.stdout + done.stderr
    return folder / out


VARIED_SCRIPT = {
    "models": ["mock"],
    "rules": [
        {"task": "2 plus 3", "reply": {"content": "5"}},
        {"task": "capital of France", "reply": {"content": "Lyon."}},
        {"task": "which file", "reply": {"content": "The notes file."}},
        {"task": "service up", "reply": {"fault": "503"}},
    ],
    "default": {"content": "I cannot answer that."},
}  # fmt: skip
"""A pass, a missing string, an expected tool not used, and an endpoint that fails."""

VARIED_SUITE = {
    "name": "varied",
    "version": "2.1.0",
    "tasks": [
        {"id": "sum", "category": "math", "task": "What is 2 plus 3?",
         "expect_in_answer": ["5"], "max_steps": 4},
        {"id": "capital", "category": "facts", "task": "What is the capital of France?",
         "expect_in_answer": ["Paris"], "max_steps": 4},
        {"id": "notes", "category": "files", "task": "In which file are the notes kept?",
         "expect_in_answer": ["notes"], "expect_tool": "read_file", "max_steps": 6},
        {"id": "down", "category": "facts", "task": "Is the service up?",
         "expect_in_answer": ["yes"], "max_steps": 6},
    ],
}  # fmt: skip


@pytest.fixture(scope="session")
def varied_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An agent-eval run with every kind of verdict a report tells apart: passes, a
    missing string, an expected tool not used, and infra errors (the endpoint answers
    503 and no retry is allowed); priced, and with step budgets."""
    return _run_ours(
        tmp_path_factory.mktemp("varied"),
        VARIED_SUITE,
        VARIED_SCRIPT,
        "varied.json",
        "--max-infra-retries",
        "0",
        "--cost-per-million",
        "0.5",
    )


@pytest.fixture(scope="session")
def cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run ``agent-eval`` with arguments in a folder."""

    def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [_tool("agent-eval"), *args], cwd=cwd, capture_output=True, text=True, timeout=300
        )

    return run


@pytest.fixture(scope="session")
def harbor_validator(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Path], list[str]]:
    """Harbor's own ``TrajectoryValidator``: the errors it finds in an ATIF file."""
    try:
        from harbor.utils.trajectory_validator import TrajectoryValidator
    except ImportError:
        TrajectoryValidator = _validator_from_wheel(tmp_path_factory.mktemp("harbor"))

    def validate(path: Path) -> list[str]:
        validator = TrajectoryValidator()
        ok = validator.validate(path)
        errors: list[str] = list(validator.get_errors())
        assert ok == (not errors)
        return errors

    return validate


def _validator_from_wheel(folder: Path) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
         "--python-version", "3.12", "--dest", str(folder), "harbor>=0.26"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"Harbor's wheel could not be fetched: {done.stderr.strip()[-300:]}")
    wheel = next(folder.glob("harbor-*.whl"))
    root = folder / "unpacked"
    with zipfile.ZipFile(wheel) as archive:
        members = [
            name
            for name in archive.namelist()
            if name.startswith(("harbor/models/trajectories/", "harbor/utils/trajectory_validator"))
        ]
        archive.extractall(root, members)
    # The package's own __init__ files would import the whole framework; the ATIF models
    # and the validator import only each other and pydantic.
    import importlib.util
    import types

    for name in ("harbor", "harbor.models", "harbor.utils"):
        module = types.ModuleType(name)
        module.__path__ = [str(root / name.replace(".", "/"))]
        sys.modules.setdefault(name, module)
    spec = importlib.util.spec_from_file_location(
        "harbor.utils.trajectory_validator", root / "harbor/utils/trajectory_validator.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.TrajectoryValidator


def _python_312() -> str | None:
    """An interpreter Harbor installs on (3.12 or newer): on PATH, or one pyenv keeps."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    on_path = [shutil.which(name) for name in ("python3.13", "python3.12")]
    kept = sorted((str(p) for p in root.glob("3.1[2-9]*/bin/python")), reverse=True)
    for candidate in [*(p for p in on_path if p), *kept]:
        check = "import sys; sys.exit(sys.version_info < (3, 12))"
        done = subprocess.run([candidate, "-c", check], capture_output=True, timeout=60)
        if done.returncode == 0:  # a pyenv shim of a version not selected fails here
            return candidate
    return None


@pytest.fixture(scope="session")
def harbor_python(request: pytest.FixtureRequest) -> str:
    """A Python with the harbor package and the few packages its models import, in a venv
    kept in pytest's cache; skipped where no Python 3.12 or newer is found."""
    python = _python_312()
    if python is None:
        pytest.skip("Harbor needs Python 3.12 or newer, and none was found")
    venv = Path(request.config.cache.mkdir("harbor-models-venv"))
    interpreter = venv / "bin" / "python"
    ready = venv / ".ready"
    if not ready.exists():
        steps = [
            [python, "-m", "venv", "--clear", str(venv)],
            [str(interpreter), "-m", "pip", "install", "--quiet", "pydantic>=2.14",
             "shortuuid", "pyyaml", "toml"],
            [str(interpreter), "-m", "pip", "install", "--quiet", "--no-deps", "harbor>=0.26"],
        ]  # fmt: skip
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                pytest.skip(f"Harbor could not be installed: {done.stderr.strip()[-300:]}")
        ready.touch()
    return str(interpreter)
