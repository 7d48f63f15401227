"""The reference agents follow the tool mode an endpoint advises when no tool_mode is given.

The scripted server advises one with the script's ``tool_mode``, as the embedded server
does for a model too small for native tool calls. A native tool call keeps the call's id
in its tool record (``call_id``); a JSON action has none, so the record shows the mode.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_eval.agents import minimal, multi_agent
from agent_eval.models.mock_server import MockModelServer

Start = Callable[..., MockModelServer]
Options = Callable[..., dict[str, Any]]
Cli = Callable[..., subprocess.CompletedProcess[str]]
SEARCH = {"tool_calls": [{"name": "search_documents", "arguments": {"query": "lamp lit"}}]}
REPLIES = [SEARCH, {"content": "At 19:00."}]
MODELS = ["mock-main", "mock-router"]
"""The models agent_options names: the advice is given per model."""
NOTE = "tool mode: JSON actions, as the endpoint advises for mock"


def untold(options: dict[str, Any]) -> dict[str, Any]:
    """The options without a tool_mode, as the harness passes them when none is given."""
    return {k: v for k, v in options.items() if k != "tool_mode"}


def tool_records(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in result["trajectory"] if r["type"] == "tool"]


@pytest.mark.parametrize(("advice", "native"), [("json", False), ("native", True), (None, True)])
def test_minimal_follows_the_advice(
    mock_model: Start, agent_options: Options, advice: str | None, native: bool
) -> None:
    server = mock_model({"models": MODELS, "replies": REPLIES, "tool_mode": advice})
    minimal.build(untold(agent_options(server)))
    try:
        result = minimal.run_task("When is the lamp lit?", untold(agent_options(server)))
    finally:
        minimal.close()
    (tool,) = tool_records(result)
    assert ("call_id" in tool) is native
    assert (result["answer"], result["stopped"]) == ("At 19:00.", "finished")


def test_a_given_tool_mode_wins_over_the_advice(mock_model: Start, agent_options: Options) -> None:
    server = mock_model({"models": MODELS, "replies": REPLIES, "tool_mode": "json"})
    result = minimal.run_task("When is the lamp lit?", agent_options(server, "native"))
    minimal.close()
    assert "call_id" in tool_records(result)[0]


def test_multi_agent_follows_the_advice(mock_model: Start, agent_options: Options) -> None:
    verdict = {"json": {"supported": True, "answer": "At 19:00."}}
    rules = [
        {"model": "router", "reply": {"json": {"route": "search", "reason": "a fact"}}},
        {"system": "^You are the answerer", "reply": {"content": "At 19:00."}},
        {"system": "^You are the verifier", "reply": verdict},
    ]
    replies = [SEARCH, {"content": "lighthouse.md: lit at 19:00."}]
    server = mock_model({"models": MODELS, "tool_mode": "json", "rules": rules, "replies": replies})
    result = multi_agent.run_task("When is the lamp lit?", untold(agent_options(server)))
    multi_agent.close()
    (tool,) = tool_records(result)
    assert "call_id" not in tool and result["answer"] == "At 19:00."


def run_args(server: MockModelServer, folder: Path, agent: str, *extra: str) -> list[str]:
    (folder / "docs").mkdir(exist_ok=True)
    (folder / "docs" / "lamp.md").write_text("The lamp is lit at 19:00.\n", encoding="utf-8")
    suite = {
        "name": "lamp",
        "version": "1.0.0",
        "tasks": [{"id": "t-lamp", "category": "retrieval", "task": "When is the lamp lit?",
                   "expect_in_answer": ["19:00"]}],
    }  # fmt: skip
    (folder / "suite.json").write_text(json.dumps(suite), encoding="utf-8")
    where = ["--base-url", server.base_url, "--model", "mock", "--out", "r.json"]
    return ["run", "--agent", agent, "--tasks", "suite.json", "--workspace", "docs", *where, *extra]


def test_the_run_header_says_which_mode_was_advised(
    mock_model: Start, agent_eval: Cli, tmp_path: Path
) -> None:
    server = mock_model({"models": ["mock"], "replies": REPLIES, "tool_mode": "json"})
    done = agent_eval(*run_args(server, tmp_path, "builtin:minimal"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "minimal x mock: 1 task(s), 1 attempt(s) each"
    assert [line for line in done.stderr.splitlines() if line.startswith("tool mode")] == [
        NOTE + " (too small for native tool calls); --option tool_mode=native overrides"
    ]
    trajectory = Path(tmp_path, json.loads((tmp_path / "r.json").read_text())["results"][0]
                      ["trajectory_file"])  # fmt: skip
    tools = [json.loads(line) for line in trajectory.read_text().splitlines()]
    assert [r for r in tools if r.get("type") == "tool" and "call_id" in r] == []


@pytest.mark.parametrize(
    ("agent", "extra"),
    [
        ("builtin:minimal", ("--option", "tool_mode=native")),  # told: no advice needed
        ("builtin:retrieve-read", ()),  # calls no tool
        ("builtin:echo", ()),  # not a reference agent with tool modes
    ],
)
def test_no_note_when_the_advice_does_not_apply(
    mock_model: Start, agent_eval: Cli, tmp_path: Path, agent: str, extra: tuple[str, ...]
) -> None:
    server = mock_model({"models": ["mock"], "replies": REPLIES, "tool_mode": "json"})
    done = agent_eval(*run_args(server, tmp_path, agent, *extra), cwd=tmp_path)
    assert done.returncode in (0, 2, 3), done.stderr  # 3: the script ran out of replies
    assert "tool mode" not in done.stderr


def test_no_note_when_the_endpoint_advises_nothing(
    mock_model: Start, agent_eval: Cli, tmp_path: Path
) -> None:
    server = mock_model({"replies": REPLIES})
    done = agent_eval(*run_args(server, tmp_path, "builtin:minimal"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "tool mode" not in done.stderr
