"""Fixtures for the model client and the scripted server: real servers on port 0."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agent_eval.models.mock_script import parse_script
from agent_eval.models.mock_server import MockModelServer


@pytest.fixture
def mock_model() -> Iterator[Callable[..., MockModelServer]]:
    """Start scripted servers from script dicts; every one is stopped after the test."""
    started: list[MockModelServer] = []

    def start(script: dict[str, Any], **options: Any) -> MockModelServer:
        server = MockModelServer(parse_script(script), **options).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
