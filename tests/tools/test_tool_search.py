"""search_documents: BM25 ranking on the shipped documents, saved indexes and the cache."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import agent_eval
from agent_eval.errors import ConfigError
from agent_eval.tools import ToolContext, run_tool
from agent_eval.tools.bm25_index import PassageIndex
from agent_eval.tools.passages import Passage, split_document
from agent_eval.tools.search_documents import build_index, load_index, workspace_index

SHIPPED = Path(agent_eval.__file__).parent / "suites" / "part26" / "workspace"
TASKS = json.loads((SHIPPED.parent / "agent-tasks.json").read_text(encoding="utf-8"))["tasks"]


def task_text(task_id: str) -> str:
    return next(str(t["task"]) for t in TASKS if t["id"] == task_id)


def first_hit(ctx: ToolContext, query: str) -> str:
    seen = run_tool("search_documents", ctx, {"query": query})
    assert not seen.error, seen.result
    return seen.result.split("\n", 1)[0]


@pytest.fixture
def shipped(tmp_path: Path) -> ToolContext:
    """A fresh copy of the shipped documents, as an attempt's workspace would be."""
    folder = tmp_path / "attempt"
    shutil.copytree(SHIPPED, folder)
    return ToolContext(workspace=folder)


@pytest.mark.parametrize(
    ("task_id", "file", "heading"),
    [
        ("r-backup-window", "service-runbook.md", "Backup window"),
        ("r-gateway-port", "service-runbook.md", "Services and ports"),
        ("r-log-retention", "service-runbook.md", "Log retention"),
        ("r-not-backed-up", "service-runbook.md", "What is deliberately not backed up"),
        ("r-client-work", "machine-inventory.md", "Client work"),
        ("r-restore-test", "service-runbook.md", "Restore tests"),
        ("x-escalation", "service-runbook.md", "Escalation"),
        ("x-pickled-checkpoint", "model-policy.md", "Download formats"),
        ("x-untrusted-machine", "machine-inventory.md", "Trust"),
    ],
)
def test_the_right_passage_ranks_first(
    shipped: ToolContext, task_id: str, file: str, heading: str
) -> None:
    assert first_hit(shipped, task_text(task_id)).startswith(f"--- {file} > {heading} ---")


def test_the_backup_passage_carries_the_answer(shipped: ToolContext) -> None:
    seen = run_tool("search_documents", shipped, {"query": task_text("r-backup-window")})
    top = seen.result.split("\n\n--- ", 1)[0]
    assert "02:00" in top and "04:00" in top and "Sunday" in top


def test_a_saved_index_round_trips(shipped: ToolContext, tmp_path: Path) -> None:
    out = tmp_path / "index"
    count = build_index(shipped.workspace, out)
    assert count == len(workspace_index(shipped.workspace).passages)
    loaded = PassageIndex.load(out)
    assert loaded.passages == workspace_index(shipped.workspace).passages
    query = task_text("r-backup-window")
    fresh = workspace_index(shipped.workspace).search(query, 3)
    assert [(p, round(s, 4)) for p, s in loaded.search(query, 3)] == [
        (p, round(s, 4)) for p, s in fresh
    ]


def test_the_tool_uses_the_saved_index_when_given(shipped: ToolContext, tmp_path: Path) -> None:
    out = tmp_path / "index"
    build_index(shipped.workspace, out)
    empty = tmp_path / "empty"
    empty.mkdir()
    ctx = ToolContext(workspace=empty, index_path=out)
    assert first_hit(ctx, task_text("r-backup-window")).startswith("--- service-runbook.md")


def test_bad_indexes_and_folders_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no passages\.json"):
        PassageIndex.load(tmp_path)
    (tmp_path / "passages.json").write_text('{"format": "other"}', encoding="utf-8")
    with pytest.raises(ConfigError, match="not an agent-eval passage index"):
        PassageIndex.load(tmp_path)
    with pytest.raises(ConfigError, match="does not exist"):
        build_index(tmp_path / "missing", tmp_path / "out")
    with pytest.raises(ConfigError, match="no documents"):
        build_index(tmp_path, tmp_path / "out")
    seen = run_tool("search_documents", ToolContext(tmp_path, index_path=tmp_path), {"query": "x"})
    assert seen.error


def test_the_cache_is_reused_until_a_document_changes(shipped: ToolContext) -> None:
    first = workspace_index(shipped.workspace)
    assert workspace_index(shipped.workspace) is first
    run_tool("write_file", shipped, {"path": "extra.md", "content": "# Zebra\n\nzebra crossing\n"})
    second = workspace_index(shipped.workspace)
    assert second is not first
    assert first_hit(shipped, "zebra").startswith("--- extra.md > Zebra ---")


def test_saved_index_is_cached(shipped: ToolContext, tmp_path: Path) -> None:
    build_index(shipped.workspace, tmp_path / "index")
    assert load_index(tmp_path / "index") is load_index(tmp_path / "index")


def test_unmatched_query_and_empty_workspace(workspace: Path, tmp_path: Path) -> None:
    ctx = ToolContext(workspace=workspace)
    seen = run_tool("search_documents", ctx, {"query": "xylophone"})
    assert not seen.error
    assert seen.result.startswith("No passage matches")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_tool("search_documents", ToolContext(empty), {"query": "x"}).error


def test_documents_linked_from_outside_are_never_indexed(
    workspace: Path, outside: Path, secret: str
) -> None:
    (outside / "leak.md").write_text(f"# Leak\n\n{secret} zebra\n", encoding="utf-8")
    (workspace / "leak.md").symlink_to(outside / "leak.md")
    (workspace / "door").symlink_to(outside, target_is_directory=True)
    seen = run_tool("search_documents", ToolContext(workspace), {"query": "zebra leak"})
    assert secret not in seen.result


def test_markdown_splits_at_headings_and_text_at_paragraphs() -> None:
    markdown = "# Title\n\nIntro.\n\n## One\n\nFirst.\n\n```\n# not a heading\n```\n\n## Two\n\n"
    assert split_document("a.md", markdown) == [
        Passage("a.md", "Title", "Intro."),
        Passage("a.md", "One", "First.\n\n```\n# not a heading\n```"),
    ]
    assert split_document("b.txt", "one\n\n\ntwo\n") == [
        Passage("b.txt", "", "one"),
        Passage("b.txt", "", "two"),
    ]
    long_section = "## Long\n\n" + "\n\n".join(f"paragraph {i} " + "w " * 100 for i in range(20))
    pieces = split_document("c.md", long_section)
    assert len(pieces) > 1
    assert all(p.heading == "Long" and len(p.text) <= 1500 for p in pieces)
