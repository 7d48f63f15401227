"""The chat client against a real scripted server: usage, tool calls and each failure."""

from __future__ import annotations

import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agent_eval.errors import ConfigError, ModelEndpointError
from agent_eval.models.client import ChatClient
from agent_eval.models.mock_server import MockModelServer

Start = Callable[..., MockModelServer]
USER = [{"role": "user", "content": "hello"}]


def failure(base_url: str, timeout: float = 5.0, api_key: str | None = None) -> ModelEndpointError:
    """Make one request that must fail infrastructurally, and return the error."""
    client = ChatClient(base_url, api_key=api_key, timeout=timeout)
    try:
        with pytest.raises(ModelEndpointError) as caught:
            client.chat("m", USER)
    finally:
        client.close()
    return caught.value


TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


def test_reply_carries_content_usage_and_model(mock_model: Start) -> None:
    server = mock_model(
        {"replies": [{"content": "hi", "usage": {"prompt_tokens": 11, "completion_tokens": 7}}]}
    )
    with ChatClient(server.base_url) as client:
        reply = client.chat("some-model", USER)
    assert (reply.content, reply.prompt_tokens, reply.completion_tokens) == ("hi", 11, 7)
    assert reply.tool_calls == []
    assert reply.finish_reason == "stop"
    assert reply.model == "some-model"
    assert reply.seconds >= 0


def test_native_tool_calls_are_parsed(mock_model: Start) -> None:
    call = {"name": "lookup", "arguments": {"query": "tides", "limit": 2}}
    server = mock_model({"replies": [{"tool_calls": [call, {"name": "lookup"}]}]})
    with ChatClient(server.base_url) as client:
        reply = client.chat("m", USER, tools=TOOLS)
    assert [c.name for c in reply.tool_calls] == ["lookup", "lookup"]
    assert reply.tool_calls[0].arguments == {"query": "tides", "limit": 2}
    assert reply.tool_calls[1].arguments == {}
    assert reply.tool_calls[0].id != reply.tool_calls[1].id
    assert reply.finish_reason == "tool_calls"
    assert reply.content is None


def test_connection_refused_is_a_connection_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    error = failure(f"http://127.0.0.1:{port}/v1", timeout=5)
    assert error.kind == "connection"
    assert f"127.0.0.1:{port}" in str(error)


def test_a_held_request_is_a_timeout(mock_model: Start) -> None:
    # The server holds the request for 30 s and then drops it, which would be a
    # "connection" error: "timeout" means the client gave up at its own limit.
    server = mock_model({"replies": [{"fault": "timeout"}]}, hang_seconds=30)
    error = failure(server.base_url, timeout=0.3)
    assert error.kind == "timeout"
    assert "did not answer within 0.3s" in str(error)


def test_429_is_rate_limit_with_retry_after(mock_model: Start) -> None:
    server = mock_model({"replies": [{"fault": "429"}]})
    error = failure(server.base_url)
    assert (error.kind, error.retry_after) == ("rate_limit", 1.0)


@pytest.mark.parametrize("status", ["500", "503"])
def test_5xx_is_a_server_error(mock_model: Start, status: str) -> None:
    server = mock_model({"replies": [{"fault": status}]})
    error = failure(server.base_url)
    assert f"HTTP {status}" in str(error)
    assert error.kind == "server"


@pytest.mark.parametrize("fault", ["malformed", "no_choices"])
def test_unparseable_reply_is_bad_reply(mock_model: Start, fault: str) -> None:
    server = mock_model({"replies": [{"fault": fault}]})
    error = failure(server.base_url)
    assert error.kind == "bad_reply"


def test_a_4xx_is_a_config_error_that_says_what_to_check(mock_model: Start) -> None:
    server = mock_model({"default": {"content": "x"}})
    wrong = server.base_url.removesuffix("/v1") + "/v2"
    client = ChatClient(wrong)
    with pytest.raises(ConfigError, match=r"HTTP 404.*--base-url"):
        client.chat("m", USER)
    client.close()


def test_the_api_key_never_shows(mock_model: Start) -> None:
    server = mock_model({"replies": [{"fault": "500"}]})
    with ChatClient(server.base_url, api_key="sk-very-secret") as client:
        assert "sk-very-secret" not in repr(client)
    assert "sk-very-secret" not in str(failure(server.base_url, api_key="sk-very-secret"))


