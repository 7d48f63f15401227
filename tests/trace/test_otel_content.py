"""Content under the GenAI conventions, roles as branches, and status: real runs, real receiver.

Each run is `agent-eval run` against the scripted model server; its traces go to the
test's OTLP receiver with content on, and every message payload must validate against the
conventions' message schemas, which trace stores such as Phoenix enforce.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "opentelemetry.exporter.otlp.proto.http",
    reason="the otel extra is not installed: pip install -e '.[dev,otel]'",
)

from genai_schema import schema_problems

from agent_eval.models.mock_script import load_script
from agent_eval.models.mock_server import MockModelServer
from agent_eval.trace.otel import OtlpExporter
from agent_eval.trajectory import read_trajectory

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TASK = "r-backup-window"
SECRET = "sk-test-never-in-a-trace"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """One real run of each reference agent, with an API key that must never go out."""
    folder = tmp_path_factory.mktemp("runs")
    server = MockModelServer(load_script(EXAMPLES / "mock-replies.json")).start()
    try:
        out = {}
        for agent in ("minimal", "multi-agent"):
            out[agent] = folder / f"{agent}.json"
            done = subprocess.run(
                [sys.executable, "-m", "agent_eval", "run", "--agent", f"builtin:{agent}",
                 "--base-url", server.base_url, "--model", "mock", "--task-id", TASK,
                 "--api-key", SECRET, "--out", str(out[agent]),
                 "--trajectory-dir", str(folder / agent)],
                capture_output=True, text=True, cwd=folder, timeout=120,
            )  # fmt: skip
            assert done.returncode in (0, 2), done.stderr
        yield out
    finally:
        server.stop()


def _send(receiver: Any, results: Path, content: bool) -> list[Any]:
    with OtlpExporter(receiver.url, content=content) as exporter:
        summary = exporter.export_results(results)
    assert summary.failed == 0 and not summary.problems
    assert SECRET.encode() not in b"".join(r.body for r in receiver.requests)
    return [r.spans for r in receiver.requests]


@pytest.mark.parametrize("agent", ["minimal", "multi-agent"])
def test_every_message_payload_validates_against_the_genai_schemas(
    receiver: Any, runs: dict[str, Path], agent: str, trace_follows: Callable[..., None]
) -> None:
    results = runs[agent]
    rows = json.loads(results.read_text())["results"]
    for row, spans in zip(rows, _send(receiver, results, content=True), strict=True):
        records = read_trajectory(results.parent / row["trajectory_file"]).lines
        trace_follows(records, spans, True)
        task = records[0]["meta"]["task"]
        chats = [s for s in spans if s.kind == "client"]
        assert chats
        for chat in chats:
            inputs, outputs = (chat.attributes[f"gen_ai.{k}.messages"] for k in ("input", "output"))
            assert schema_problems(inputs, output=False) == [], inputs
            assert schema_problems(outputs, output=True) == [], outputs
            sent = json.loads(inputs)
            assert sent[0]["role"] == "system"  # what the model was really sent, not a guess
            assert any(task in part.get("content", "") for m in sent for part in m["parts"])
            # what Phoenix shows as the span's input and output
            assert (chat.attributes["input.value"], chat.attributes["input.mime_type"]) == (
                inputs,
                "application/json",
            )
            said = [p.get("content", "") for p in json.loads(outputs)[0]["parts"]
                    if p["type"] == "text"]  # fmt: skip
            assert chat.attributes["output.value"] == "".join(said)
        root = next(s for s in spans if not s.parent)
        assert root.attributes["input.value"] == task
        assert root.attributes["output.value"] == row["answer"]
        assert schema_problems(root.attributes["gen_ai.output.messages"], output=True) == []


def test_a_tool_call_and_its_result_reach_the_next_model_call(
    receiver: Any, runs: dict[str, Path]
) -> None:
    results = runs["minimal"]
    (spans,) = _send(receiver, results, content=True)
    tool = next(s for s in spans if s.name.startswith("execute_tool "))
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"])
    result = json.loads(tool.attributes["gen_ai.tool.call.result"])
    assert result and tool.attributes["output.value"] == tool.attributes["gen_ai.tool.call.result"]
    chats = [s for s in spans if s.kind == "client"]
    asked = json.loads(chats[0].attributes["gen_ai.output.messages"])[0]
    assert asked["finish_reason"] == "tool_call"
    call = next(p for p in asked["parts"] if p["type"] == "tool_call")
    assert call["name"] == tool.attributes["gen_ai.tool.name"]
    later = json.loads(chats[1].attributes["gen_ai.input.messages"])
    responses = [p for m in later for p in m["parts"] if p["type"] == "tool_call_response"]
    assert responses and result in responses[0]["response"]
    # one id links the model's request, the tool's span and the result the model read
    assert call["id"] and call["id"] == tool.attributes["gen_ai.tool.call.id"]
    assert responses[0]["id"] == call["id"]


def test_without_content_no_message_text_or_answer_goes_out(
    receiver: Any, runs: dict[str, Path]
) -> None:
    results = runs["minimal"]
    row = json.loads(results.read_text())["results"][0]
    task = read_trajectory(results.parent / row["trajectory_file"]).lines[0]["meta"]["task"]
    (spans,) = _send(receiver, results, content=False)
    body = receiver.requests[0].body
    assert task.encode() not in body
    assert row["answer"].encode() not in body
    keys = set().union(*(s.attributes.keys() for s in spans))
    assert not keys & {"gen_ai.input.messages", "gen_ai.output.messages", "output.value",
                       "gen_ai.tool.call.result"}  # fmt: skip


def test_the_schema_check_rejects_the_payloads_a_store_would_drop() -> None:
    reply = {"role": "assistant", "parts": [{"type": "text", "content": "port 8443"}]}
    assert schema_problems(json.dumps([reply]), output=True) == [
        "message 0: finish_reason is required"
    ]
    assert schema_problems(json.dumps([{**reply, "finish_reason": "stop"}]), output=True) == []
    bad = [{"role": "tool", "parts": [{"type": "tool_call_response", "id": 7}]}]
    assert schema_problems(json.dumps(bad), output=False) == [
        "message 0 part 0: id is neither a string nor null"
    ]
    assert schema_problems('{"role": "user"}', output=False) == ["not an array of messages"]
