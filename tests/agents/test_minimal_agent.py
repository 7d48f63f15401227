"""builtin:minimal against the mock_model server, in native and JSON-action mode."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_eval.agents import BUILTIN_AGENTS, minimal
from agent_eval.errors import ConfigError
from agent_eval.models.mock_server import MockModelServer
from agent_eval.records import AgentReply

Start = Callable[..., MockModelServer]
Options = Callable[..., dict[str, Any]]
MODES = pytest.mark.parametrize("mode", ["native", "json"])
MODEL_KEYS = {
    "type",
    "role",
    "model",
    "tool_calls",
    "prompt_tokens",
    "completion_tokens",
    "seconds",
    "content",
    "finish_reason",
    "input_from",
    "input",
}
TOOL_KEYS = {"type", "tool", "args", "error", "result", "seconds"}


def call(name: str, **arguments: Any) -> dict[str, Any]:
    """A mock_model reply that calls one tool."""
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def searches(n: int) -> list[dict[str, Any]]:
    """n replies, each a search with a different query, so none repeats."""
    return [call("search_documents", query=f"lamp {i}") for i in range(n)]


def run(options: dict[str, Any], task: str = "When is the lamp lit?") -> dict[str, Any]:
    result = minimal.run_task(task, options)
    AgentReply.model_validate({k: v for k, v in result.items() if k != "infra_error"})
    return result


def stop_of(result: dict[str, Any]) -> dict[str, Any]:
    last = result["trajectory"][-1]
    assert last["type"] == "stop" and last["reason"] == result["stopped"]
    return last


def test_registered_as_builtin() -> None:
    assert BUILTIN_AGENTS["minimal"] == "agent_eval.agents.minimal"
    assert minimal.SCAFFOLD_NAME == "minimal"


@MODES
def test_search_then_finish(mock_model: Start, agent_options: Options, mode: str) -> None:
    replies = [call("search_documents", query="lamp lit"), {"content": "At 19:00."}]
    server = mock_model({"replies": replies})
    result = run(agent_options(server, mode, max_steps=6))
    assert (result["answer"], result["stopped"], result["steps"]) == ("At 19:00.", "finished", 3)
    model, tool, final, stop = result["trajectory"]
    assert set(model) == MODEL_KEYS and "tool" not in model
    assert (model["role"], model["tool_calls"]) == ("agent", ["search_documents"])
    # natively, the record keeps the call's id, which the model's next input quotes back
    assert set(tool) == (TOOL_KEYS | {"call_id"} if mode == "native" else TOOL_KEYS)
    if mode == "native":
        answered = [p["id"] for m in final["input"] for p in m["parts"]
                    if p["type"] == "tool_call_response"]  # fmt: skip
        assert answered == [tool["call_id"]] and tool["call_id"]
    assert (tool["tool"], tool["args"], tool["error"]) == (
        "search_documents",
        {"query": "lamp lit"},
        False,
    )
    assert "19:00" in tool["result"]
    assert final["tool_calls"] == [] and stop == {
        "type": "stop",
        "reason": "finished",
        "detail": "",
    }
    prompt = model["prompt_tokens"] + final["prompt_tokens"]
    assert result["prompt_tokens"] == prompt > 0
    assert result["tokens"] == prompt + result["completion_tokens"]


@MODES
def test_tool_errors_are_observations(mock_model: Start, agent_options: Options, mode: str) -> None:
    replies = [call("read_file", path="../secret"), call("write_file", path="x", content="y")]
    server = mock_model({"replies": [*replies, {"content": "Could not read it."}]})
    result = run(agent_options(server, mode))
    tools = [r for r in result["trajectory"] if r["type"] == "tool"]
    assert [(t["tool"], t["error"]) for t in tools] == [("read_file", True), ("write_file", True)]
    assert "unknown tool 'write_file'" in tools[1]["result"]
    assert result["stopped"] == "finished"


def test_json_mode_re_asks_after_a_reply_that_is_no_action(
    mock_model: Start, agent_options: Options
) -> None:
    server = mock_model({"replies": [{"json": {"thought": "hmm"}}, {"content": "At 19:00."}]})
    result = run(agent_options(server, "json"))
    assert (result["answer"], result["steps"]) == ("At 19:00.", 2)
    assert server.request_count == 2


@MODES
def test_turn_limit(mock_model: Start, agent_options: Options, mode: str) -> None:
    server = mock_model({"replies": searches(10)})
    result = run(agent_options(server, mode, max_steps=4))
    assert result["stopped"] == "turn_limit"
    assert result["steps"] <= 4 and result["answer"] == ""
    assert "of 4 steps" in stop_of(result)["detail"]


@MODES
def test_token_budget(mock_model: Start, agent_options: Options, mode: str) -> None:
    usage = {"prompt_tokens": 400, "completion_tokens": 200}
    server = mock_model({"default": {**call("search_documents", query="x"), "usage": usage}})
    result = run(agent_options(server, mode, max_tokens=500))
    assert (result["stopped"], result["tokens"], result["steps"]) == ("token_budget", 600, 1)


@MODES
def test_time_budget(mock_model: Start, agent_options: Options, mode: str) -> None:
    server = mock_model({"replies": searches(20)}, latency=0.15)
    result = run(agent_options(server, mode, max_seconds=0.4))
    assert result["stopped"] == "time_budget"
    assert 1 <= server.request_count <= 4


@MODES
def test_repeated_call(mock_model: Start, agent_options: Options, mode: str) -> None:
    server = mock_model({"default": call("search_documents", query="lamp")})
    result = run(agent_options(server, mode))
    assert result["stopped"] == "repeated_call"
    tools = [r for r in result["trajectory"] if r["type"] == "tool"]
    assert len(tools) == 2 and result["steps"] == 5
    assert "search_documents" in stop_of(result)["detail"]


@MODES
def test_model_error_is_reported_as_infra(
    mock_model: Start, agent_options: Options, mode: str
) -> None:
    server = mock_model({"replies": [call("search_documents", query="lamp"), {"fault": "503"}]})
    result = run(agent_options(server, mode))
    assert result["stopped"] == "model_error"
    assert result["infra_error"] == {"kind": "server", "retry_after": None}
    assert stop_of(result)["detail"].startswith("server: ")
    assert result["steps"] == 2


def test_rate_limit_and_connection_refused_are_infra(
    mock_model: Start, agent_options: Options
) -> None:
    server = mock_model({"replies": [{"fault": "429"}]})
    assert run(agent_options(server))["infra_error"] == {"kind": "rate_limit", "retry_after": 1.0}
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    result = run(agent_options(closed))
    assert (result["stopped"], result["infra_error"]["kind"]) == ("model_error", "connection")


def test_a_bad_tool_mode_is_a_config_error(mock_model: Start, agent_options: Options) -> None:
    with pytest.raises(ConfigError, match="tool_mode"):
        minimal.run_task("x", {**agent_options("http://127.0.0.1:9/v1"), "tool_mode": "xml"})


def test_write_tools_only_when_granted(
    mock_model: Start, agent_options: Options, docs_workspace: Path
) -> None:
    replies = [call("write_file", path="notes.md", content="hello"), {"content": "Written."}]
    server = mock_model({"replies": replies})
    result = run({**agent_options(server), "tools": ["write_file"]})
    tool = next(r for r in result["trajectory"] if r["type"] == "tool")
    assert (tool["tool"], tool["error"], result["stopped"]) == ("write_file", False, "finished")
    assert (docs_workspace / "notes.md").read_text(encoding="utf-8") == "hello"


def test_parallel_attempts_are_identical(mock_model: Start, agent_options: Options) -> None:
    replies = [call("search_documents", query="lamp"), call("read_file", path="keepers.md")]
    server = mock_model({"replies": [*replies, {"content": "Ada Brand."}]})
    results: list[dict[str, Any]] = []

    def attempt() -> None:
        results.append(run(agent_options(server)))

    threads = [threading.Thread(target=attempt) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    def shape(result: dict[str, Any]) -> list[Any]:
        return [(r["type"], r.get("tool"), r.get("prompt_tokens")) for r in result["trajectory"]]

    assert [r["answer"] for r in results] == ["Ada Brand.", "Ada Brand."]
    assert shape(results[0]) == shape(results[1])
    assert results[0]["tokens"] == results[1]["tokens"]


def test_attempts_share_the_connection_build_prepared(
    mock_model: Start, agent_options: Options
) -> None:
    server = mock_model(
        {"replies": [call("search_documents", query="lamp"), {"content": "19:00."}]}
    )
    options = agent_options(server)
    minimal.build(options)
    try:
        answers = [run(options)["answer"] for _ in range(3)]
    finally:
        minimal.close()
    assert answers == ["19:00."] * 3
    assert (server.request_count, server.connections) == (6, 1)
    # After close() the next attempt opens a client (and a connection) of its own.
    assert run(options)["answer"] == "19:00."
    assert server.connections == 2
    minimal.close()
