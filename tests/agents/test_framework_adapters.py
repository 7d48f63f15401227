"""The framework adapters in examples/frameworks against the scripted model server.

Each adapter must map its framework's run record to our trajectory records: the tool
calls with their arguments and errors, and the token counts the server reported.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from agent_eval.models.mock_server import MockModelServer

FRAMEWORKS = Path(__file__).resolve().parents[2] / "examples" / "frameworks"
ADAPTERS = {
    "smolagents": ("smolagents_agent", "smolagents"),
    "pydantic-ai": ("pydantic_ai_agent", "pydantic_ai"),
}
ANSWER = "The lamp is lit at 19:00."
# Rules keyed on what the model last saw, not on the turn: frameworks differ in how they
# replay a failed tool call, and the script must not care.
SCRIPT: dict[str, Any] = {
    "rules": [
        {
            "match": "climbs out of the workspace",
            "reply": {"content": ANSWER, "usage": {"prompt_tokens": 300, "completion_tokens": 30}},
        },
        {
            "match": "lamp is lit",
            "reply": {
                "tool_calls": [{"name": "read_file", "arguments": {"path": "../secret.md"}}],
                "usage": {"prompt_tokens": 200, "completion_tokens": 20},
            },
        },
        {
            "turn": 0,
            "reply": {
                "tool_calls": [{"name": "search_documents", "arguments": {"query": "lamp lit"}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 10},
            },
        },
    ],
    "default": {
        "content": "I cannot answer that.",
        "usage": {"prompt_tokens": 1, "completion_tokens": 1},
    },
}


@pytest.fixture(params=sorted(ADAPTERS))
def adapter(request: pytest.FixtureRequest) -> Iterator[ModuleType]:
    """Each adapter module, or a skip naming the extra to install."""
    module_name, package = ADAPTERS[request.param]
    if importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not installed: pip install -e '.[frameworks]'")
    sys.path.insert(0, str(FRAMEWORKS))
    try:
        yield importlib.import_module(module_name)
    finally:
        sys.path.remove(str(FRAMEWORKS))


def test_the_mapped_trajectory_has_the_tool_calls_errors_and_tokens(
    adapter: ModuleType,
    mock_model: Callable[..., MockModelServer],
    agent_options: Callable[..., dict[str, Any]],
) -> None:
    server = mock_model(SCRIPT)
    result = adapter.run_task("When is the lamp lit?", agent_options(server, max_steps=10))
    assert result["answer"] == ANSWER
    assert result["stopped"] == "finished"
    records = result["trajectory"]
    assert [r["type"] for r in records] == ["model", "tool", "model", "tool", "model", "stop"]
    models = [r for r in records if r["type"] == "model"]
    assert [m["tool_calls"] for m in models] == [["search_documents"], ["read_file"], []]
    assert [(m["prompt_tokens"], m["completion_tokens"]) for m in models] == [
        (100, 10),
        (200, 20),
        (300, 30),
    ]
    assert all("tool" not in m for m in models)
    search, read = (r for r in records if r["type"] == "tool")
    assert (search["tool"], search["args"], search["error"]) == (
        "search_documents",
        {"query": "lamp lit"},
        False,
    )
    assert "19:00" in search["result"]
    assert (read["tool"], read["args"], read["error"]) == (
        "read_file",
        {"path": "../secret.md"},
        True,
    )
    assert "climbs out of the workspace" in read["result"]
    assert (result["steps"], result["tokens"]) == (5, 660)
    assert (result["prompt_tokens"], result["completion_tokens"]) == (600, 60)
    assert records[-1] == {"type": "stop", "reason": "finished", "detail": ""}


def test_our_step_budget_stops_the_framework(
    adapter: ModuleType,
    mock_model: Callable[..., MockModelServer],
    agent_options: Callable[..., dict[str, Any]],
) -> None:
    looping = {"default": SCRIPT["rules"][2]["reply"]}
    server = mock_model(looping)
    result = adapter.run_task("When is the lamp lit?", agent_options(server, max_steps=4))
    assert result["stopped"] == "turn_limit"
    assert result["steps"] == 4
    assert [r["type"] for r in result["trajectory"]] == ["model", "tool"] * 2 + ["stop"]


def test_an_adapter_runs_through_the_cli(
    adapter: ModuleType, mock_model: Callable[..., MockModelServer], tmp_path: Path
) -> None:
    server = mock_model(
        {
            "rules": [
                {"turn": 0, "reply": {"tool_calls": [
                    {"name": "search_documents", "arguments": {"query": "backup window"}}]}},
                {"turn": 1, "reply": {"content": "From 02:00 to 04:00 every Sunday."}},
            ]
        }
    )  # fmt: skip
    out = tmp_path / "results.json"
    done = subprocess.run(
        [sys.executable, "-m", "agent_eval", "run", "--agent", adapter.__file__,
         "--tasks", "part26", "--task-id", "r-backup-window", "--base-url", server.base_url,
         "--model", "mock", "--out", str(out), "--trajectory-dir", str(tmp_path / "t")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads(out.read_text(encoding="utf-8"))
    assert results["run"]["scaffold"] == adapter.SCAFFOLD_NAME
    (row,) = results["results"]
    assert row["checks"]["passed"] and row["steps"] == 3
