"""Traces and annotations in a real Arize Phoenix server, started by the test.

Phoenix's gRPC receiver listens on every interface whatever it is told, so the server and
this test's client side run together in a network namespace of their own (``unshare
--net`` with only loopback up): the outer test re-runs this file inside one, where the
server is reachable on 127.0.0.1 and from nowhere else.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("phoenix.client", reason="the phoenix extra is not installed: "
                    "pip install -e '.[dev,otel,phoenix]'")  # fmt: skip
pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="needs the otel extra")

import httpx
from phoenix.client import Client

from agent_eval.models.mock_script import load_script
from agent_eval.models.mock_server import MockModelServer
from agent_eval.trajectory import read_trajectory

INSIDE = "AGENT_EVAL_PHOENIX_NETNS"
"""Set in the namespace: the tests below run only there."""
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TASK = "r-backup-window"
KINDS = {"AGENT", "LLM", "TOOL", "CHAIN"}


def _namespace_problem() -> str | None:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "unshare or ip is not installed"
    probe = subprocess.run(["unshare", "--net", "ip", "link", "set", "lo", "up"],
                           capture_output=True, text=True)  # fmt: skip
    return None if probe.returncode == 0 else f"unshare --net is not allowed: {probe.stderr}"


@pytest.mark.timeout(600)
def test_phoenix_checks_pass_in_a_network_namespace_of_their_own(tmp_path: Path) -> None:
    if os.environ.get(INSIDE):
        pytest.skip("already inside the namespace")
    problem = _namespace_problem()
    if problem:
        pytest.skip(f"Phoenix would listen on every interface and {problem}")
    script = (f"ip link set lo up && exec {sys.executable} -m pytest -o addopts= -q "
              f"-p no:cacheprovider {__file__} -k 'not namespace_of_their_own' "
              f"--basetemp {tmp_path / 'inner'}")  # fmt: skip
    done = subprocess.run(["unshare", "--net", "sh", "-c", script], capture_output=True,
                          text=True, env={**os.environ, INSIDE: "1"}, timeout=580)  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout and "skipped" not in done.stdout, done.stdout[-2000:]


inside = pytest.mark.skipif(not os.environ.get(INSIDE), reason="runs in its own namespace")


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Phoenix server on 127.0.0.1 with its working directory under tmp."""
    folder = tmp_path_factory.mktemp("phoenix")
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(folder), "PHOENIX_HOST": "127.0.0.1",
           "PHOENIX_PORT": "16006", "PHOENIX_GRPC_PORT": "14317"}  # fmt: skip
    log = (folder / "serve.log").open("w")
    server = subprocess.Popen([sys.executable, "-m", "phoenix.server.main", "serve"],
                              cwd=folder, env=env, stdout=log, stderr=log)  # fmt: skip
    url = "http://127.0.0.1:16006"
    try:
        for _ in range(240):
            try:
                if httpx.get(f"{url}/healthz", timeout=1).is_success:
                    break
            except httpx.HTTPError:
                pass
            assert server.poll() is None, (folder / "serve.log").read_text()[-2000:]
            time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """A real run of each reference agent against the scripted model server."""
    folder = tmp_path_factory.mktemp("runs")
    model = MockModelServer(load_script(EXAMPLES / "mock-replies.json")).start()
    try:
        out = {}
        for agent in ("minimal", "multi-agent"):
            out[agent] = folder / f"{agent}.json"
            done = _cli("run", "--agent", f"builtin:{agent}", "--base-url", model.base_url,
                        "--model", "mock", "--task-id", TASK, "--repeats", "2",
                        "--out", str(out[agent]), cwd=folder)  # fmt: skip
            assert done.returncode in (0, 2), done.stderr
        yield out
    finally:
        model.stop()


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent_eval", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=180)  # fmt: skip


def _spans(client: Client, want: int) -> list[Any]:
    """Every span in the default project, once Phoenix has stored ``want`` of them."""
    spans: list[Any] = []
    for _ in range(60):
        spans = client.spans.get_spans(project_identifier="default", limit=10_000)
        if len(spans) >= want:
            break
        time.sleep(0.5)
    return spans


