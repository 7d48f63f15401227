"""An outage of a Python agent's own model client is infrastructure, whatever HTTP
library the agent uses: counted as infra_error, retried, and named in the error."""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_eval.models.mock_server import MockModelServer

Cli = Callable[..., subprocess.CompletedProcess[str]]
ANSWER = {"content": "The model gateway listens on port 4000."}
REQUEST = """
import json
def body(task, options):
    return {"model": options["model"], "messages": [{"role": "user", "content": task}]}
def result(content):
    return {"answer": content, "steps": 1, "tokens": 1}
"""
AGENTS = {
    "urllib": REQUEST
    + """
import urllib.request
def run_task(task, options):
    request = urllib.request.Request(options["base_url"] + "/chat/completions",
        json.dumps(body(task, options)).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as reply:
        return result(json.load(reply)["choices"][0]["message"]["content"])
""",
    "httpx": REQUEST
    + """
import httpx
def run_task(task, options):
    reply = httpx.post(options["base_url"] + "/chat/completions", json=body(task, options))
    reply.raise_for_status()
    return result(reply.json()["choices"][0]["message"]["content"])
""",
    "openai": REQUEST
    + """
import openai
def run_task(task, options):
    client = openai.OpenAI(base_url=options["base_url"], api_key="none", max_retries=0)
    reply = client.chat.completions.create(**body(task, options))
    return result(reply.choices[0].message.content)
""",
}
AGENTS["requests"] = AGENTS["httpx"].replace("httpx", "requests")  # the same calls
# In the sandbox the relay inside accepts the connection before the endpoint refuses
# it, so the agent sees the server disconnect instead: an infra_error all the same.
DISCONNECTED = {
    "urllib": "http.client.RemoteDisconnected",
    "httpx": "httpx.RemoteProtocolError",
    "requests": "requests.exceptions.ConnectionError",
    "openai": "openai.APIConnectionError",
}
REFUSED = {
    "urllib": "urllib.error.URLError",
    "httpx": "httpx.ConnectError",
    "requests": "requests.exceptions.ConnectionError",
    "openai": "openai.APIConnectionError",
}
UNAVAILABLE = {"urllib": "urllib.error.HTTPError", "httpx": "httpx.HTTPStatusError",
               "requests": "requests.exceptions.HTTPError",
               "openai": "openai.InternalServerError"}  # fmt: skip


def run(agent_eval: Cli, folder: Path, source: str, base_url: str, retries: int) -> dict[str, Any]:
    (folder / "agent.py").write_text(source, encoding="utf-8")
    done = agent_eval("run", "--agent", "agent.py", "--tasks", "part26", "--task-id",
                      "r-gateway-port", "--base-url", base_url, "--model", "m", "--out",
                      "r.json", "--max-infra-retries", str(retries), "--no-preflight",
                      cwd=folder)  # fmt: skip
    assert done.returncode in (0, 2, 3), done.stderr
    (row,) = json.loads((folder / "r.json").read_text())["results"]
    return dict(row)


def closed_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/v1"


@pytest.mark.parametrize("library", sorted(AGENTS))
def test_a_refused_connection_is_an_infra_error_and_retried(
    library: str, tmp_path: Path, agent_eval: Cli
) -> None:
    row = run(agent_eval, tmp_path, AGENTS[library], closed_port(), retries=1)
    assert (row["failure_class"], row["infra_retries"]) == ("infra_error", 1)
    raised = (f"run_task raised {REFUSED[library]}", f"run_task raised {DISCONNECTED[library]}")
    assert row["error"].startswith(raised), row["error"]
    assert "connection failure, counted as infra_error" in row["error"]
    assert len(list((tmp_path / "trajectories").glob("*.try1.jsonl"))) == 1  # the first try kept


@pytest.mark.parametrize("library", sorted(AGENTS))
def test_an_http_503_is_an_infra_error(
    library: str, tmp_path: Path, agent_eval: Cli, mock_model: Callable[..., MockModelServer]
) -> None:
    server = mock_model({"default": {"fault": "503"}})
    row = run(agent_eval, tmp_path, AGENTS[library], server.base_url, retries=0)
    assert row["failure_class"] == "infra_error"
    assert row["error"].startswith(f"run_task raised {UNAVAILABLE[library]}")
    assert "server failure" in row["error"]


def test_an_outage_that_clears_passes_after_a_retry(
    tmp_path: Path, agent_eval: Cli, mock_model: Callable[..., MockModelServer]
) -> None:
    server = mock_model({"rules": [{"times": 1, "reply": {"fault": "429"}}], "default": ANSWER})
    row = run(agent_eval, tmp_path, AGENTS["openai"], server.base_url, retries=2)
    assert (row["failure_class"], row["infra_retries"], row["checks"]["passed"]) == (
        "passed",
        1,
        True,
    )
    assert server.request_count == 2


def test_an_outage_wrapped_by_the_agent_is_found_through_its_cause(
    tmp_path: Path, agent_eval: Cli
) -> None:
    source = (
        AGENTS["httpx"].replace("def run_task", "def call")
        + """
def run_task(task, options):
    try:
        return call(task, options)
    except httpx.HTTPError as exc:
        raise RuntimeError("the model is unreachable") from exc
"""
    )
    row = run(agent_eval, tmp_path, source, closed_port(), retries=0)
    assert row["failure_class"] == "infra_error"
    causes = ("httpx.ConnectError", "httpx.RemoteProtocolError")  # the latter in the sandbox
    assert row["error"].startswith(tuple(f"run_task raised RuntimeError (caused by {c})"
                                         for c in causes))  # fmt: skip


@pytest.mark.parametrize(
    ("raise_line", "named"),
    [
        ("raise ValueError('no answer')", "ValueError"),
        ("open('missing.txt')", "FileNotFoundError"),
        ("import urllib.request; urllib.request.urlopen('htp://x')", "URLError"),
    ],
)
def test_the_agents_own_errors_stay_agent_errors(
    raise_line: str, named: str, tmp_path: Path, agent_eval: Cli
) -> None:
    source = f"def run_task(task, options):\n    {raise_line}\n"
    row = run(agent_eval, tmp_path, source, closed_port(), retries=2)
    assert (row["failure_class"], row["infra_retries"]) == ("agent_error", 0)
    assert row["error"].startswith(f"run_task raised {named}")


def test_a_client_error_other_than_429_is_the_agents(
    tmp_path: Path, agent_eval: Cli, mock_model: Callable[..., MockModelServer]
) -> None:
    server = mock_model({"default": ANSWER})
    source = AGENTS["httpx"].replace('"/chat/completions"', '"/no-such-path"')
    row = run(agent_eval, tmp_path, source, server.base_url, retries=2)
    assert (row["failure_class"], row["infra_retries"]) == ("agent_error", 0)
