"""A real OTLP/HTTP receiver on 127.0.0.1, and trajectories shaped like the reference agents'.

The receiver records every POST and answers from a script of status codes, so a test can
make it fail and recover. The trajectory cases are plain records; a results file made by
a real run plugs into the same checks through ``write_run``'s output format.
"""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest


@dataclass
class Got:
    """One span as the receiver decoded it; kind and status by name, such as ``client``."""

    name: str
    kind: str
    trace_id: str
    span_id: str
    parent: str
    start: int
    end: int
    attributes: dict[str, Any]
    events: list[tuple[str, int, dict[str, Any]]]
    status: str
    resource: dict[str, Any]
    message: str = ""
    """The status description."""


@dataclass
class Received:
    """One request the receiver got."""

    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def spans(self) -> list[Got]:
        """Every span of the body, an ExportTraceServiceRequest, in the order sent."""
        # imported here so the rest of this folder runs without the otel extra
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )
        from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

        request = ExportTraceServiceRequest()
        request.ParseFromString(self.body)
        spans = []
        for resource_spans in request.resource_spans:
            resource = _attrs(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for s in scope_spans.spans:
                    spans.append(Got(
                        s.name, Span.SpanKind.Name(s.kind).removeprefix("SPAN_KIND_").lower(),
                        s.trace_id.hex(), s.span_id.hex(), s.parent_span_id.hex(),
                        s.start_time_unix_nano, s.end_time_unix_nano, _attrs(s.attributes),
                        [(e.name, e.time_unix_nano, _attrs(e.attributes)) for e in s.events],
                        Status.StatusCode.Name(s.status.code).removeprefix("STATUS_CODE_").lower(),
                        resource, s.status.message,
                    ))  # fmt: skip
        return spans


def _value(value: Any) -> Any:
    which = value.WhichOneof("value")
    if which == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, which) if which else None


def _attrs(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


@dataclass
class Receiver:
    """The receiver's record of requests and its script of answers."""

    port: int
    requests: list[Received] = field(default_factory=list)
    script: list[int] = field(default_factory=list)
    """Status codes to answer, in order, before it answers 200 to everything."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        """The OTLP base URL, without the traces path."""
        return f"http://127.0.0.1:{self.port}"

    def answer(self, request: Received) -> int:
        with self.lock:
            self.requests.append(request)
            return self.script.pop(0) if self.script else 200


def _handler(receiver_of: Callable[[], Receiver]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            headers = {key.lower(): value for key, value in self.headers.items()}
            status = receiver_of().answer(Received(self.path, headers, body))
            self.send_response(status)
            if status != 200:
                # a retryable answer that asks for an immediate retry keeps the test fast
                self.send_header("Retry-After", "0")
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture(scope="session")
def otlp_server() -> Iterator[list[Receiver]]:
    """One receiving server per session; the per-test state lives in the list's Receiver."""
    holder: list[Receiver] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(lambda: holder[0]))
    holder.append(Receiver(server.server_address[1]))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield holder
    server.shutdown()
    server.server_close()


@pytest.fixture
def receiver(otlp_server: list[Receiver]) -> Receiver:
    """The session's receiver, reset to record nothing and answer 200."""
    otlp_server[0] = Receiver(otlp_server[0].port)
    return otlp_server[0]


def _meta(scaffold: str, task_id: str, attempt: int, started: str) -> dict[str, Any]:
    return {"meta": {
        "schema": 2, "scaffold": scaffold, "model": "local/chat", "router_model": "local/chat",
        "task_id": task_id, "attempt": attempt, "task": "Which port does the gateway use?",
        "suite": "part26", "suite_version": "1.2.0", "suite_hash": "sha256:5e1f",
        "run_id": "a1b2c3d4e5f6", "started": started,
    }}  # fmt: skip


def _checks(missing: list[str]) -> dict[str, Any]:
    return {
        "missing": missing,
        "forbidden": [],
        "regex_ok": True,
        "tool_ok": True,
        "within_steps": True,
        "tools_used": ["search"],
        "passed": not missing,
    }


def _model(
    role: str, calls: list[str], tokens: tuple[int, int], seconds: float, content: str = ""
) -> dict[str, Any]:
    return {"type": "model", "role": role, "model": "local/chat", "tool_calls": calls,
            "prompt_tokens": tokens[0], "completion_tokens": tokens[1], "seconds": seconds,
            "content": content}  # fmt: skip


def _tool(
    name: str, args: dict[str, Any], result: str, seconds: float, error: bool = False
) -> dict[str, Any]:
    return {"type": "tool", "tool": name, "args": args, "error": error, "result": result,
            "seconds": seconds}  # fmt: skip


def _score(failure: str, missing: list[str], steps: int, tokens: int) -> dict[str, Any]:
    return {"type": "score", "passed": failure == "passed", "failure_class": failure,
            "checks": _checks(missing), "steps": steps, "tokens": tokens, "seconds": 1.5,
            "stopped": "finished", "error": None}  # fmt: skip


