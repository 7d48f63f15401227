"""builtin:multi-agent against the mock_model server: roles, routes, verification, stops."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agent_eval.agents import BUILTIN_AGENTS, multi_agent, prompts
from agent_eval.models.mock_server import MockModelServer
from agent_eval.records import AgentReply

Start = Callable[..., MockModelServer]
Options = Callable[..., dict[str, Any]]
MODES = pytest.mark.parametrize("mode", ["native", "json"])
ROUTER = {"json": {"route": "search", "reason": "a fact in the documents"}}
SEARCH = {"tool_calls": [{"name": "search_documents", "arguments": {"query": "lamp lit"}}]}
NOTES = {"content": "lighthouse.md: the lamp is lit at 19:00."}
ANSWER = {"content": "The lamp is lit at 19:00."}
SUPPORTED = {"json": {"supported": True, "answer": "The lamp is lit at 19:00."}}


def script(
    router: dict[str, Any] = ROUTER,
    answer: dict[str, Any] = ANSWER,
    verdict: dict[str, Any] = SUPPORTED,
    research: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A script that answers each role: rules for three roles, the researcher in order."""
    return {
        "rules": [
            {"model": "router", "reply": router},
            {"system": "^You are the answerer", "reply": answer},
            {"system": "^You are the verifier", "reply": verdict},
        ],
        "replies": [SEARCH, NOTES] if research is None else research,
        **extra,
    }


def run(options: dict[str, Any]) -> dict[str, Any]:
    result = multi_agent.run_task("When is the lamp lit?", options)
    AgentReply.model_validate({k: v for k, v in result.items() if k != "infra_error"})
    return result


def records(result: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r for r in result["trajectory"] if r["type"] == kind]


def test_registered_as_builtin() -> None:
    assert BUILTIN_AGENTS["multi-agent"] == "agent_eval.agents.multi_agent"
    assert multi_agent.SCAFFOLD_NAME == "multi-agent"


@MODES
def test_four_roles_answer_and_verify(mock_model: Start, agent_options: Options, mode: str) -> None:
    server = mock_model(script())
    result = run(agent_options(server, mode, max_steps=8))
    assert (result["answer"], result["stopped"]) == ("The lamp is lit at 19:00.", "finished")
    roles = [r["role"] for r in records(result, "model")]
    assert roles == ["router", "researcher", "researcher", "answerer", "verifier"]
    assert records(result, "route") == [
        {"type": "route", "route": "search", "reason": "a fact in the documents"}
    ]
    assert [r["tool"] for r in records(result, "tool")] == ["search_documents"]
    assert all("tool" not in r for r in records(result, "model"))
    assert records(result, "model")[0]["model"] == "mock-router"
    assert set(result["roles"]) == {"router", "researcher", "answerer", "verifier"}
    assert sum(result["roles"].values()) == result["tokens"] > 0
    per_record = {}
    for r in records(result, "model"):
        per_record[r["role"]] = (
            per_record.get(r["role"], 0) + r["prompt_tokens"] + r["completion_tokens"]
        )
    assert per_record == result["roles"]
    assert result["steps"] == 6


@MODES
def test_unparseable_router_reply_falls_back(
    mock_model: Start, agent_options: Options, mode: str
) -> None:
    server = mock_model(script(router={"content": "I would search, probably."}))
    result = run(agent_options(server, mode))
    (route,) = records(result, "route")
    assert route["route"] == "search"
    assert "fell back to the default route 'search'" in route["reason"]
    assert result["stopped"] == "finished"


def test_router_model_falls_back_to_the_model(mock_model: Start, agent_options: Options) -> None:
    server = mock_model(script())
    result = run({**agent_options(server), "router_model": None})
    assert records(result, "model")[0]["model"] == "mock-main"


@MODES
def test_unsupported_answer_becomes_honest(
    mock_model: Start, agent_options: Options, mode: str
) -> None:
    verdict = {"json": {"supported": False, "answer": "The lamp is lit at 19:00."}}
    server = mock_model(script(verdict=verdict))
    result = run(agent_options(server, mode))
    assert result["answer"] == prompts.NOT_STATED
    assert "unsupported" in records(result, "stop")[0]["detail"]


def test_verifier_revision_keeps_supported_facts(mock_model: Start, agent_options: Options) -> None:
    verdict = {"json": {"supported": False, "answer": "The lamp is lit at 19:00."}}
    server = mock_model(script(answer={"content": "At 19:00, by Ada."}, verdict=verdict))
    result = run(agent_options(server))
    assert result["answer"] == f"The lamp is lit at 19:00. {prompts.REST_NOT_STATED}"


def test_unreadable_verdict_keeps_the_answer(mock_model: Start, agent_options: Options) -> None:
    server = mock_model(script(verdict={"content": "looks fine"}))
    result = run(agent_options(server))
    assert result["answer"] == "The lamp is lit at 19:00."
    assert "could not be read" in records(result, "stop")[0]["detail"]


@MODES
def test_researcher_out_of_steps_hands_over(
    mock_model: Start, agent_options: Options, mode: str
) -> None:
    server = mock_model(script(research=[SEARCH] * 10))
    result = run(agent_options(server, mode, max_steps=5))
    assert (result["stopped"], result["answer"]) == ("finished", "The lamp is lit at 19:00.")
    assert [r["role"] for r in records(result, "model")] == [
        "router",
        "researcher",
        "answerer",
        "verifier",
    ]
    assert "researcher ran out of steps" in records(result, "stop")[0]["detail"]


def test_turn_limit(mock_model: Start, agent_options: Options) -> None:
    server = mock_model(script())
    result = run(agent_options(server, max_steps=1))
    assert (result["stopped"], result["steps"], result["answer"]) == ("turn_limit", 1, "")


@MODES
def test_token_budget(mock_model: Start, agent_options: Options, mode: str) -> None:
    usage = {"prompt_tokens": 900, "completion_tokens": 100}
    server = mock_model(script(router={**ROUTER, "usage": usage}))
    result = run(agent_options(server, mode, max_tokens=1000))
    assert (result["stopped"], result["tokens"]) == ("token_budget", 1000)
    assert result["roles"] == {"router": 1000}


def test_time_budget(mock_model: Start, agent_options: Options) -> None:
    server = mock_model(script(research=[SEARCH] * 10), latency=0.2)
    result = run(agent_options(server, max_seconds=0.3))
    assert result["stopped"] == "time_budget"


@MODES
def test_repeated_call(mock_model: Start, agent_options: Options, mode: str) -> None:
    server = mock_model(script(research=[SEARCH] * 10))
    result = run(agent_options(server, mode, max_steps=20))
    assert result["stopped"] == "repeated_call"
    assert len(records(result, "tool")) == 2


@MODES
def test_model_error_in_a_later_role(mock_model: Start, agent_options: Options, mode: str) -> None:
    server = mock_model(script(answer={"fault": "malformed"}))
    result = run(agent_options(server, mode))
    assert result["stopped"] == "model_error"
    assert result["infra_error"]["kind"] == "bad_reply"
    assert records(result, "stop")[0]["detail"].startswith("bad_reply: ")
    assert "answerer" not in result["roles"]
