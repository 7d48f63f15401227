"""The chat client against a real scripted server: usage, tool calls and each failure."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

import pytest

from agent_eval.errors import ConfigError, ModelEndpointError
from agent_eval.models.client import ChatClient
from agent_eval.models.mock_server import MockModelServer

Start = Callable[..., MockModelServer]
USER = [{"role": "user", "content": "hello"}]


def failure(base_url: str, timeout: float = 5.0, api_key: str | None = None) -> ModelEndpointError:
    """Make one request that must fail infrastructurally, and return the error."""
    client = ChatClient(base_url, api_key=api_key, timeout=timeout)
    try:
        with pytest.raises(ModelEndpointError) as caught:
            client.chat("m", USER)
    finally:
        client.close()
    return caught.value


TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


def test_reply_carries_content_usage_and_model(mock_model: Start) -> None:
    server = mock_model(
        {"replies": [{"content": "hi", "usage": {"prompt_tokens": 11, "completion_tokens": 7}}]}
    )
    with ChatClient(server.base_url) as client:
        reply = client.chat("some-model", USER)
    assert (reply.content, reply.prompt_tokens, reply.completion_tokens) == ("hi", 11, 7)
    assert reply.tool_calls == []
    assert reply.finish_reason == "stop"
    assert reply.model == "some-model"
    assert reply.seconds >= 0


def test_native_tool_calls_are_parsed(mock_model: Start) -> None:
    call = {"name": "lookup", "arguments": {"query": "tides", "limit": 2}}
    server = mock_model({"replies": [{"tool_calls": [call, {"name": "lookup"}]}]})
    with ChatClient(server.base_url) as client:
        reply = client.chat("m", USER, tools=TOOLS)
    assert [c.name for c in reply.tool_calls] == ["lookup", "lookup"]
    assert reply.tool_calls[0].arguments == {"query": "tides", "limit": 2}
    assert reply.tool_calls[1].arguments == {}
    assert reply.tool_calls[0].id != reply.tool_calls[1].id
    assert reply.finish_reason == "tool_calls"
    assert reply.content is None


def test_connection_refused_is_a_connection_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    error = failure(f"http://127.0.0.1:{port}/v1", timeout=5)
    assert error.kind == "connection"
    assert f"127.0.0.1:{port}" in str(error)


def test_a_held_request_is_a_timeout(mock_model: Start) -> None:
    server = mock_model({"replies": [{"fault": "timeout"}]}, hang_seconds=5)
    started = time.monotonic()
    error = failure(server.base_url, timeout=0.3)
    assert error.kind == "timeout"
    assert time.monotonic() - started < 3


def test_429_is_rate_limit_with_retry_after(mock_model: Start) -> None:
    server = mock_model({"replies": [{"fault": "429"}]})
    error = failure(server.base_url)
    assert (error.kind, error.retry_after) == ("rate_limit", 1.0)


@pytest.mark.parametrize("status", ["500", "503"])
def test_5xx_is_a_server_error(mock_model: Start, status: str) -> None:
    server = mock_model({"replies": [{"fault": status}]})
    error = failure(server.base_url)
    assert f"HTTP {status}" in str(error)
    assert error.kind == "server"


@pytest.mark.parametrize("fault", ["malformed", "no_choices"])
def test_unparseable_reply_is_bad_reply(mock_model: Start, fault: str) -> None:
    server = mock_model({"replies": [{"fault": fault}]})
    error = failure(server.base_url)
    assert error.kind == "bad_reply"


def test_a_4xx_is_a_config_error_that_says_what_to_check(mock_model: Start) -> None:
    server = mock_model({"default": {"content": "x"}})
    wrong = server.base_url.removesuffix("/v1") + "/v2"
    client = ChatClient(wrong)
    with pytest.raises(ConfigError, match=r"HTTP 404.*--base-url"):
        client.chat("m", USER)
    client.close()


def test_the_api_key_never_shows(mock_model: Start) -> None:
    server = mock_model({"replies": [{"fault": "500"}]})
    with ChatClient(server.base_url, api_key="sk-very-secret") as client:
        assert "sk-very-secret" not in repr(client)
    assert "sk-very-secret" not in str(failure(server.base_url, api_key="sk-very-secret"))
