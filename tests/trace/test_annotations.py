"""`export-otel --phoenix-annotations` against a real HTTP server on 127.0.0.1.

The server stands in for Phoenix's REST API the way Phoenix answers it: it records each
POST and can answer 404 first, as Phoenix does for spans it has not stored yet. The real
Phoenix is in test_phoenix.py; these run on any machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="needs the otel extra")

Records = list[dict[str, Any]]


@pytest.fixture
def rest() -> Iterator[dict[str, Any]]:
    """A REST server recording POSTs; ``answers`` lists status codes to give first."""
    state: dict[str, Any] = {"posts": [], "answers": []}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            state["posts"].append((self.path, dict(self.headers), json.loads(body)))
            status = state["answers"].pop(0) if state["answers"] else 200
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"data": []}' if status == 200 else b'{"detail": "not found"}')

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    state["url"] = f"http://127.0.0.1:{server.server_address[1]}"
    yield state
    server.shutdown()
    server.server_close()


def _export(results: Path, receiver: Any, target: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_eval", "export-otel", str(results), "--otlp-endpoint",
         receiver.url, "--otlp-header", "Authorization=Bearer px-key",
         "--phoenix-annotations", target],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_verdict_and_checks_go_to_the_root_span_with_one_identifier(
    receiver: Any,
    rest: dict[str, Any],
    attempt_cases: dict[str, Callable[[], Records]],
    make_run: Callable[..., Path],
) -> None:
    results = make_run([attempt_cases["minimal"](), attempt_cases["multi-agent"]()])
    rest["answers"] = [404]  # the spans are not stored yet: asked again, then taken
    done = _export(results, receiver, rest["url"])
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[1] == (
        f"12 annotations on 2 attempts sent to {rest['url']}/v1/span_annotations"
    )
    assert len(rest["posts"]) == 2 and rest["posts"][0][2] == rest["posts"][1][2]
    path, headers, body = rest["posts"][1]
    assert path == "/v1/span_annotations?sync=true"
    assert headers["Authorization"] == "Bearer px-key"
    roots = [next(s for s in r.spans if not s.parent) for r in receiver.requests]
    notes = body["data"]
    assert {n["span_id"] for n in notes} == {root.span_id for root in roots}
    assert {n["identifier"] for n in notes} == {"agent-eval"}
    assert {n["annotator_kind"] for n in notes} == {"CODE"}
    wrong = {n["name"]: n["result"] for n in notes if n["span_id"] == roots[1].span_id}
    assert wrong["verdict"] == {"label": "wrong_answer", "score": 0.0,
                                "explanation": "failed checks: missing"}  # fmt: skip
    assert wrong["check.missing"] == {"label": "fail", "score": 0.0, "explanation": "missing: fail"}
    assert wrong["check.regex_ok"]["score"] == 1.0
    assert set(wrong) == {"verdict", "check.missing", "check.forbidden", "check.regex_ok",
                          "check.tool_ok", "check.within_steps"}  # fmt: skip
    # the expected answer the failed check quotes stays in the results file
    assert "8443" not in json.dumps(notes)


def test_a_bad_or_failing_annotation_server_is_one_error_line(
    receiver: Any,
    rest: dict[str, Any],
    attempt_cases: dict[str, Callable[[], Records]],
    make_run: Callable[..., Path],
) -> None:
    results = make_run([attempt_cases["minimal"]()])
    bad = _export(results, receiver, "phoenix:6006")
    assert bad.returncode == 1
    assert bad.stderr.strip().splitlines()[-1] == (
        "Error: --phoenix-annotations 'phoenix:6006': use the Phoenix server's http:// URL, "
        "such as http://127.0.0.1:6006"
    )
    assert receiver.requests == []  # checked before anything was sent
    rest["answers"] = [422]
    refused = _export(results, receiver, rest["url"])
    assert refused.returncode == 1
    assert refused.stderr == (
        f"Error: annotations not sent: {rest['url']}/v1/span_annotations answered 422: "
        '{"detail": "not found"}\n'
    )