def minimal_attempt(attempt: int = 1) -> list[dict[str, Any]]:
    """What ``builtin:minimal`` writes: model, tool calls (one failing), model, stop, score."""
    return [
        _meta("minimal", "r-gateway-port", attempt, "2025-03-04T05:06:07.250000+00:00"),
        _model("agent", ["search"], (120, 14), 0.75),
        _tool("search", {"query": "gateway port"}, "config/gateway.yaml: port: 8443", 0.05),
        _tool("read_file", {"path": "gone.yaml"}, "no such file: gone.yaml", 0.01, error=True),
        _model("agent", [], (180, 9), 0.5, "The gateway listens on port 8443."),
        {"type": "stop", "reason": "finished", "detail": ""},
        _score("passed", [], 4, 323),
    ]


def multi_agent_attempt(attempt: int = 1) -> list[dict[str, Any]]:
    """What ``builtin:multi-agent`` writes: router, route, researcher, answerer, verifier."""
    return [
        _meta("multi-agent", "r-gateway-port", attempt, "2025-03-04T05:07:00+00:00"),
        _model("router", [], (50, 10), 0.2, '{"route": "research", "reason": "needs the config"}'),
        {"type": "route", "route": "research", "reason": "needs the config"},
        _model("researcher", ["search"], (90, 12), 0.3),
        _tool("search", {"query": "gateway"}, "config/gateway.yaml: port: 8443", 0.02),
        _model("answerer", [], (140, 6), 0.4, "port 80"),
        _model("verifier", [], (70, 8), 0.25, '{"supported": true, "answer": "port 80"}'),
        {"type": "stop", "reason": "finished", "detail": ""},
        _score("wrong_answer", ["8443"], 5, 386),
    ]


CASES: dict[str, Callable[[], list[dict[str, Any]]]] = {
    "minimal": minimal_attempt,
    "multi-agent": multi_agent_attempt,
}
"""Trajectory shapes of the reference agents, by scaffold."""


def write_trajectory_file(folder: Path, name: str, records: list[dict[str, Any]]) -> Path:
    """Write records as a JSON-lines trajectory and return its path."""
    path = folder / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def write_run(folder: Path, attempts: list[list[dict[str, Any]]], **run: Any) -> Path:
    """Write trajectories and a results file listing them, as ``agent-eval run --out`` does."""
    (folder / "trajectories").mkdir(exist_ok=True)
    rows = []
    for number, records in enumerate(attempts, start=1):
        meta = records[0]["meta"]
        name = f"{number:02d}-{meta['scaffold']}-{meta['task_id']}-r{meta['attempt']}.jsonl"
        write_trajectory_file(folder / "trajectories", name, records)
        score = records[-1]
        rows.append(
            {
                "id": meta["task_id"],
                "category": "retrieval",
                "attempt": meta["attempt"],
                "answer": "",
                "steps": score["steps"],
                "tokens": score["tokens"],
                "seconds": score["seconds"],
                "stopped": score["stopped"],
                "checks": score["checks"],
                "trajectory_file": f"trajectories/{name}",
                "failure_class": score["failure_class"],
            }
        )
    head = {"run_id": "a1b2c3d4e5f6", "scaffold": "minimal", "model": "local/chat",
            "task_set": "part26", "task_set_version": "1.2.0"}  # fmt: skip
    document = {"schema": 2, "run": {**head, **run}, "per_task": [], "results": rows}
    path = folder / "results.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def nanos(iso: str, offset: float = 0.0) -> int:
    """Epoch nanoseconds of an ISO time plus an offset in seconds, exactly."""
    when = datetime.fromisoformat(iso)
    return (int(when.timestamp()) * 10**6 + when.microsecond) * 1000 + round(offset * 1e9)


CONTENT_KEYS = {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.result",
                "output.value"}  # fmt: skip
"""Attributes that carry message content or tool results: sent only on request."""
KINDS = {"invoke_agent": "AGENT", "chat": "LLM", "execute_tool": "TOOL", "route": "CHAIN"}
"""The OpenInference span kind of each operation, so Phoenix knows every span."""


def roles_of(records: list[dict[str, Any]]) -> list[str]:
    """The role each model, tool and route record belongs to ('' for a route)."""
    roles, role = [], "agent"
    for record in records[1:]:
        if record.get("type") == "model":
            role = record.get("role") or "agent"
        elif record.get("type") == "tool":
            role = record.get("role") or role
        if record.get("type") in ("model", "tool", "route"):
            roles.append("" if record["type"] == "route" else role)
    return roles


