"""A streamed reply and an agent in another language record and replay."""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from agent_eval.models.mock_server import MockModelServer
from agent_eval.replay import read_recording
from agent_eval.run.runner import execute, prepare
from agent_eval.run.settings import RunConfig
from agent_eval.web import AppServer

ROOT = Path(__file__).resolve().parents[2]
NODE_AGENT = ROOT / "examples" / "node-agent" / "agent.js"
PIECES = ["The model ", "gateway listens ", "on port ", "4000."]

STREAMING_AGENT = """
import json
import httpx


def run_task(task, options):
    body = {"model": options["model"], "stream": True,
            "messages": [{"role": "user", "content": task}]}
    content = []
    with httpx.stream("POST", options["base_url"] + "/chat/completions", json=body) as reply:
        for line in reply.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                content.append(json.loads(line[6:])["choices"][0]["delta"].get("content", ""))
    return {"answer": "".join(content), "steps": 1, "tokens": len(content),
            "trajectory": [{"type": "model", "content": "".join(content), "chunks": len(content)}]}
"""


async def _stream(request: Request) -> StreamingResponse:
    async def events() -> AsyncIterator[bytes]:
        for piece in PIECES:
            chunk = {"choices": [{"index": 0, "delta": {"content": piece}}]}
            yield f"data: {json.dumps(chunk)}\n\n".encode()
        yield b"data: [DONE]\n\n"

    return StreamingResponse(events(), media_type="text/event-stream")


@pytest.fixture
def sse_server() -> Iterator[AppServer]:
    """A tiny upstream that streams every chat reply as server-sent events."""
    app = Starlette(routes=[Route("/v1/chat/completions", _stream, methods=["POST"])])
    server = AppServer(app).start()
    yield server
    server.stop()


def test_a_streamed_reply_is_recorded_as_events_and_replays(
    tmp_path: Path, sse_server: AppServer, write_agent: Callable[..., Path]
) -> None:
    agent = str(write_agent(STREAMING_AGENT))

    def run(out: str, **extra: Any) -> Any:
        config = RunConfig(agent=agent, tasks="part26", task_ids=("r-gateway-port",),
                           model="mock", base_url=f"{sse_server.root_url}/v1", out=tmp_path / out,
                           trajectory_dir=tmp_path / "traj", **extra)  # fmt: skip
        (row,) = execute(prepare(config)).rows
        return row

    recorded = run("rec.json", record=True)
    assert (recorded.answer, recorded.tokens, recorded.passed) == ("".join(PIECES), 4, True)
    _, (call,) = read_recording(tmp_path / str(recorded.recording_file))
    events = call["response"]["events"]
    assert [json.loads(e["data"])["choices"][0]["delta"]["content"] for e in events[:-1]] == PIECES
    assert events[-1] == {"data": "[DONE]"}
    assert call["response"]["headers"]["content-type"].startswith("text/event-stream")
    sse_server.stop()
    replayed = run("rep.json", replay=tmp_path / "rec.json")
    assert (replayed.answer, replayed.tokens, replayed.failure_class) == (
        recorded.answer, 4, "passed")  # fmt: skip


NODE_SCRIPT: dict[str, Any] = {
    "replies": [
        {"tool_calls": [{"name": "search_documents", "arguments": {"query": "backup window"}}]},
        {"content": "The backup window runs from 02:00 to 04:00 every Sunday."},
    ]
}


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_a_node_agent_records_and_replays_through_the_cli(
    tmp_path: Path,
    mock_model: Callable[..., MockModelServer],
    agent_eval: Callable[..., Any],
) -> None:
    server = mock_model(NODE_SCRIPT)
    agent = f"cmd:node {NODE_AGENT}"
    done = agent_eval("run", "--agent", agent, "--tasks", "part26", "--task-id",
                      "r-backup-window", "--repeats", "2", "--base-url", server.base_url,
                      "--model", "mock", "--api-key", "sk-node-secret-42", "--out", "rec.json",
                      "--record", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert server.request_count == 4
    server.stop()
    # the recorded run's model, repeats and endpoint are the replay's defaults
    done = agent_eval("run", "--agent", agent, "--replay", "rec.json", "--out", "rep.json",
                      cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    recorded, replayed = (json.loads((tmp_path / n).read_text()) for n in ("rec.json", "rep.json"))
    keys = ("id", "attempt", "answer", "steps", "tokens", "checks", "failure_class")
    assert [{k: r[k] for k in keys} for r in replayed["results"]] == [
        {k: r[k] for k in keys} for r in recorded["results"]
    ]
    assert len(replayed["results"]) == 2
    for row in recorded["results"]:
        text = (tmp_path / row["recording_file"]).read_text()
        assert "sk-node-secret-42" not in text
        assert json.loads(text.splitlines()[1])["response"]["status"] == 200
