"""OTLP export setup that needs no collector: endpoints, headers, the missing extra."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_eval.errors import ConfigError, ResultsError
from agent_eval.trace.otel import parse_env_headers, parse_header_items, traces_url
from agent_eval.trace.spans import plan_attempt
from agent_eval.trajectory import Meta, Trajectory, read_trajectory


@pytest.mark.parametrize(
    ("endpoint", "url"),
    [
        ("http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"),
        ("http://127.0.0.1:4318/", "http://127.0.0.1:4318/v1/traces"),
        ("http://127.0.0.1:4318/v1/traces", "http://127.0.0.1:4318/v1/traces"),
        (
            "https://cloud.example/api/public/otel",
            "https://cloud.example/api/public/otel/v1/traces",
        ),
        (
            "https://cloud.example/api/public/otel/v1/traces/",
            "https://cloud.example/api/public/otel/v1/traces",
        ),
        ("http://127.0.0.1:6006/v1/trace", "http://127.0.0.1:6006/v1/trace/v1/traces"),
        (" http://collector:4318 ", "http://collector:4318/v1/traces"),
    ],
)
def test_traces_url_appends_the_traces_path_once(endpoint: str, url: str) -> None:
    assert traces_url(endpoint) == url


@pytest.mark.parametrize("endpoint", ["127.0.0.1:4318", "grpc://127.0.0.1:4317", "http://", ""])
def test_an_endpoint_that_is_not_an_http_url_is_refused(endpoint: str) -> None:
    with pytest.raises(ConfigError, match="use an http:// or https:// URL"):
        traces_url(endpoint)


def test_a_bad_endpoint_message_hides_a_password() -> None:
    with pytest.raises(ConfigError) as caught:
        traces_url("ftp://user:hunter2@host:4318")
    assert "hunter2" not in str(caught.value)


def test_header_items_and_the_standard_variable() -> None:
    assert parse_header_items(["Authorization=Basic cGs6c2s=", "x-team = evals"]) == {
        "Authorization": "Basic cGs6c2s=",
        "x-team": "evals",
    }
    assert parse_env_headers("Authorization=Basic%20cGs6c2s%3D, x-team=evals,") == {
        "Authorization": "Basic cGs6c2s=",
        "x-team": "evals",
    }
    assert parse_env_headers("") == {}


@pytest.mark.parametrize("item", ["Authorization: Basic c2VjcmV0", "=c2VjcmV0", "c2VjcmV0"])
def test_a_malformed_header_is_refused_without_echoing_it(item: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_header_items(["a=b", item])
    assert str(caught.value).startswith("--otlp-header item 2: expected KEY=VALUE")
    assert "c2VjcmV0" not in str(caught.value)


def test_a_torn_trajectory_still_plans_a_root_without_a_verdict() -> None:
    meta: Meta = {"scaffold": "minimal", "run_id": "r", "task_id": "t", "attempt": 1,
                  "started": "2025-01-01T00:00:00Z"}  # fmt: skip
    torn = Trajectory("torn.jsonl", meta, [{"type": "model", "role": "agent", "model": "m",
                                           "seconds": 0.5}])  # fmt: skip
    plan = plan_attempt(torn)
    assert plan.root.events == ()
    assert plan.root.end_ns - plan.root.start_ns == 500_000_000
    assert [c.name for c in plan.children] == ["chat m"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "trajectory t.jsonl: the first line is not a meta line"),
        ('{"type": "model"}\n', r"trajectory t.jsonl:1: the first line is not a meta line"),
        (
            '{"meta": {"started": "yesterday"}}\n',
            "trajectory t.jsonl: meta.started 'yesterday' is not an ISO-8601",
        ),
    ],
)
def test_a_trajectory_without_a_usable_meta_line_is_named(
    tmp_path: Path, text: str, problem: str
) -> None:
    (tmp_path / "t.jsonl").write_text(text, encoding="utf-8")
    with pytest.raises(ResultsError, match=problem):
        plan_attempt(read_trajectory(tmp_path / "t.jsonl"))


def test_without_the_extra_the_cli_says_how_to_install_it(
    tmp_path: Path, make_run: Callable[..., Path]
) -> None:
    shim = tmp_path / "shim" / "opentelemetry"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text('raise ImportError("opentelemetry is hidden here")\n')
    results = make_run([])
    env = {**os.environ, "PYTHONPATH": str(shim.parent)}
    done = subprocess.run(
        [sys.executable, "-m", "agent_eval", "export-otel", str(results),
         "--otlp-endpoint", "http://127.0.0.1:4318"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "Error: OTLP export needs the otel extra, which is not installed "
        "(opentelemetry is hidden here): pip install -e '.[otel]' in the agent-eval clone\n"
    )
