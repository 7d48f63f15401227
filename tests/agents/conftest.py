"""Fixtures for the reference agents: a small workspace and the options the harness passes.

Scripted model servers come from the `mock_model` fixture in tests/conftest.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_eval.models.mock_server import MockModelServer


@pytest.fixture
def docs_workspace(tmp_path: Path) -> Path:
    """A workspace with two short documents about an invented lighthouse."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "lighthouse.md").write_text(
        "# Lighthouse\n\nThe lamp is lit at 19:00 every evening and put out at dawn.\n"
        "The tower has 112 steps.\n",
        encoding="utf-8",
    )
    (workspace / "keepers.md").write_text(
        "# Keepers\n\nThe head keeper is Ada Brand. Visitors may climb on Saturdays only.\n",
        encoding="utf-8",
    )
    return workspace


@pytest.fixture
def agent_options(docs_workspace: Path) -> Callable[..., dict[str, Any]]:
    """Build entry-point options for a server, as the harness passes them."""

    def build(server: MockModelServer | str, mode: str = "native", **limits: Any) -> dict[str, Any]:
        base_url = server if isinstance(server, str) else server.base_url
        return {
            "base_url": base_url,
            "model": "mock-main",
            "router_model": "mock-router",
            "api_key": None,
            "workspace": str(docs_workspace),
            "index": None,
            "tool_mode": mode,
            "task_id": "t-1",
            "attempt": 1,
            "limits": {"max_steps": None, "max_tokens": None, "max_seconds": None, **limits},
        }

    return build
