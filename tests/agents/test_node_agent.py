"""The Node.js example agent, run through the real CLI against the mock_model server."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_eval.models.mock_server import MockModelServer

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "examples" / "node-agent" / "agent.js"

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")

ANSWER = "The backup window runs from 02:00 to 04:00 every Sunday."
SCRIPT: dict[str, Any] = {
    "replies": [
        {
            "tool_calls": [{"name": "search_documents", "arguments": {"query": "backup window"}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10},
        },
        {
            "tool_calls": [{"name": "read_file", "arguments": {"path": "../outside.md"}}],
            "usage": {"prompt_tokens": 200, "completion_tokens": 20},
        },
        {"content": ANSWER, "usage": {"prompt_tokens": 300, "completion_tokens": 30}},
    ]
}


def run_cli(
    server: MockModelServer, tmp_path: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    command = f"cmd:node {AGENT}"
    return subprocess.run(
        [sys.executable, "-m", "agent_eval", "run", "--agent", command, "--tasks", "part26",
         "--task-id", "r-backup-window", "--base-url", server.base_url, "--model", "mock",
         "--api-key", "sk-node-test", "--out", str(tmp_path / "results.json"),
         "--trajectory-dir", str(tmp_path / "trajectories"),
         "--option", f"log_dir={tmp_path / 'trajectories'}", *extra],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_node_agent_answers_with_tools_and_a_full_trajectory(
    mock_model: Callable[..., MockModelServer], tmp_path: Path
) -> None:
    server = mock_model(SCRIPT)
    done = run_cli(server, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert results["run"]["scaffold"] == "node-agent"
    (row,) = results["results"]
    assert row["checks"]["passed"] and row["failure_class"] == "passed"
    assert row["answer"] == ANSWER
    assert (row["steps"], row["tokens"]) == (5, 660)
    assert (row["prompt_tokens"], row["completion_tokens"]) == (600, 60)
    assert row["stopped"] == "finished"

    lines = (tmp_path / row["trajectory_file"]).read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert records[0]["meta"]["scaffold"] == "node-agent"
    body = records[1:-1]
    assert [r["type"] for r in body] == ["model", "tool", "model", "tool", "model", "stop"]
    models = [r for r in body if r["type"] == "model"]
    assert [m["tool_calls"] for m in models] == [["search_documents"], ["read_file"], []]
    assert [(m["prompt_tokens"], m["completion_tokens"]) for m in models] == [
        (100, 10),
        (200, 20),
        (300, 30),
    ]
    assert all("tool" not in m for m in models)
    search, read = (r for r in body if r["type"] == "tool")
    assert search["tool"] == "search_documents" and search["args"] == {"query": "backup window"}
    assert search["error"] is False and "02:00 to 04:00" in search["result"]
    assert read["tool"] == "read_file" and read["args"] == {"path": "../outside.md"}
    assert read["error"] is True and "outside the workspace" in read["result"]
    assert body[-1] == {"type": "stop", "reason": "finished", "detail": ""}
    assert records[-1]["type"] == "score"
    # The request that reached the model carried the key as a header, sent from stdin.
    assert "sk-node-test" not in (tmp_path / "trajectories" / "node-agent.log").read_text()


def test_node_agent_stops_at_its_step_limit(
    mock_model: Callable[..., MockModelServer], tmp_path: Path
) -> None:
    looping = {"default": SCRIPT["replies"][0]}
    server = mock_model(looping)
    run_cli(server, tmp_path)
    (row,) = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["results"]
    # r-backup-window allows 6 steps; the third identical search is a repeated call.
    assert row["stopped"] == "repeated_call"
    assert row["steps"] == 5
    assert row["failure_class"] != "agent_error"
