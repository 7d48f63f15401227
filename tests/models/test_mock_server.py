"""The scripted model server: script validation, reply choice, modes, usage and faults."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_eval.errors import ConfigError, ModelEndpointError
from agent_eval.models.actions import parse_action
from agent_eval.models.client import ChatClient
from agent_eval.models.mock_script import load_script, parse_script
from agent_eval.models.mock_server import MockModelServer

Start = Callable[..., MockModelServer]
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mock-replies.json"
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
JSON_FORMAT = {"type": "json_object"}
JSON = {"Content-Type": "application/json"}


def conversation(turn: int, last: str = "go") -> list[dict[str, Any]]:
    """A request at ``turn``: that many assistant messages, then ``last``."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "sys"}]
    messages.append({"role": "user", "content": "the task"})
    for i in range(turn):
        messages += [{"role": "assistant", "content": f"a{i}"}, {"role": "user", "content": "r"}]
    messages[-1] = {"role": "user", "content": last} if turn else messages[-1]
    return messages


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ({"replies": [{"content": "x", "extra": 1}]}, "replies.0.extra: unknown field"),
        ({"replise": []}, "replise: unknown field (did you mean 'replies'?)"),
        ({"rules": [{"turn": 0, "reply": {"tool_calls": [{"nam": "x"}]}}]}, "did you mean 'name'?"),
        ({"replies": [{"content": "x", "fault": "500"}]}, "exactly one of"),
        ({"replies": [{}]}, "exactly one of"),
        ({"replies": [{"fault": "418"}]}, "replies.0.fault"),
        ({"rules": [{"match": "(", "reply": {"content": "x"}}]}, "rules.0.match"),
        ({"rules": [{"reply": {"content": "x"}}]}, "a rule needs a condition"),
        ({"replies": [{"tool_calls": []}]}, "replies.0.tool_calls"),
    ],
)
def test_a_bad_script_names_the_field(script: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match="mock script") as caught:
        parse_script(script)
    assert message in str(caught.value)


def test_load_script_reports_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_script(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_script(broken)


def test_the_example_script_is_valid() -> None:
    script = load_script(EXAMPLE)
    assert script.rules and script.default is not None


def test_models_endpoint_lists_the_script_models(mock_model: Start) -> None:
    server = mock_model({"models": ["a", "b"], "default": {"content": "x"}})
    data = httpx.get(f"{server.base_url}/models").json()
    assert [m["id"] for m in data["data"]] == ["a", "b"]
    assert httpx.get(f"{server.base_url}/nothing").status_code == 404
    torn = httpx.post(f"{server.base_url}/chat/completions", content=b"{", headers=JSON)
    assert torn.status_code == 400


def test_replies_follow_the_turn_then_rules_then_default(mock_model: Start) -> None:
    server = mock_model(
        {
            "rules": [
                {"match": "^urgent", "reply": {"content": "rule"}},
                {"task": "the task", "turn": 3, "reply": {"content": "task rule"}},
                {"model": "^big", "reply": {"content": "model rule"}},
                {"system": "^sys$", "turn": 4, "reply": {"content": "system rule"}},
            ],
            "replies": [{"content": "first"}, {"content": "second"}],
            "default": {"content": "fallback"},
        }
    )
    with ChatClient(server.base_url) as client:
        said = [client.chat("m", conversation(turn)).content for turn in range(6)]
        assert client.chat("m", conversation(1, "urgent: now")).content == "rule"
        assert client.chat("big-model", conversation(0)).content == "model rule"
    assert said == ["first", "second", "fallback", "task rule", "system rule", "fallback"]
    assert server.request_count == 8
    assert [r["turn"] for r in server.requests[:6]] == [0, 1, 2, 3, 4, 5]


def test_a_script_without_a_reply_fails_loudly(mock_model: Start) -> None:
    server = mock_model({"replies": [{"content": "only"}]})
    client = ChatClient(server.base_url)
    with pytest.raises(ModelEndpointError, match="no reply for turn 1"):
        client.chat("m", conversation(1))
    client.close()


def test_reply_modes(mock_model: Start) -> None:
    call = {"name": "lookup", "arguments": {"q": "x"}}
    server = mock_model(
        {
            "rules": [
                {"match": "call", "reply": {"tool_calls": [call]}},
                {"match": "answer", "reply": {"content": "done"}},
                {"match": "object", "reply": {"json": {"route": "search"}}},
            ]
        }
    )
    ask = [{"role": "user", "content": "call"}]
    with ChatClient(server.base_url) as client:
        native = client.chat("m", ask, tools=TOOLS)
        assert native.tool_calls[0].arguments == {"q": "x"} and native.content is None
        for kwargs in ({}, {"tools": TOOLS, "response_format": JSON_FORMAT}):
            action = parse_action(client.chat("m", ask, **kwargs).content or "")
            assert action is not None and (action.name, action.args) == ("lookup", {"q": "x"})
        answer = [{"role": "user", "content": "answer"}]
        assert client.chat("m", answer, tools=TOOLS).content == "done"
        assert client.chat("m", answer).content == "done"
        constrained = client.chat("m", answer, response_format=JSON_FORMAT).content or ""
        assert json.loads(constrained) == {"action": "finish", "answer": "done"}
        obj = [{"role": "user", "content": "object"}]
        assert json.loads(client.chat("m", obj, tools=TOOLS).content or "") == {"route": "search"}


def test_usage_is_deterministic_and_grows_with_the_prompt(mock_model: Start) -> None:
    server = mock_model({"default": {"content": "same"}})
    with ChatClient(server.base_url) as client:
        one = client.chat("m", [{"role": "user", "content": "short"}])
        again = client.chat("m", [{"role": "user", "content": "short"}])
        longer = client.chat("m", [{"role": "user", "content": "long " * 200}])
    assert (one.prompt_tokens, one.completion_tokens) == (
        again.prompt_tokens,
        again.completion_tokens,
    )
    assert longer.prompt_tokens > one.prompt_tokens + 200
    assert one.completion_tokens > 0


def test_injected_faults_are_seeded(mock_model: Start) -> None:
    def faults(seed: int) -> list[str | None]:
        server = mock_model(
            {"default": {"content": "ok"}}, fault_rate=0.5, faults=("500", "429"), seed=seed
        )
        with ChatClient(server.base_url) as client:
            for _ in range(12):
                with contextlib.suppress(ModelEndpointError):
                    client.chat("m", [{"role": "user", "content": "x"}])
        return [r["fault"] for r in server.requests]

    first = faults(7)
    assert first == faults(7)
    assert {"500", "429", None} <= set(first)


def test_fault_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="faults"):
        MockModelServer(parse_script({}), fault_rate=0.5, faults=("404",))


