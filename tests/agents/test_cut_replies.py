"""A reply the endpoint cut at its token limit (finish_reason "length") ends the attempt as
``reply_cut``, with the cut text in the stop record: never a crash, never a parse error
that is silently re-asked, never a fragment of JSON handed in as the answer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_eval.agents import minimal, multi_agent
from agent_eval.models.mock_server import MockModelServer
from agent_eval.records import AgentReply
from agent_eval.run.runner import execute, prepare
from agent_eval.run.settings import RunConfig

Start = Callable[..., MockModelServer]
Options = Callable[..., dict[str, Any]]
SEARCH = {"tool_calls": [{"name": "search_documents", "arguments": {"query": "lamp"}}]}
CUT_ACTION = '{"action": "search_documents", "args": {"query": "select * from tts_events_tts_hi'
CUT_TOOL_CALL = '{"tool_call": {"name": "search_documents", "arguments": {"query": "lamp li'
"""What serve-model hands back in native mode when its tool-call grammar is cut."""
CUT_TEXT = "The lamp is lit at 19:00 every evening and put"


def stop_record(result: dict[str, Any]) -> dict[str, Any]:
    AgentReply.model_validate({k: v for k, v in result.items() if k != "infra_error"})
    stops = [r for r in result["trajectory"] if r["type"] == "stop"]
    assert len(stops) == 1 and stops[0] is result["trajectory"][-1]
    return stops[0]


INNER_WHOLE = '{"action": "search_documents", "args": {"query": "lamp"}, "answer": "The l'
"""Cut, though its inner ``args`` object is complete and would parse on its own."""


@pytest.mark.parametrize(
    ("mode", "cut"),
    [("json", CUT_ACTION), ("json", INNER_WHOLE), ("native", CUT_TOOL_CALL), ("native", CUT_TEXT)],
)
def test_minimal_agent_stops_on_a_cut_reply(
    mock_model: Start, agent_options: Options, mode: str, cut: str
) -> None:
    server = mock_model({"replies": [SEARCH, {"cut": cut}], "default": {"content": "At 19:00."}})
    result = minimal.run_task("When is the lamp lit?", agent_options(server, mode))
    stop = stop_record(result)
    assert (result["stopped"], stop["reason"], result["answer"]) == ("reply_cut", "reply_cut", "")
    assert "the agent's reply was cut at the 384-token reply limit" in stop["detail"]
    assert "finish_reason length" in stop["detail"] and cut[-20:] in stop["detail"]
    models = [r for r in result["trajectory"] if r["type"] == "model"]
    assert models[-1]["content"] == cut  # the cut reply itself is on record
    assert server.request_count == 2  # not re-asked as if it were a malformed action
    assert result["steps"] == 3


def test_a_whole_action_that_ends_on_the_limit_is_used(
    mock_model: Start, agent_options: Options
) -> None:
    whole = '{"action": "finish", "answer": "At 19:00."}'
    server = mock_model({"replies": [{"cut": whole}]})
    result = minimal.run_task("When is the lamp lit?", agent_options(server, "json"))
    assert (result["stopped"], result["answer"]) == ("finished", "At 19:00.")


ROUTER = {"model": "router", "reply": {"json": {"route": "search", "reason": "a fact"}}}


def roles(**replies: dict[str, Any]) -> dict[str, Any]:
    """Rules for the answerer and verifier (each overridable); the researcher in order."""
    answerer = replies.get("answerer", {"content": "At 19:00."})
    verifier = replies.get("verifier", {"json": {"supported": True, "answer": "At 19:00."}})
    research = replies.get("researcher", {"content": "lighthouse.md: lit at 19:00."})
    return {
        "rules": [
            ROUTER,
            {"system": "^You are the answerer", "reply": answerer},
            {"system": "^You are the verifier", "reply": verifier},
        ],
        "replies": [SEARCH, research],
    }


@pytest.mark.parametrize(
    ("mode", "role", "cut"),
    [
        ("json", "researcher", CUT_ACTION),
        ("native", "researcher", CUT_TOOL_CALL),
        ("native", "answerer", CUT_TEXT),
        ("json", "answerer", '{"answer": "At 19:0'),
        ("json", "verifier", '{"supported": fal'),
        ("native", "verifier", '{"supported": false, "answer": "The lamp'),
        # A complete inner object is no whole reply: the verdict around it was cut.
        ("json", "verifier", '{"supported": false, "seen": {"file": "keepers.md"}, "answer": "Th'),
    ],
)
def test_multi_agent_stops_on_a_cut_reply_in_any_role(
    mock_model: Start, agent_options: Options, mode: str, role: str, cut: str
) -> None:
    server = mock_model(roles(**{role: {"cut": cut}}))
    result = multi_agent.run_task("When is the lamp lit?", agent_options(server, mode))
    stop = stop_record(result)
    assert (result["stopped"], result["answer"]) == ("reply_cut", "")
    assert f"the {role}'s reply was cut" in stop["detail"] and cut[-12:] in stop["detail"]
    assert [r["role"] for r in result["trajectory"] if r["type"] == "model"][-1] == role


def test_a_cut_router_reply_stops_too(mock_model: Start, agent_options: Options) -> None:
    script = roles()
    script["rules"][0] = {"model": "router", "reply": {"cut": '{"route": "sea'}}
    result = multi_agent.run_task("When is the lamp lit?", agent_options(mock_model(script)))
    assert "the router's reply was cut" in stop_record(result)["detail"]


@pytest.mark.parametrize("mode", ["native", "json"])
def test_the_runner_counts_a_cut_reply_as_over_budget(
    mock_model: Start, tmp_path: Path, mode: str
) -> None:
    server = mock_model({"replies": [SEARCH, {"cut": CUT_ACTION}]})
    config = RunConfig(
        agent="builtin:minimal", tasks="part26", task_ids=("r-gateway-port",),
        base_url=server.base_url, model="mock", options={"tool_mode": mode},
        out=tmp_path / "r.json", trajectory_dir=tmp_path / "traj",
    )  # fmt: skip
    (row,) = execute(prepare(config)).rows
    assert (row.stopped, row.failure_class, row.passed) == ("reply_cut", "over_budget", False)
