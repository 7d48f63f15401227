"""Replays end to end, black-box: real runs of both reference agents, and `export-otel`.

The runs use `agent-eval run` against the scripted model server on port 0; the trace store
is the test's OTLP receiver, and each trace must follow its trajectory.
"""

from __future__ import annotations

import json
import os
import socket
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

from agent_eval.models.mock_script import load_script
from agent_eval.models.mock_server import MockModelServer
from agent_eval.trace.otel import OtlpExporter
from agent_eval.trajectory import read_trajectory

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
Records = list[dict[str, Any]]
TASK = "r-backup-window"
"""A shipped task the example script answers with one tool call and one reply."""


@pytest.fixture
def scripted_model() -> Iterator[MockModelServer]:
    """The scripted chat server, answering from the shipped example script."""
    server = MockModelServer(load_script(EXAMPLES / "mock-replies.json")).start()
    yield server
    server.stop()


def _run(agent: str, base_url: str, folder: Path) -> Path:
    out = folder / f"{agent}.json"
    done = subprocess.run(
        [sys.executable, "-m", "agent_eval", "run", "--agent", f"builtin:{agent}",
         "--base-url", base_url, "--model", "mock", "--task-id", TASK,
         "--out", str(out), "--trajectory-dir", str(folder / agent)],
        capture_output=True, text=True, cwd=folder, env=dict(os.environ), timeout=120,
    )  # fmt: skip
    assert done.returncode in (0, 2), done.stderr  # 2: ran, but an attempt failed its checks
    return out


@pytest.mark.parametrize("agent", ["minimal", "multi-agent"])
def test_a_real_run_replays_as_traces_that_follow_its_trajectories(
    receiver: Any,
    scripted_model: MockModelServer,
    tmp_path: Path,
    agent: str,
    trace_follows: Callable[..., None],
) -> None:
    results = _run(agent, scripted_model.base_url, tmp_path)
    rows = json.loads(results.read_text())["results"]
    with OtlpExporter(receiver.url) as exporter:
        summary = exporter.export_results(results)
    assert (summary.sent, summary.failed, summary.problems) == (len(rows), 0, ())
    for row, request in zip(rows, receiver.requests, strict=True):
        records = read_trajectory(results.parent / row["trajectory_file"]).lines
        spans = request.spans
        trace_follows(records, spans)
        kinds = [r["type"] for r in records[1:-1]]
        branches = [s.name for s in spans if s.parent and s.name.startswith("invoke_agent ")]
        assert len(spans) == 1 + len(branches) + sum(k in ("model", "tool", "route") for k in kinds)
        if agent == "multi-agent":
            assert "route" in kinds
            assert branches[:1] == ["invoke_agent router"]  # each role a branch of its own
        else:
            assert branches == []


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_eval", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=60,
    )


def test_export_otel_command_replays_a_run_with_flag_and_env_headers(
    receiver: Any,
    attempt_cases: dict[str, Callable[[], Records]],
    make_run: Callable[..., Path],
    trace_follows: Callable[..., None],
) -> None:
    attempts = [attempt_cases["minimal"](1), attempt_cases["minimal"](2)]
    results = make_run(attempts)
    done = _cli(
        "export-otel",
        str(results),
        "--otlp-endpoint",
        receiver.url,
        "--otlp-header",
        "x-team=evals",
        OTEL_EXPORTER_OTLP_HEADERS="Authorization=Basic%20cGs6c2s%3D",
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == f"2 of 2 attempts sent to {receiver.url}/v1/traces\n"
    for request, records in zip(receiver.requests, attempts, strict=True):
        assert request.headers["authorization"] == "Basic cGs6c2s="
        assert request.headers["x-team"] == "evals"
        trace_follows(records, request.spans)


def test_export_otel_command_fails_when_the_endpoint_is_down(
    attempt_cases: dict[str, Callable[[], Records]],
    make_run: Callable[..., Path],
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    results = make_run([attempt_cases["minimal"](1), attempt_cases["minimal"](2)])
    done = _cli("export-otel", str(results), "--otlp-endpoint", url)
    assert done.returncode == 1
    assert done.stdout == f"0 of 2 attempts sent to {url}/v1/traces\n"
    assert done.stderr == (
        f"Error: 2 of 2 attempts not sent: OTLP endpoint {url}/v1/traces did not take the "
        "trace of attempt a1b2c3d4e5f6:r-gateway-port:r1 (cannot connect: Connection refused); "
        "`agent-eval export-otel RESULTS` can send the missed traces later\n"
    )


@pytest.mark.parametrize("executor", ["local", "ray"])
def test_run_sends_each_attempt_as_it_finishes(
    receiver: Any,
    scripted_model: MockModelServer,
    tmp_path: Path,
    trace_follows: Callable[..., None],
    executor: str,
) -> None:
    # On Ray (a local instance the run starts) the driver still sends every trace and
    # writes the labbook, from the attempts the cluster streams back.
    done = subprocess.run(
        [sys.executable, "-m", "agent_eval", "run", "--agent", "builtin:minimal",
         "--base-url", scripted_model.base_url, "--model", "mock", "--task-id", TASK,
         "--repeats", "2", "--out", "r.json", "--otlp-endpoint", receiver.url,
         "--labbook", "lb.jsonl", "--executor", executor],
        capture_output=True, text=True, cwd=tmp_path, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    document = json.loads((tmp_path / "r.json").read_text())
    assert len(receiver.requests) == 2
    for row, request in zip(document["results"], receiver.requests, strict=True):
        trace_follows(read_trajectory(tmp_path / row["trajectory_file"]).lines, request.spans)
    (line,) = (tmp_path / "lb.jsonl").read_text().splitlines()
    entry = json.loads(line)
    assert (entry["run_id"], entry["summary"]["passed"]) == (document["run"]["run_id"], 2)


def test_run_goes_on_when_the_trace_endpoint_is_down(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    done = subprocess.run(
        [sys.executable, "-m", "agent_eval", "run", "--agent", "builtin:cannot-find",
         "--task-id", "x-refusal", "--repeats", "3", "--out", "r.json", "--otlp-endpoint", dead],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("Warning:") == 1
    assert json.loads((tmp_path / "r.json").read_text())["run"]["summary"]["passed"] == 3
