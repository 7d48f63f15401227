"""The reference agents' shared client pool, against a real scripted server."""

from __future__ import annotations

from collections.abc import Callable

from agent_eval.agents.config import ClientPool
from agent_eval.models.mock_server import MockModelServer

Start = Callable[..., MockModelServer]
USER = [{"role": "user", "content": "hello"}]


def test_one_client_per_endpoint_until_close(mock_model: Start) -> None:
    server = mock_model({"default": {"content": "hi"}})
    pool = ClientPool()
    first = pool.get(server.base_url, None, 5.0)
    assert pool.get(server.base_url, None, 5.0) is first
    assert pool.get(server.base_url, "sk-other", 5.0) is not first
    for _ in range(3):
        pool.get(server.base_url, None, 5.0).chat("m", USER)
    assert (server.request_count, server.connections) == (3, 1)
    pool.close()
    assert first.is_closed
    again = pool.get(server.base_url, None, 5.0)
    assert again is not first
    assert again.chat("m", USER).content == "hi"
    assert server.connections == 2
    pool.close()
    assert again.is_closed
