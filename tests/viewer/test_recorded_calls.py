"""The viewer shows each model call's exact request and response beside the step."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from agent_eval.models.mock_server import MockModelServer
from agent_eval.run.runner import execute, prepare
from agent_eval.run.settings import RunConfig
from agent_eval.viewer import open_viewer

HOSTILE = "<img src=x onerror=window.PWNED=1>"
SCRIPT: dict[str, Any] = {
    "replies": [
        {"tool_calls": [{"name": "search_documents", "arguments": {"query": "gateway port"}}]},
        {"content": "The model gateway listens on port 4000. " + HOSTILE},
    ]
}


def recorded_run(tmp_path: Path, base_url: str) -> Path:
    out = tmp_path / "runs" / "rec.json"
    config = RunConfig(agent="builtin:minimal", tasks="part26", task_ids=("r-gateway-port",),
                       base_url=base_url, model="mock", out=out,
                       trajectory_dir=tmp_path / "runs" / "traj", record=True)  # fmt: skip
    execute(prepare(config))
    return out


def test_the_api_pairs_each_model_reply_with_its_recorded_call(
    tmp_path: Path, mock_model: Callable[..., MockModelServer]
) -> None:
    recorded_run(tmp_path, mock_model(SCRIPT).base_url)
    server = open_viewer([tmp_path / "runs"]).start()
    try:
        base = server.root_url
        (run,) = [r["id"] for r in httpx.get(f"{base}/api/runs").json()["runs"]]
        assert httpx.get(f"{base}/api/attempt/{run}/0").json()["recording"] is True
        steps = httpx.get(f"{base}/api/steps/{run}/0").json()["records"]
        calls = httpx.get(f"{base}/api/calls/{run}/0").json()
        assert calls["problem"] is None
        # the agent may ask /v1/models first (the tool mode the endpoint advises)
        completions = [c for c in calls["calls"] if c["method"] == "POST"]
        assert [r["call"] for r in steps if r["type"] == "model"] == [
            c["call"] for c in completions
        ]
        first, second = completions
        assert first["request"]["json"]["messages"][-1]["content"].startswith("Task: Which port")
        assert first["response"]["json"]["choices"][0]["message"]["tool_calls"]
        assert HOSTILE in second["response"]["json"]["choices"][0]["message"]["content"]
    finally:
        server.stop()


def test_the_attempt_page_shows_the_request_and_response_as_text(
    tmp_path: Path, mock_model: Callable[..., MockModelServer], page: Any
) -> None:
    recorded_run(tmp_path, mock_model(SCRIPT).base_url)
    server = open_viewer([tmp_path / "runs"]).start()
    try:
        (run,) = [r["id"] for r in httpx.get(f"{server.root_url}/api/runs").json()["runs"]]
        page.goto(f"{server.root_url}/#/attempt/{run}/0")
        page.wait_for_function("document.body.dataset.shown === location.hash")
        step = page.locator("details.step.kind-model").first
        step.locator("summary").click()
        request = step.locator("pre.call-request")
        assert "Task: Which port" in request.inner_text()
        assert '"search_documents"' in step.locator("pre.call-response").inner_text()
        assert "Model calls (3 recorded)" in page.inner_text("#main")  # /v1/models, then two
        last = page.locator("#calls details.call").last
        last.locator("summary").click()
        assert HOSTILE in last.locator("pre.call-response").inner_text()  # text, never run
        assert page.evaluate("window.PWNED") is None and page.dialogs == []
    finally:
        server.stop()
