"""Workspace confinement: traversal, absolute paths and symlinks, through every file tool."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_eval.tools import ToolContext, run_tool
from agent_eval.tools.paths import PathRefused, iter_files, resolve_inside


def test_relative_paths_resolve_inside(workspace: Path) -> None:
    assert resolve_inside(workspace, "sub/deep.txt") == (workspace / "sub/deep.txt").resolve()
    assert resolve_inside(workspace, "sub/../notes.md") == (workspace / "notes.md").resolve()
    assert resolve_inside(workspace, "new/folder/file.md").is_relative_to(workspace.resolve())


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("../outside/secret.txt", "'..'"),
        ("sub/../../outside/secret.txt", "'..'"),
        ("..", "'..'"),
        ("/etc/passwd", "absolute"),
        ("/proc/self/environ", "absolute"),
        ("", "empty"),
        ("notes\x00.md", "NUL"),
    ],
)
def test_escapes_are_refused(workspace: Path, outside: Path, raw: str, reason: str) -> None:
    with pytest.raises(PathRefused, match=reason):
        resolve_inside(workspace, raw)


def test_symlinked_file_pointing_out_is_refused(workspace: Path, outside: Path) -> None:
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(PathRefused, match="symbolic link"):
        resolve_inside(workspace, "link.txt")


def test_symlinked_folder_in_the_middle_is_refused(workspace: Path, outside: Path) -> None:
    (workspace / "sub" / "door").symlink_to(outside, target_is_directory=True)
    with pytest.raises(PathRefused, match="symbolic link"):
        resolve_inside(workspace, "sub/door/secret.txt")
    with pytest.raises(PathRefused):
        resolve_inside(workspace, "sub/door/not-yet-written.md")


def test_symlink_that_stays_inside_is_allowed(workspace: Path) -> None:
    (workspace / "alias.md").symlink_to(workspace / "notes.md")
    assert resolve_inside(workspace, "alias.md") == (workspace / "notes.md").resolve()


def test_symlink_loop_is_refused(workspace: Path) -> None:
    (workspace / "loop").symlink_to(workspace / "loop")
    with pytest.raises(PathRefused):
        resolve_inside(workspace, "loop/x")


def test_missing_workspace_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PathRefused, match="does not exist"):
        resolve_inside(tmp_path / "nowhere", "notes.md")


def test_file_walk_skips_links_out_and_hidden_folders(workspace: Path, outside: Path) -> None:
    (workspace / "door").symlink_to(outside, target_is_directory=True)
    (workspace / "leak.md").symlink_to(outside / "secret.txt")
    (workspace / ".git").mkdir()
    (workspace / ".git" / "HEAD.md").write_text("x", encoding="utf-8")
    names = [p.relative_to(workspace).as_posix() for p in iter_files(workspace, (".md", ".txt"))]
    assert names == ["notes.md", "sub/deep.txt"]


ESCAPES = ["../outside/secret.txt", "/etc/passwd", "link.txt", "door/secret.txt"]


@pytest.fixture
def linked(workspace: Path, outside: Path) -> ToolContext:
    """A workspace holding a file link and a folder link that both point outside."""
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    (workspace / "door").symlink_to(outside, target_is_directory=True)
    return ToolContext(workspace=workspace)


@pytest.mark.parametrize("raw", ESCAPES)
def test_read_file_refuses_every_escape(linked: ToolContext, secret: str, raw: str) -> None:
    seen = run_tool("read_file", linked, {"path": raw})
    assert seen.error
    assert secret not in seen.result


@pytest.mark.parametrize("raw", [*ESCAPES, "door/new.txt"])
def test_write_tools_refuse_every_escape(
    linked: ToolContext, outside: Path, secret: str, raw: str
) -> None:
    before = sorted(os.listdir(outside))
    wrote = run_tool("write_file", linked, {"path": raw, "content": "pwned"})
    edited = run_tool("edit_file", linked, {"path": raw, "old": secret, "new": "pwned"})
    assert wrote.error
    assert edited.error
    assert sorted(os.listdir(outside)) == before
    assert (outside / "secret.txt").read_text(encoding="utf-8") == f"{secret}\n"


def test_a_dangling_link_out_cannot_be_written_through(workspace: Path, outside: Path) -> None:
    (workspace / "dangling.md").symlink_to(outside / "created-by-agent.md")
    seen = run_tool("write_file", ToolContext(workspace), {"path": "dangling.md", "content": "x"})
    assert seen.error
    assert "symbolic link" in seen.result
    assert not (outside / "created-by-agent.md").exists()
