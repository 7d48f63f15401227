"""Shared fixtures: a tiny suite on disk and an agent file factory."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_eval.models.mock_script import parse_script
from agent_eval.models.mock_server import MockModelServer


@pytest.fixture
def write_suite(tmp_path: Path) -> Callable[..., Path]:
    """Write a suite JSON file (with an optional documents folder) and return its path."""

    def write(tasks: list[dict[str, Any]], name: str = "suite.json", **top: Any) -> Path:
        body = {"name": "tiny", "version": "1.0.0", **top, "tasks": tasks}
        path = tmp_path / name
        path.write_text(json.dumps(body), encoding="utf-8")
        return path

    return write


@pytest.fixture
def write_agent(tmp_path: Path) -> Callable[[str], Path]:
    """Write an agent entry-point file from source text and return its path."""

    def write(source: str, name: str = "agent.py") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(source), encoding="utf-8")
        return path

    return write


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
