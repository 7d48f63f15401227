"""Endpoint failures are infrastructure: retried, never a wrong answer, never dropped."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_eval.models.mock_server import MockModelServer
from agent_eval.run.runner import execute, prepare
from agent_eval.run.settings import RunConfig

ANSWER = {"content": "The model gateway listens on port 4000."}


def run(tmp_path: Path, base_url: str, **extra: Any) -> dict[str, Any]:
    config = RunConfig(
        agent="builtin:minimal", tasks="part26", task_ids=("r-gateway-port",),
        base_url=base_url, model="mock", out=tmp_path / "r.json",
        trajectory_dir=tmp_path / "traj", retry_backoff=0.01, **extra,
    )  # fmt: skip
    report = execute(prepare(config))
    return {"summary": report.summary.model_dump(), "rows": report.rows}


def test_an_intermittent_500_is_retried_and_recovers(
    tmp_path: Path, mock_model: Callable[..., MockModelServer]
) -> None:
    server = mock_model({"rules": [{"times": 2, "reply": {"fault": "500"}}], "default": ANSWER})
    got = run(tmp_path, server.base_url)
    (row,) = got["rows"]
    assert (row.passed, row.failure_class, row.infra_retries) == (True, "passed", 2)
    assert [r["fault"] for r in server.requests] == ["500", "500", None]
    summary = got["summary"]
    assert (summary["retried_attempts"], summary["first_try_success_rate"]) == (1, 0.0)
    assert summary["usable_success_rate"] == summary["model_success_rate"] == 1.0
    tries = sorted(p.name.rsplit("-", 1)[-1] for p in (tmp_path / "traj").glob("*.jsonl"))
    assert tries == ["r1.jsonl", "r1.try1.jsonl", "r1.try2.jsonl"]  # nothing is lost
    final = (tmp_path / row.trajectory_file).read_text()  # the row's file is the try that passed
    assert final.splitlines()[-1].startswith('{"type": "score", "passed": true')


def test_a_permanent_503_ends_as_infra_error_not_a_wrong_answer(
    tmp_path: Path, mock_model: Callable[..., MockModelServer]
) -> None:
    server = mock_model({"default": {"fault": "503"}})
    got = run(tmp_path, server.base_url, max_infra_retries=1)
    (row,) = got["rows"]
    assert (row.passed, row.failure_class, row.infra_retries) == (False, "infra_error", 1)
    assert row.error is not None and row.error.startswith("model_error: server")
    assert server.request_count == 2
    summary = got["summary"]
    assert summary["failure_classes"] == {"infra_error": 1}
    assert (summary["usable_success_rate"], summary["model_success_rate"]) == (0.0, None)
    assert summary["model_runs"] == 0


def test_retry_after_is_honoured(
    tmp_path: Path, mock_model: Callable[..., MockModelServer]
) -> None:
    server = mock_model({"rules": [{"times": 1, "reply": {"fault": "429"}}], "default": ANSWER})
    start = time.perf_counter()
    (row,) = run(tmp_path, server.base_url)["rows"]
    assert (row.passed, row.infra_retries) == (True, 1)
    assert time.perf_counter() - start >= 1.0  # the server's Retry-After, not the 0.01 s backoff


def test_a_refused_connection_is_infrastructure(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (row,) = run(tmp_path, f"http://127.0.0.1:{port}/v1", max_infra_retries=0)["rows"]
    assert (row.failure_class, row.infra_retries) == ("infra_error", 0)
    assert row.error is not None and "connection" in row.error
