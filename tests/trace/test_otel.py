"""OTLP export against a real OTLP/HTTP receiver: span tree, attributes, times, failures."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "opentelemetry.exporter.otlp.proto.http",
    reason="the otel extra is not installed: pip install -e '.[dev,otel]'",
)

from agent_eval.trace.otel import OtlpExporter

Records = list[dict[str, Any]]
CONTENT_KEYS = {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.result"}


def export(receiver: Any, path: Path, **options: Any) -> tuple[bool, list[str]]:
    """Export one trajectory with a fresh exporter; the result and the warnings issued."""
    warnings: list[str] = []
    with OtlpExporter(receiver.url, warn=warnings.append, **options) as exporter:
        accepted = exporter.export_trajectory(path)
    return accepted, warnings


@pytest.mark.parametrize("scaffold", ["minimal", "multi-agent"])
def test_each_reference_agent_attempt_becomes_one_trace(
    receiver: Any,
    attempt_cases: dict[str, Callable[[], Records]],
    make_trajectory: Callable[..., Path],
    scaffold: str,
    trace_follows: Callable[..., None],
) -> None:
    records = attempt_cases[scaffold]()
    assert export(receiver, make_trajectory(records)) == (True, [])
    (request,) = receiver.requests
    assert request.path == "/v1/traces"
    assert request.headers["content-type"] == "application/x-protobuf"
    trace_follows(records, request.spans)


def test_minimal_attempt_times_and_attributes_exactly(
    receiver: Any,
    attempt_cases: dict[str, Callable[[], Records]],
    make_trajectory: Callable[..., Path],
) -> None:
    export(receiver, make_trajectory(attempt_cases["minimal"]()))
    got = receiver.requests[0].spans
    assert [s.name for s in got] == [
        "chat local/chat",
        "execute_tool search",
        "execute_tool read_file",
        "chat local/chat",
        "invoke_agent minimal",
    ]
    spans = {s.name: s for s in got}
    first_chat = got[0]
    start = 1741064767_250000000  # 2025-03-04T05:06:07.25Z
    root, search, failed = (
        spans["invoke_agent minimal"],
        spans["execute_tool search"],
        spans["execute_tool read_file"],
    )
    assert (root.start, root.end) == (start, start + 1_500_000_000)
    assert (search.start, search.end) == (start + 750_000_000, start + 800_000_000)
    assert failed.attributes["error.type"] == "tool_error"
    assert failed.status == "error"
    assert root.status == "ok"
    assert root.attributes["gen_ai.conversation.id"] == "a1b2c3d4e5f6:r-gateway-port:r1"
    assert root.attributes["agent_eval.stop.reason"] == "finished"
    assert root.attributes["gen_ai.request.model"] == "local/chat"
    assert first_chat.attributes["agent_eval.tool_calls"] == ["search"]
    assert first_chat.attributes["gen_ai.provider.name"] == "openai_compatible"
    assert "agent_eval.tool_calls" not in got[3].attributes
    assert root.events[0][2] == {
        "gen_ai.evaluation.name": "verdict",
        "gen_ai.evaluation.score.value": 1.0,
        "gen_ai.evaluation.score.label": "passed",
    }


def test_wrong_answer_is_a_zero_score_not_an_error(
    receiver: Any,
    attempt_cases: dict[str, Callable[[], Records]],
    make_trajectory: Callable[..., Path],
) -> None:
    export(receiver, make_trajectory(attempt_cases["multi-agent"]()))
    spans = receiver.requests[0].spans
    root = next(s for s in spans if not s.parent)
    assert root.status == "ok"
    assert root.events[0][2] == {
        "gen_ai.evaluation.name": "verdict",
        "gen_ai.evaluation.score.value": 0.0,
        "gen_ai.evaluation.score.label": "wrong_answer",
        "gen_ai.evaluation.explanation": "failed checks: missing",
    }
    # the expected answer the check quotes never leaves the harness
    assert "8443" not in json.dumps([s.attributes for s in spans] + [root.events[0][2]])
    roles = [s.attributes["agent_eval.role"] for s in spans if s.kind == "client"]
    assert roles == ["router", "researcher", "answerer", "verifier"]


@pytest.mark.parametrize(
    ("failure", "stop", "error", "message"),
    [
        ("agent_error", "agent_error", None, "agent_error: KeyError: 'x'"),
        ("infra_error", "model_error", "model_error: timeout", "infra_error: model_error: timeout"),
    ],
)
def test_an_error_marks_the_root_span_with_its_reason(
    receiver: Any,
    make_trajectory: Callable[..., Path],
    attempt_cases: dict[str, Callable[[], Records]],
    failure: str,
    stop: str,
    error: str | None,
    message: str,
) -> None:
    records = attempt_cases["minimal"]()[:2]
    records += [
        {"type": "stop", "reason": stop, "detail": "KeyError: 'x'"},
        {"type": "score", "passed": False, "failure_class": failure, "checks": {},
         "seconds": 0.9, "error": error},
    ]  # fmt: skip
    export(receiver, make_trajectory(records))
    root = next(s for s in receiver.requests[0].spans if not s.parent)
    assert (root.status, root.message) == ("error", message)
    assert root.attributes["error.type"] == failure
    assert root.attributes["agent_eval.stop.reason"] == stop


def test_recorded_offsets_place_spans_when_present(
    receiver: Any,
    attempt_cases: dict[str, Callable[[], Records]],
    make_trajectory: Callable[..., Path],
    trace_follows: Callable[..., None],
) -> None:
    records = attempt_cases["minimal"]()
    for record, t in zip(records[1:5], (0.1, 1.0, 1.2, 1.3), strict=True):
        record["t"] = t
    export(receiver, make_trajectory(records))
    trace_follows(records, receiver.requests[0].spans)


def test_content_is_sent_only_on_request(
    receiver: Any,
    attempt_cases: dict[str, Callable[[], Records]],
    make_trajectory: Callable[..., Path],
    trace_follows: Callable[..., None],
) -> None:
    path = make_trajectory(attempt_cases["minimal"]())
    export(receiver, path)
    export(receiver, path, content=True)
    without, with_content = (r.spans for r in receiver.requests)
    assert not any(CONTENT_KEYS & s.attributes.keys() for s in without)
    named = {s.name: s.attributes for s in with_content}
    messages = json.loads(named["invoke_agent minimal"]["gen_ai.input.messages"])
    assert messages[0]["parts"][0]["content"] == "Which port does the gateway use?"
    chats = [s for s in with_content if s.kind == "client"]
    final = json.loads(chats[-1].attributes["gen_ai.output.messages"])
    assert final[0]["parts"][0]["content"] == "The gateway listens on port 8443."
    result = json.loads(named["execute_tool search"]["gen_ai.tool.call.result"])
    assert result == "config/gateway.yaml: port: 8443"
    trace_follows(attempt_cases["minimal"](), with_content, content=True)


def test_replay_of_a_results_file_sends_every_attempt_with_headers(
    receiver: Any,
    attempt_cases: dict[str, Callable[[], Records]],
    make_run: Callable[..., Path],
    trace_follows: Callable[..., None],
) -> None:
    attempts = [
        attempt_cases["minimal"](1),
        attempt_cases["minimal"](2),
        attempt_cases["multi-agent"](),
    ]
    secret = "sk-live-do-not-send"
    results = make_run(
        attempts,
        engine="llama.cpp",
        options={"api_key": secret},
        base_url=f"http://user:{secret}@127.0.0.1:1/v1",
    )
    headers = {"Authorization": "Basic cGs6c2s="}
    with OtlpExporter(receiver.url, headers) as exporter:
        summary = exporter.export_results(results)
    assert (summary.attempts, summary.sent, summary.failed, summary.problems) == (3, 3, 0, ())
    assert [r.headers["authorization"] for r in receiver.requests] == ["Basic cGs6c2s="] * 3
    traces = [r.spans for r in receiver.requests]
    for records, spans in zip(attempts, traces, strict=True):
        trace_follows(records, spans)
        assert secret not in repr(spans)
    providers = {s.attributes.get("gen_ai.provider.name") for s in traces[0]} - {None}
    assert providers == {"llama.cpp"}
    assert len({spans[0].trace_id for spans in traces}) == 3


def test_replaying_twice_sends_the_same_ids(
    receiver: Any,
    attempt_cases: dict[str, Callable[[], Records]],
    make_trajectory: Callable[..., Path],
) -> None:
    path = make_trajectory(attempt_cases["multi-agent"]())
    export(receiver, path)
    export(receiver, path)
    first, second = (r.spans for r in receiver.requests)
    assert [(s.trace_id, s.span_id) for s in first] == [(s.trace_id, s.span_id) for s in second]
    assert len({s.span_id for s in first}) == len(first)


def test_replay_names_missing_and_unreadable_trajectories(
    receiver: Any,
    attempt_cases: dict[str, Callable[[], Records]],
    make_run: Callable[..., Path],
) -> None:
    results = make_run(
        [attempt_cases["minimal"](1), attempt_cases["minimal"](2), attempt_cases["minimal"](3)]
    )
    document = json.loads(results.read_text())
    (results.parent / document["results"][1]["trajectory_file"]).unlink()
    (results.parent / document["results"][2]["trajectory_file"]).write_text("not json\n")
    with OtlpExporter(receiver.url) as exporter:
        summary = exporter.export_results(results)
    assert (summary.sent, summary.failed) == (1, 0)
    missing, damaged = summary.problems
    assert missing == (
        "r-gateway-port r2: trajectory file trajectories/02-minimal-r-gateway-port-r2.jsonl "
        "not found"
    )
    assert damaged.startswith(
        "r-gateway-port r3: trajectory 03-minimal-r-gateway-port-r3.jsonl:1: not JSON "
        "(Expecting value at column 1) (the file is damaged"
    )


def test_a_receiver_that_answers_503_then_recovers(
    receiver: Any,
    attempt_cases: dict[str, Callable[[], Records]],
    make_trajectory: Callable[..., Path],
    trace_follows: Callable[..., None],
) -> None:
    receiver.script = [503, 503]
    records = attempt_cases["minimal"]()
    assert export(receiver, make_trajectory(records)) == (True, [])
    assert len(receiver.requests) == 3
    trace_follows(records, receiver.requests[-1].spans)


def test_a_failing_receiver_warns_once_and_later_attempts_go_through_after_cooldown(
    receiver: Any,
    attempt_cases: dict[str, Callable[[], Records]],
    make_trajectory: Callable[..., Path],
) -> None:
    receiver.script = [503] * 6  # every retry the exporter allows
    path = make_trajectory(attempt_cases["minimal"]())
    warnings: list[str] = []
    with OtlpExporter(receiver.url, warn=warnings.append, cooldown=0.0) as exporter:
        assert exporter.export_trajectory(path) is False
        assert exporter.export_trajectory(path) is True
        assert (exporter.sent, exporter.failed) == (1, 1)
    assert warnings == [
        f"OTLP endpoint {receiver.url}/v1/traces did not take the trace of attempt "
        "a1b2c3d4e5f6:r-gateway-port:r1 (Service Unavailable); "
        "`agent-eval export-otel RESULTS` can send the missed traces later"
    ]


def test_an_endpoint_that_is_down_warns_once_and_does_not_hold_up_the_run(
    attempt_cases: dict[str, Callable[[], Records]],
    make_trajectory: Callable[..., Path],
    capfd: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    path = make_trajectory(attempt_cases["minimal"]())
    warnings: list[str] = []
    posts: list[str] = []

    class Collector(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            posts.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with OtlpExporter(f"http://127.0.0.1:{port}", warn=warnings.append, timeout=1.0) as exporter:
        results = [exporter.export_trajectory(path)]
        # A collector comes up on that port: within the cooldown nothing is sent to it,
        # so a down endpoint costs the run one bounded try, not one per attempt.
        with ThreadingHTTPServer(("127.0.0.1", port), Collector) as collector:
            threading.Thread(target=collector.serve_forever, daemon=True).start()
            results += [exporter.export_trajectory(path) for _ in range(4)]
            collector.shutdown()
    assert posts == []
    assert results == [False] * 5
    assert len(warnings) == 1
    assert warnings[0].startswith(f"OTLP endpoint http://127.0.0.1:{port}/v1/traces did not ")
    assert "(cannot connect: Connection refused);" in warnings[0]
    assert capfd.readouterr() == ("", "")  # the exporter's own retry logs stay quiet
