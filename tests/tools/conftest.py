"""Shared fixtures for the tool tests: a small workspace and a secret folder beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_eval.tools import ToolContext

SECRET = "TOP-SECRET-OUTSIDE-CONTENT"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder next to the workspace whose content no tool may ever show."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text(f"{SECRET}\n", encoding="utf-8")
    # No link names this file, so its name appearing anywhere means a tool listed outside.
    (folder / "unlisted.txt").write_text(f"{SECRET}\n", encoding="utf-8")
    return folder


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace with a document at the top and one in a subfolder."""
    folder = tmp_path / "workspace"
    (folder / "sub").mkdir(parents=True)
    (folder / "notes.md").write_text(
        "# Notes\n\n## Ports\n\nThe gateway listens on 4000.\n", encoding="utf-8"
    )
    (folder / "sub" / "deep.txt").write_text("alpha\nbeta\ngamma\n", encoding="utf-8")
    return folder


@pytest.fixture
def ctx(workspace: Path) -> ToolContext:
    """A tool context over the workspace fixture."""
    return ToolContext(workspace=workspace)


@pytest.fixture
def secret() -> str:
    """The text inside the outside folder; seeing it in any observation is a leak."""
    return SECRET