def assert_trace_follows(
    records: list[dict[str, Any]], spans: list[Got], content: bool = False
) -> None:
    """The trace of one attempt matches its trajectory; works for any agent's trajectory."""
    meta, score = records[0]["meta"], records[-1]
    roots = [s for s in spans if not s.parent]
    assert len(roots) == 1
    root = roots[0]
    assert (root.name, root.kind) == (f"invoke_agent {meta['scaffold']}", "internal")
    key = f"{meta['run_id']}:{meta['task_id']}:r{meta['attempt']}"
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["gen_ai.agent.name"] == meta["scaffold"]
    assert root.attributes["gen_ai.conversation.id"] == key
    assert root.attributes["agent_eval.suite.name"] == meta["suite"]
    assert root.attributes["agent_eval.task.id"] == meta["task_id"]
    assert root.attributes["agent_eval.attempt"] == meta["attempt"]
    verdict = "passed" if score["passed"] else score["failure_class"]
    assert root.attributes["agent_eval.verdict"] == verdict
    assert root.start == nanos(meta["started"])
    assert root.resource["service.name"] == "agent-eval"
    (event,) = root.events
    assert event[0] == "gen_ai.evaluation.result"
    assert event[1] == root.end
    assert event[2]["gen_ai.evaluation.score.value"] == (1.0 if score["passed"] else 0.0)
    assert event[2]["gen_ai.evaluation.score.label"] == verdict
    for span in spans:
        operation = span.attributes["gen_ai.operation.name"]
        assert span.attributes["openinference.span.kind"] == KINDS[operation], span.name
        assert not CONTENT_KEYS & span.attributes.keys() or content
    steps = [r for r in records[1:] if r.get("type") in ("model", "tool", "route")]
    roles = roles_of(records)
    several = len({role for role in roles if role}) > 1
    branches = {s.span_id: s for s in spans if s.parent == root.span_id and s.name in
                {f"invoke_agent {role}" for role in roles if role}}  # fmt: skip
    assert bool(branches) == several
    children = sorted(
        (s for s in spans if s.parent and s.span_id not in branches),
        key=lambda s: (s.start, s.end),
    )
    assert len(children) == len(steps)
    cursor = 0.0
    for span, record, role in zip(children, steps, roles, strict=True):
        assert span.trace_id == root.trace_id
        if several and role:
            branch = branches[span.parent]
            assert branch.name == f"invoke_agent {role}"
            assert branch.start <= span.start <= span.end <= branch.end
        else:
            assert span.parent == root.span_id
        begin = record.get("t", cursor)
        seconds = 0.0 if record["type"] == "route" else record["seconds"]
        cursor = max(cursor, begin + seconds)
        assert span.start == nanos(meta["started"], begin)
        assert span.end == nanos(meta["started"], begin + seconds)
        assert root.start <= span.start <= span.end <= root.end
        if record["type"] == "model":
            assert (span.name, span.kind) == (f"chat {record['model']}", "client")
            assert span.attributes["gen_ai.operation.name"] == "chat"
            assert span.attributes["gen_ai.request.model"] == record["model"]
            assert span.attributes["gen_ai.usage.input_tokens"] == record["prompt_tokens"]
            assert span.attributes["gen_ai.usage.output_tokens"] == record["completion_tokens"]
            assert span.attributes["agent_eval.role"] == record["role"]
            assert span.attributes["gen_ai.provider.name"]
        elif record["type"] == "tool":
            assert (span.name, span.kind) == (f"execute_tool {record['tool']}", "internal")
            assert span.attributes["gen_ai.tool.name"] == record["tool"]
            assert json.loads(span.attributes["gen_ai.tool.call.arguments"]) == record["args"]
            assert span.attributes.get("error.type") == ("tool_error" if record["error"] else None)
        else:
            assert (span.name, span.kind) == ("route", "internal")
            assert span.attributes["agent_eval.route"] == record["route"]
            assert span.attributes["agent_eval.route.reason"] == record["reason"]
    for branch in branches.values():
        chats = [s for s in children if s.parent == branch.span_id and s.kind == "client"]
        for name in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"):
            assert branch.attributes[name] == sum(s.attributes[name] for s in chats)


@pytest.fixture
def trace_follows() -> Callable[..., None]:
    """Assert that one attempt's decoded spans follow its trajectory records."""
    return assert_trace_follows


@pytest.fixture
def attempt_cases() -> dict[str, Callable[[], list[dict[str, Any]]]]:
    """The reference agents' trajectory shapes, by scaffold."""
    return CASES


@pytest.fixture
def make_run(tmp_path: Path) -> Callable[..., Path]:
    """Write a run (results file and trajectories) under tmp_path; return the results path."""
    return lambda attempts, **run: write_run(tmp_path, attempts, **run)


@pytest.fixture
def make_trajectory(tmp_path: Path) -> Callable[..., Path]:
    """Write one trajectory file under tmp_path; return its path."""
    return lambda records, name="attempt.jsonl": write_trajectory_file(tmp_path, name, records)
