"""read_file, write_file and edit_file inside the workspace: behaviour and refusals."""

from __future__ import annotations

import os
from pathlib import Path

from agent_eval.tools import ToolContext, run_tool
from agent_eval.tools.base import MAX_RESULT_CHARS


def test_read_file_returns_the_text(ctx: ToolContext) -> None:
    seen = run_tool("read_file", ctx, {"path": "notes.md"})
    assert not seen.error
    assert "listens on 4000" in seen.result


def test_read_file_truncates_a_large_file(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "big.txt").write_text("x" * (MAX_RESULT_CHARS * 10), encoding="utf-8")
    seen = run_tool("read_file", ctx, {"path": "big.txt"})
    assert not seen.error
    assert len(seen.result) < MAX_RESULT_CHARS + 100
    assert seen.result.endswith(f"[... truncated: the file is {MAX_RESULT_CHARS * 10} bytes]")


def test_read_file_refuses_folders_binaries_pipes_and_missing(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "blob.bin").write_bytes(b"\x00\x01\x02")
    os.mkfifo(workspace / "pipe")
    for path, message in [
        ("sub", "is a folder"),
        ("blob.bin", "binary"),
        ("pipe", "not a regular file"),
        ("missing.md", "no file"),
    ]:
        seen = run_tool("read_file", ctx, {"path": path})
        assert seen.error, path
        assert message in seen.result


def test_write_file_creates_parents_and_keeps_content_exact(
    ctx: ToolContext, workspace: Path
) -> None:
    seen = run_tool("write_file", ctx, {"path": "a/b/c.txt", "content": "one\r\ntwo\n"})
    assert not seen.error
    assert seen.result == "created a/b/c.txt (9 characters)"
    assert (workspace / "a/b/c.txt").read_bytes() == b"one\r\ntwo\n"
    again = run_tool("write_file", ctx, {"path": "a/b/c.txt", "content": ""})
    assert again.result.startswith("overwrote")
    assert (workspace / "a/b/c.txt").read_bytes() == b""


def test_write_file_refuses_a_folder_and_oversized_content(ctx: ToolContext) -> None:
    assert run_tool("write_file", ctx, {"path": "sub", "content": "x"}).error
    assert run_tool("write_file", ctx, {"path": ".", "content": "x"}).error
    huge = run_tool("write_file", ctx, {"path": "huge.txt", "content": "x" * 1_000_001})
    assert huge.error
    assert "limit" in huge.result


def test_edit_file_replaces_exactly_once(ctx: ToolContext, workspace: Path) -> None:
    seen = run_tool("edit_file", ctx, {"path": "notes.md", "old": "4000", "new": "4001"})
    assert not seen.error
    assert (workspace / "notes.md").read_text(encoding="utf-8").count("4001") == 1


def test_edit_file_refuses_absent_ambiguous_and_empty(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "twice.txt").write_text("same same", encoding="utf-8")
    absent = run_tool("edit_file", ctx, {"path": "notes.md", "old": "9999", "new": "1"})
    twice = run_tool("edit_file", ctx, {"path": "twice.txt", "old": "same", "new": "x"})
    empty = run_tool("edit_file", ctx, {"path": "notes.md", "old": "", "new": "x"})
    missing = run_tool("edit_file", ctx, {"path": "nope.md", "old": "a", "new": "b"})
    assert absent.error and "does not occur" in absent.result
    assert twice.error and "occurs 2 times" in twice.result
    assert empty.error and "empty" in empty.result
    assert missing.error and "write_file" in missing.result
    assert (workspace / "twice.txt").read_text(encoding="utf-8") == "same same"


def test_edit_file_keeps_line_endings(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "crlf.txt").write_bytes(b"a\r\nb\r\n")
    run_tool("edit_file", ctx, {"path": "crlf.txt", "old": "b", "new": "c"})
    assert (workspace / "crlf.txt").read_bytes() == b"a\r\nc\r\n"
