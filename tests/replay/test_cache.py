"""`run --cache DIR` keeps only replies the harness accepts, and serves no other."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from agent_eval.models.mock_server import MockModelServer
from agent_eval.replay import read_recording
from agent_eval.replay.cache import ResponseCache, reusable
from agent_eval.results import AttemptResult
from agent_eval.run.runner import execute, prepare
from agent_eval.run.settings import RunConfig

ANSWER = {"content": "The model gateway listens on port 4000."}
TASK = "r-gateway-port"


def run(tmp_path: Path, out: str, server: MockModelServer, **extra: Any) -> AttemptResult:
    settings: dict[str, Any] = {
        "agent": "builtin:minimal", "tasks": "part26", "task_ids": (TASK,), "model": "mock",
        "base_url": server.base_url, "out": tmp_path / out, "trajectory_dir": tmp_path / "traj",
        "cache_dir": tmp_path / "cache", "record": True, "retry_backoff": 0.01,
        # a set tool mode: the agent asks no /v1/models advice, so calls are the replies'
        "options": {"tool_mode": "native"}, **extra,
    }  # fmt: skip
    (row,) = execute(prepare(RunConfig(**settings))).rows
    return row


def stored(tmp_path: Path) -> list[dict[str, Any]]:
    """The replies in the cache folder."""
    files = sorted((tmp_path / "cache").rglob("*.json"))
    return [json.loads(path.read_text())["response"] for path in files]


def sources(tmp_path: Path, row: AttemptResult) -> list[str]:
    _, calls = read_recording(tmp_path / str(row.recording_file))
    return [call["source"] for call in calls]


@pytest.mark.parametrize("fault", ["malformed", "no_choices"])
def test_a_reply_that_is_no_completion_is_never_kept(
    tmp_path: Path, mock_model: Callable[..., MockModelServer], fault: str
) -> None:
    faulty = mock_model({"default": ANSWER}, fault_rate=1.0, faults=(fault,))
    row = run(tmp_path, "one.json", faulty, max_infra_retries=1)
    # the retry asked the endpoint again, not the cache
    assert (row.failure_class, row.infra_retries, faulty.request_count) == ("infra_error", 1, 2)
    assert row.error is not None and "not a chat completion" in row.error
    assert stored(tmp_path) == []
    faulty.stop()
    # a healthy server at the same address: its reply is used, and kept
    port = urlsplit(faulty.base_url).port
    healthy = mock_model({"default": ANSWER}, port=port)
    row = run(tmp_path, "two.json", healthy)
    assert (row.failure_class, row.infra_retries, sources(tmp_path, row)) == (
        "passed", 0, ["endpoint"])  # fmt: skip
    (kept,) = stored(tmp_path)
    assert kept["status"] == 200
    assert kept["json"]["choices"][0]["message"]["content"] == ANSWER["content"]
    healthy.stop()
    row = run(tmp_path, "three.json", healthy)  # the endpoint stopped: the cache answers
    assert (row.failure_class, sources(tmp_path, row)) == ("passed", ["cache"])


def test_a_fault_within_a_run_is_not_given_again_to_the_retry(
    tmp_path: Path, mock_model: Callable[..., MockModelServer]
) -> None:
    server = mock_model({"rules": [{"times": 1, "reply": {"fault": "malformed"}}],
                         "default": ANSWER})  # fmt: skip
    row = run(tmp_path, "one.json", server)
    assert (row.failure_class, row.infra_retries, sources(tmp_path, row)) == (
        "passed", 1, ["endpoint"])  # fmt: skip
    assert len(stored(tmp_path)) == 1


def test_a_cache_that_an_older_version_poisoned_heals(
    tmp_path: Path, mock_model: Callable[..., MockModelServer]
) -> None:
    server = mock_model({"default": ANSWER})
    run(tmp_path, "one.json", server)
    (path,) = (tmp_path / "cache").rglob("*.json")
    good = json.loads(path.read_text())
    # what earlier versions kept of the mock's malformed fault: a cut-off 200
    cut = {"status": 200, "headers": {"content-type": "application/json"},
           "text": '{"choices": [{"message": '}  # fmt: skip
    path.write_text(json.dumps({"schema": 1, "response": cut}))
    row = run(tmp_path, "two.json", server)
    assert (row.failure_class, sources(tmp_path, row)) == ("passed", ["endpoint"])
    assert json.loads(path.read_text())["response"]["json"] == good["response"]["json"]
    assert server.request_count == 2


CHAT = "/v1/chat/completions"
COMPLETION = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "4000"}}]}


@pytest.mark.parametrize(
    ("path", "response", "kept"),
    [
        (CHAT, {"status": 200, "json": COMPLETION}, True),
        (CHAT + "?api-version=1", {"status": 200, "json": COMPLETION}, True),
        (CHAT, {"status": 201, "json": COMPLETION}, True),
        (CHAT, {"status": 429, "json": COMPLETION}, False),
        (CHAT, {"status": 500, "json": {"error": {"message": "down"}}}, False),
        (CHAT, {"status": 200, "text": '{"choices": [{"message": '}, False),
        (CHAT, {"status": 200}, False),
        (CHAT, {"status": 200, "json": {"object": "chat.completion", "choices": []}}, False),
        (CHAT, {"status": 200, "json": {"choices": [{"text": "4000"}]}}, False),
        (CHAT, {"status": 200, "json": {"choices": [{"message": "4000"}]}}, False),
        (CHAT, {"status": 200, "json": {"error": {"message": "overloaded"}}}, False),
        (CHAT, {"status": 200, "json": [COMPLETION]}, False),
        ("/v1/completions", {"status": 200, "json": {"choices": [{"text": "4000"}]}}, True),
        ("/v1/completions", {"status": 200, "json": {"choices": [{"message": {}}]}}, False),
        ("/v1/models", {"status": 200, "json": {"data": [{"id": "mock"}]}}, True),
        ("/v1/models", {"status": 200, "text": "<html>"}, False),
        (CHAT, {"status": 200, "events": [{"data": '{"choices": []}'}, {"data": "[DONE]"}]},
         True),
        (CHAT, {"status": 200, "events": [{"data": '{"choices": []}'}]}, False),
        (CHAT, {"status": 200, "events": [{"data": '{"choices": [{'}, {"data": "[DONE]"}]},
         False),
        (CHAT, {"status": 200, "events": []}, False),
    ],
)  # fmt: skip
def test_only_a_reply_the_harness_accepts_is_reusable(
    tmp_path: Path, path: str, response: dict[str, Any], kept: bool
) -> None:
    assert reusable(path, response) is kept
    cache = ResponseCache(tmp_path / "cache")
    assert cache.put("ab" * 32, path, response) is kept
    assert cache.get("ab" * 32, path) == (response if kept else None)
