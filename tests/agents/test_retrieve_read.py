"""builtin:retrieve-read against the scripted model server: one search, one answer."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_eval.agents import BUILTIN_AGENTS, reading_prompts, retrieve_read
from agent_eval.agents.config import attempt_seed
from agent_eval.errors import ConfigError
from agent_eval.models.mock_server import MockModelServer
from agent_eval.records import AgentReply

Start = Callable[..., MockModelServer]
Options = Callable[..., dict[str, Any]]
TASK = "When is the lamp lit?"
# The passage the search finds, then the question, in the prompt's own layout.
READ_THE_LAMP = r"19:00 every evening[\s\S]*Question: When is the lamp lit\?"


def run(options: dict[str, Any], task: str = TASK) -> dict[str, Any]:
    try:
        result = retrieve_read.run_task(task, options)
    finally:
        retrieve_read.close()  # each test starts a new server: forget what the last one said
    AgentReply.model_validate({k: v for k, v in result.items() if k != "infra_error"})
    return result


def reader(server: Start, **script: Any) -> MockModelServer:
    """A scripted model that answers correctly only when the prompt holds the passage."""
    rules = [{"match": READ_THE_LAMP, "reply": {"content": " At 19:00 every evening.\n\nQ"}}]
    return server({"rules": rules, "default": {"content": "I did not see it."}, **script})


def test_registered_as_builtin() -> None:
    assert BUILTIN_AGENTS["retrieve-read"] == "agent_eval.agents.retrieve_read"
    assert retrieve_read.SCAFFOLD_NAME == "retrieve-read"


@pytest.mark.parametrize("style", ["completion", "chat"])
def test_one_search_then_one_answer(mock_model: Start, agent_options: Options, style: str) -> None:
    server = reader(mock_model)
    result = run({**agent_options(server), "prompt_style": style})
    assert (result["answer"], result["stopped"], result["steps"]) == (
        "At 19:00 every evening.",
        "finished",
        2,
    )
    tool, model, stop = result["trajectory"]
    assert (tool["type"], tool["tool"], tool["args"], tool["error"]) == (
        "tool",
        "search_documents",
        {"query": TASK},
        False,
    )
    assert "19:00" in tool["result"]
    assert model["type"] == "model" and "tool" not in model
    assert (model["role"], model["model"], model["tool_calls"]) == ("reader", "mock-main", [])
    assert result["tokens"] == model["prompt_tokens"] + model["completion_tokens"] > 0
    assert stop == {"type": "stop", "reason": "finished", "detail": ""}
    assert [r["endpoint"] for r in server.requests] == [
        "completions" if style == "completion" else "chat"
    ]


@pytest.mark.parametrize(
    ("reported", "endpoint", "why"),
    [
        (False, "completions", "the server reports no chat template"),
        (True, "chat", "the server reports a chat template"),
        (None, "chat", "the server does not say whether the model has a chat template"),
    ],
)
def test_prompt_style_follows_the_server(
    mock_model: Start, agent_options: Options, reported: bool | None, endpoint: str, why: str
) -> None:
    server = reader(mock_model, chat_template=reported)
    result = run(agent_options(server))
    assert result["answer"] == "At 19:00 every evening."
    assert [r["endpoint"] for r in server.requests] == [endpoint]
    style = "completion" if endpoint == "completions" else "chat"
    assert result["trajectory"][-1]["detail"] == f"prompt style {style} ({why})"


def test_the_option_overrides_the_server(mock_model: Start, agent_options: Options) -> None:
    server = reader(mock_model, chat_template=False)
    run({**agent_options(server), "prompt_style": "chat"})
    assert [r["endpoint"] for r in server.requests] == ["chat"]


def test_a_bad_prompt_style_names_the_option(mock_model: Start, agent_options: Options) -> None:
    with pytest.raises(ConfigError, match=r"prompt_style='poem'.*prompt_style=completion"):
        run({**agent_options(reader(mock_model)), "prompt_style": "poem"})


def test_the_run_seed_gives_each_attempt_its_own_request_seed(
    mock_model: Start, agent_options: Options
) -> None:
    server = reader(mock_model)
    for attempt in (1, 2, 1):
        options = {**agent_options(server), "prompt_style": "chat", "seed": 7}
        run({**options, "attempt": attempt})
    seeds = [r["seed"] for r in server.requests]
    assert seeds[0] == seeds[2] == attempt_seed(7, "t-1", 1)
    assert seeds[1] == attempt_seed(7, "t-1", 2) != seeds[0]
    run({**agent_options(server), "prompt_style": "chat"})
    assert server.requests[-1]["seed"] is None  # no run seed: the server chooses


def test_the_prompt_teaches_with_an_invented_example_only() -> None:
    prompt = reading_prompts.completion_prompt("--- a.md ---\nThe lamp is lit at 19:00.", TASK)
    assert prompt.startswith(reading_prompts.INSTRUCTIONS)
    assert prompt.endswith("Question: When is the lamp lit?\nAnswer:")
    assert prompt.count("Question:") == len(reading_prompts._EXAMPLES) + 1
    # The examples are the constant prefix, so a server can cache it between attempts.
    other = reading_prompts.completion_prompt("--- b.md ---\nNothing.", "Who?")
    assert prompt[: prompt.rindex("Passages:")] == other[: other.rindex("Passages:")]
    assert "lamp" not in prompt[: prompt.rindex("Passages:")]


def test_passages_are_shown_best_last() -> None:
    found = "--- best.md ---\nfirst\n\n--- second.md ---\nsecond\n\n--- third.md ---\nthird"
    prompt = reading_prompts.completion_prompt(found, "Q?")
    tail = prompt[prompt.rindex("Passages:") :]
    assert tail.index("third.md") < tail.index("second.md") < tail.index("best.md")


def test_no_documents_still_gets_an_honest_answer(
    mock_model: Start, agent_options: Options, tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    server = mock_model(
        {
            "rules": [
                {
                    "match": "search found no passages",
                    "reply": {"content": "The answer is not in the passages."},
                }
            ]
        }
    )
    result = run({**agent_options(server), "workspace": str(empty), "prompt_style": "completion"})
    tool = result["trajectory"][0]
    assert tool["error"] is True and "no documents" in tool["result"]
    assert (result["answer"], result["stopped"]) == (
        "The answer is not in the passages.",
        "finished",
    )


@pytest.mark.parametrize("fault", ["500", "malformed"])
def test_a_model_error_ends_the_attempt_as_model_error(
    mock_model: Start, agent_options: Options, fault: str
) -> None:
    server = mock_model({"replies": [{"fault": fault}]})
    result = run({**agent_options(server), "prompt_style": "completion"})
    assert (result["stopped"], result["answer"], result["steps"]) == ("model_error", "", 1)
    tool, stop = result["trajectory"]
    assert tool["tool"] == "search_documents"
    assert stop["type"] == "stop" and stop["reason"] == "model_error"
    assert result["infra_error"]["kind"] in ("server", "bad_reply")


def test_an_endpoint_that_is_down_is_a_model_error(agent_options: Options) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = run({**agent_options(f"http://127.0.0.1:{port}/v1"), "prompt_style": "chat"})
    assert result["stopped"] == "model_error"
    assert result["infra_error"]["kind"] == "connection"


@pytest.mark.parametrize(
    ("limits", "reason"),
    [({"max_steps": 1}, "turn_limit"), ({"max_tokens": 0}, "token_budget")],
)
def test_a_budget_too_small_stops_before_any_call(
    mock_model: Start, agent_options: Options, limits: dict[str, Any], reason: str
) -> None:
    server = reader(mock_model)
    result = run({**agent_options(server, **limits), "prompt_style": "chat"})
    assert (result["stopped"], result["steps"], server.request_count) == (reason, 0, 0)
    assert [r["type"] for r in result["trajectory"]] == ["stop"]


@pytest.mark.parametrize("style", ["completion", "chat"])
def test_an_answer_cut_at_the_reply_limit_stops_as_reply_cut(
    mock_model: Start, agent_options: Options, style: str
) -> None:
    server = mock_model({"default": {"cut": "At 19:00 every evening, and also 1000000"}})
    result = run({**agent_options(server), "prompt_style": style, "reply_tokens": "12"})
    assert (result["stopped"], result["answer"], result["steps"]) == ("reply_cut", "", 2)
    tool, model, stop = result["trajectory"]
    assert tool["tool"] == "search_documents"
    assert model["content"] == "At 19:00 every evening, and also 1000000"
    assert "cut at the 12-token reply limit (finish_reason length)" in stop["detail"]


def test_build_asks_the_server_once_for_every_attempt(
    mock_model: Start, agent_options: Options
) -> None:
    server = reader(mock_model, chat_template=False)
    options = agent_options(server)
    retrieve_read.build(options)
    server.script = server.script.model_copy(update={"chat_template": True})
    try:
        first = retrieve_read.run_task(TASK, options)
        second = retrieve_read.run_task(TASK, {**options, "attempt": 2})
    finally:
        retrieve_read.close()
    # What build heard holds for every attempt, even after the server changed its answer.
    assert [r["endpoint"] for r in server.requests] == ["completions", "completions"]
    assert first["answer"] == second["answer"] == "At 19:00 every evening."