@inside
@pytest.mark.timeout(500)
def test_traces_roles_kinds_content_and_annotations_in_phoenix(
    phoenix: str, runs: dict[str, Path]
) -> None:
    minimal = _cli("export-otel", str(runs["minimal"]), "--otlp-endpoint", phoenix,
                   "--otlp-content", "--phoenix-annotations", phoenix)  # fmt: skip
    assert minimal.returncode == 0, minimal.stderr
    multi = _cli("export-otel", str(runs["multi-agent"]), "--otlp-endpoint", phoenix,
                 "--phoenix-annotations", phoenix)  # fmt: skip
    assert multi.returncode == 0, multi.stderr
    assert minimal.stdout.splitlines()[0] == f"2 of 2 attempts sent to {phoenix}/v1/traces"
    client = Client(base_url=phoenix)
    expected = {agent: _expected_spans(path) for agent, path in runs.items()}
    spans = _spans(client, sum(len(names) for names in expected.values()))
    assert len({s["context"]["trace_id"] for s in spans}) == 4  # two attempts of each agent
    names = [name for each in expected.values() for name in each]
    assert sorted(s["name"] for s in spans) == sorted(names)
    assert {s["span_kind"] for s in spans} <= KINDS  # no span of unknown kind
    roots = [s for s in spans if s["parent_id"] is None]
    assert len(roots) == 4 and all(s["span_kind"] == "AGENT" for s in roots)
    by_trace: dict[str, list[Any]] = {}
    for span in spans:
        by_trace.setdefault(span["context"]["trace_id"], []).append(span)
    for root in roots:
        family = by_trace[root["context"]["trace_id"]]
        chats = [s for s in family if s["span_kind"] == "LLM"]
        content = root["name"] == "invoke_agent minimal"
        # the minimal run went with content, the multi-agent run without
        assert all(("llm.input_messages.0.message.content" in s["attributes"]) == content
                   for s in chats)  # fmt: skip
        assert all(("llm.output_messages.0.message.role" in s["attributes"]) == content
                   for s in chats)  # fmt: skip
        assert ("input.value" in root["attributes"]) == content
        assert all(("input.value" in s["attributes"]) == content for s in chats)
        if content:
            assert "Task:" in chats[0]["attributes"]["llm.input_messages.1.message.content"]
            continue
        branches = [s for s in family if s["parent_id"] == root["context"]["span_id"]
                    and s["span_kind"] == "AGENT"]  # fmt: skip
        assert [b["name"] for b in sorted(branches, key=lambda b: b["start_time"])][:1] == [
            "invoke_agent router"
        ]
        for branch in branches:
            held = [s for s in chats if s["parent_id"] == branch["context"]["span_id"]]
            assert held and branch["attributes"]["llm.token_count.total"] == sum(
                s["attributes"]["llm.token_count.total"] for s in held)  # fmt: skip
        route = next(s for s in family if s["name"] == "route")
        assert route["span_kind"] == "CHAIN"
    again = _cli("export-otel", str(runs["minimal"]), "--otlp-endpoint", phoenix,
                 "--otlp-content", "--phoenix-annotations", phoenix)  # fmt: skip
    assert again.returncode == 0, again.stderr
    sent = int(again.stdout.splitlines()[1].split()[0])
    notes = client.spans.get_span_annotations(spans=roots, project_identifier="default")
    assert len(notes) == 2 * sent  # two runs' attempts, each annotated once despite two sends
    verdicts = [n for n in notes if n["name"] == "verdict"]
    assert len(verdicts) == 4
    assert {(n["result"]["label"], n["result"]["score"]) for n in verdicts} <= {
        ("passed", 1.0), ("wrong_answer", 0.0), ("agent_error", 0.0)}  # fmt: skip
    assert len(_spans(client, 0)) == len(spans)  # the re-sent traces duplicated nothing
    _screenshot(phoenix, roots[0]["context"]["trace_id"])


def _expected_spans(results: Path) -> list[str]:
    """The span names each attempt of a run should give: root, role branches, steps."""
    names = []
    for row in json.loads(results.read_text())["results"]:
        records = read_trajectory(results.parent / row["trajectory_file"]).lines
        names.append(f"invoke_agent {records[0]['meta']['scaffold']}")
        steps = [r for r in records[1:] if r.get("type") in ("model", "tool", "route")]
        roles = [r.get("role") for r in steps if r["type"] == "model"]
        several = len(set(roles)) > 1
        last = None
        for record in steps:
            if record["type"] == "model":
                if several and record["role"] != last:
                    names.append(f"invoke_agent {record['role']}")
                last = record["role"]
                names.append(f"chat {record['model']}")
            elif record["type"] == "tool":
                names.append(f"execute_tool {record['tool']}")
            else:
                names.append("route")
                last = None  # a route ends the stretch of the role before it
    return names


def _screenshot(phoenix: str, trace_id: str) -> None:
    """A picture of one trace in Phoenix's UI, where a headless chromium is installed."""
    target = os.environ.get("AGENT_EVAL_PHOENIX_SCREENSHOT")
    chromium = shutil.which("chromium")
    if not target or chromium is None:
        return
    project = Client(base_url=phoenix).projects.get(project_name="default")["id"]
    url = f"{phoenix}/projects/{project}/traces/{trace_id}"
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                    "--window-size=1600,1000", "--virtual-time-budget=15000",
                    f"--screenshot={target}", url], capture_output=True, timeout=120)  # fmt: skip