def once(fault: dict[str, str]) -> dict[str, Any]:
    """A script that answers the first request with ``fault`` and every later one with hi."""
    return {"rules": [{"times": 1, "reply": fault}], "default": {"content": "hi"}}


def test_one_connection_serves_every_request(mock_model: Start) -> None:
    server = mock_model({"default": {"content": "hi"}})
    with ChatClient(server.base_url) as client:
        for _ in range(3):
            client.chat("m", USER)
    assert (server.request_count, server.connections) == (3, 1)


def test_an_error_reply_keeps_the_connection(mock_model: Start) -> None:
    server = mock_model(once({"fault": "500"}))
    with ChatClient(server.base_url) as client:
        with pytest.raises(ModelEndpointError):
            client.chat("m", USER)
        assert client.chat("m", USER).content == "hi"
    assert server.connections == 1


def test_a_timed_out_connection_is_replaced(mock_model: Start) -> None:
    server = mock_model(once({"fault": "timeout"}), hang_seconds=5)
    with ChatClient(server.base_url, timeout=0.3) as client:
        with pytest.raises(ModelEndpointError):
            client.chat("m", USER)
        assert client.chat("m", USER).content == "hi"
    assert server.connections == 2


def mock_model_process(script: Path, port: int = 0) -> tuple[subprocess.Popen[str], str]:
    """`agent-eval mock-model` in its own process, and its base URL."""
    command = [sys.executable, "-m", "agent_eval", "mock-model", "--script", str(script),
               "--port", str(port)]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().split(" on ")[1].split()[0]


def test_a_kept_connection_survives_a_server_restart(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"default": {"content": "hi"}}), encoding="utf-8")
    first, base_url = mock_model_process(script)
    port = int(base_url.rsplit(":", 1)[1].removesuffix("/v1"))
    second = None
    try:
        with ChatClient(base_url, timeout=10) as client:
            assert client.chat("m", USER).content == "hi"
            first.kill()
            first.wait()
            with pytest.raises(ModelEndpointError) as down:
                client.chat("m", USER)
            assert down.value.kind == "connection"
            second, _ = mock_model_process(script, port)
            assert client.chat("m", USER).content == "hi"
    finally:
        for proc in (first, second):
            if proc is not None:
                proc.kill()
                proc.communicate()


def test_a_plain_http_client_needs_nothing_its_module_did_not_import() -> None:
    # A worker forked from a process that imported the client module should build its
    # client without importing anything (httpx loads its transport on first use).
    code = (
        "import sys; from agent_eval.models.client import ChatClient; "
        "before = set(sys.modules); ChatClient('http://127.0.0.1:9/v1').close(); "
        "print(sorted(set(sys.modules) - before))"
    )
    # Without a proxy, as the proxy case keeps httpx's default TLS set-up.
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env
    )
    assert (done.returncode, done.stdout) == (0, "[]\n"), done.stderr