def test_latency_delays_each_reply(mock_model: Start) -> None:
    server = mock_model({"default": {"content": "x"}}, latency=0.2)
    started = time.monotonic()
    with ChatClient(server.base_url) as client:
        client.chat("m", [{"role": "user", "content": "x"}])
    assert time.monotonic() - started >= 0.2


def test_parallel_conversations_get_the_same_sequence(mock_model: Start) -> None:
    replies = [{"content": f"reply {i}"} for i in range(5)]
    server = mock_model({"replies": replies}, latency=0.01)
    seen: dict[int, list[str]] = {}

    def converse(worker: int) -> None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": f"worker {worker}"}]
        said = []
        with ChatClient(server.base_url) as client:
            for _ in range(5):
                content = client.chat("m", messages).content or ""
                said.append(content)
                messages += [
                    {"role": "assistant", "content": content},
                    {"role": "user", "content": "more"},
                ]
        seen[worker] = said

    threads = [threading.Thread(target=converse, args=(w,)) for w in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen[0] == seen[1] == [f"reply {i}" for i in range(5)]
    assert server.request_count == 10


def test_a_body_over_the_cap_is_refused_unread(mock_model: Start) -> None:
    from agent_eval.web import MAX_BODY

    server = mock_model({"default": {"content": "x"}})
    padding = "x" * (MAX_BODY + 1 - len('{"messages": [], "p": ""}'))
    big = httpx.post(
        f"{server.base_url}/chat/completions",
        content=f'{{"messages": [], "p": "{padding}"}}',
        headers=JSON,
    )
    assert big.status_code == 413 and str(MAX_BODY) in big.json()["error"]["message"]
    ok = httpx.post(
        f"{server.base_url}/chat/completions",
        json={"messages": [{"role": "user", "content": "hi"}]},
    )
    assert ok.status_code == 200 and server.request_count == 1


def test_a_held_request_is_dropped_without_a_reply_when_the_server_stops(
    mock_model: Start,
) -> None:
    server = mock_model({"replies": [{"fault": "timeout"}]}, hang_seconds=30)
    failures: list[BaseException] = []

    def ask() -> None:
        try:
            httpx.post(f"{server.base_url}/chat/completions", json={"messages": []}, timeout=20)
        except httpx.HTTPError as exc:
            failures.append(exc)

    asker = threading.Thread(target=ask)
    asker.start()
    while server.request_count == 0:
        time.sleep(0.01)
    server.stop()
    asker.join(25)  # the hang would hold it 30 s, the client's timeout 20 s
    assert not asker.is_alive()
    assert [type(f) for f in failures] == [httpx.RemoteProtocolError]


def test_text_completions_answer_from_the_script_with_the_prompt_as_the_message(
    mock_model: Start,
) -> None:
    server = mock_model(
        {
            "rules": [{"match": "Question: colour", "reply": {"content": " red"}}],
            "default": {"content": " no idea"},
        }
    )
    with httpx.Client(base_url=server.base_url) as http:
        hit = http.post("/completions", json={"model": "m", "prompt": "Question: colour\nA:"})
        miss = http.post("/completions", json={"model": "m", "prompt": "Question: size\nA:"})
        bad = http.post("/completions", json={"model": "m", "prompt": ["a"]})
    assert hit.json()["object"] == "text_completion"
    assert [r.json()["choices"][0]["text"] for r in (hit, miss)] == [" red", " no idea"]
    assert hit.json()["usage"]["prompt_tokens"] == len("Question: colour\nA:") // 4
    assert bad.status_code == 400 and "prompt" in bad.json()["error"]["message"]
    assert [r["endpoint"] for r in server.requests] == ["completions", "completions"]