@pytest.fixture
def tls_endpoint(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An HTTPS chat endpoint on loopback with a self-signed certificate, and the cert."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    body = json.dumps({"choices": [{"message": {"content": "secure"}}]}).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{httpd.server_address[1]}/v1", cert
    httpd.shutdown()
    httpd.server_close()


def test_an_https_endpoint_is_verified(tls_endpoint: tuple[str, Path]) -> None:
    base_url, _ = tls_endpoint
    error = failure(base_url)
    assert error.kind == "connection"
    assert "CERTIFICATE_VERIFY_FAILED" in str(error)


def test_an_https_endpoint_with_a_trusted_certificate_answers(
    tls_endpoint: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    base_url, cert = tls_endpoint
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # httpx's trust store from the environment
    with ChatClient(base_url) as client:
        assert client.chat("m", USER).content == "secure"


def run_minimal(
    folder: Path, base_url: str, env: dict[str, str], *flags: str
) -> subprocess.CompletedProcess[str]:
    """`agent-eval run` of builtin:minimal on folder's suite.json, with env added and no
    proxy variables."""
    unproxied = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    return subprocess.run(
        [sys.executable, "-m", "agent_eval", "run", "--agent", "builtin:minimal",
         "--tasks", "suite.json", "--base-url", base_url, "--model", "m", "--api-key", "k",
         "--no-preflight", "--out", "r.json", *flags],
        cwd=folder, capture_output=True, text=True, timeout=120, env={**unproxied, **env},
    )  # fmt: skip


@pytest.mark.parametrize("sandbox", ["auto", "off"])
def test_a_run_reaches_an_https_endpoint_from_its_workers(
    tls_endpoint: tuple[str, Path],
    write_suite: Callable[..., Path],
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    sandbox: str,
) -> None:
    """Workers of a TLS endpoint's run speak TLS (through httpx, which only they import),
    across the sandbox's relay too, and trust the certificates SSL_CERT_FILE names, which
    a sandbox shows them read-only."""
    base_url, made = tls_endpoint
    cert = tmp_path_factory.mktemp("trusted") / "ca.pem"  # not in the suite's folder: hidden
    cert.write_bytes(made.read_bytes())
    tasks = [{"id": f"t{i}", "task": "q", "expect_in_answer": ["secure"]} for i in range(3)]
    write_suite(tasks)
    done = run_minimal(tmp_path, base_url, {"SSL_CERT_FILE": str(cert)},
                       "--concurrency", "2", "--sandbox", sandbox)  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = json.loads((tmp_path / "r.json").read_text())["results"]
    assert [(row["answer"], row["checks"]["passed"]) for row in rows] == [("secure", True)] * 3


def test_a_sandboxed_run_says_it_cannot_show_a_certificate_in_the_home_folder(
    tls_endpoint: tuple[str, Path], write_suite: Callable[..., Path], tmp_path: Path
) -> None:
    base_url, made = tls_endpoint
    home = tmp_path / "home"
    home.mkdir()
    (home / "ca.pem").write_bytes(made.read_bytes())
    write_suite([{"id": "t0", "task": "q", "expect_in_answer": ["secure"]}])
    env = {"HOME": str(home), "SSL_CERT_FILE": str(home / "ca.pem")}
    done = run_minimal(tmp_path, base_url, env, "--max-infra-retries", "0", "--sandbox", "on")
    assert done.returncode != 0
    assert (
        f"Note: SSL_CERT_FILE {home / 'ca.pem'}: the sandbox shows no certificate from the "
        "home folder or the root, so inside it is not trusted; keep it in a folder of its "
        "own, or --sandbox off"
    ) in done.stderr, done.stderr


def test_a_text_completion_carries_text_usage_and_seed(mock_model: Start) -> None:
    usage = {"prompt_tokens": 5, "completion_tokens": 2}
    server = mock_model({"replies": [{"content": " blue", "usage": usage}]})
    with ChatClient(server.base_url) as client:
        reply = client.complete("m", "Sky:", stop=["\n"], temperature=0.5, seed=9)
    assert (reply.content, reply.prompt_tokens, reply.completion_tokens) == (" blue", 5, 2)
    assert (reply.tool_calls, reply.finish_reason, reply.model) == ([], "stop", "m")
    assert server.requests == [
        {
            "model": "m",
            "turn": 0,
            "fault": None,
            "max_tokens": None,
            "endpoint": "completions",
            "seed": 9,
        }
    ]


@pytest.mark.parametrize("fault", ["malformed", "no_choices"])
def test_an_unparseable_text_completion_is_bad_reply(mock_model: Start, fault: str) -> None:
    server = mock_model({"replies": [{"fault": fault}]})
    with ChatClient(server.base_url) as client, pytest.raises(ModelEndpointError) as caught:
        client.complete("m", "Sky:")
    assert caught.value.kind == "bad_reply"
    assert "not a text completion" in str(caught.value)


@pytest.mark.parametrize("template", [True, False, None])
def test_health_reports_what_the_server_says(mock_model: Start, template: bool | None) -> None:
    server = mock_model({"models": ["m"], "chat_template": template})
    with ChatClient(server.base_url) as client:
        health = client.health()
    assert health.get("chat_template") == template and health["models"] == ["m"]


def test_health_of_a_server_that_is_down_is_empty() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with ChatClient(f"http://127.0.0.1:{port}/v1") as client:
        assert client.health() == {}
