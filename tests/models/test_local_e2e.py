"""A real agent on the real embedded model, end to end: short enough for every CI run."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip(
    "llama_cpp", reason="the local extra is not installed: pip install -e '.[local]'"
)

from agent_eval.models.local_server import LocalModelServer

STOPS = {"finished", "turn_limit", "token_budget", "time_budget", "repeated_call", "reply_cut"}


@pytest.fixture(scope="module")
def local_model() -> Iterator[LocalModelServer]:
    with LocalModelServer(port=0, n_ctx=4096) as server:
        yield server


def test_minimal_agent_on_the_local_model(local_model: LocalModelServer, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agent_eval", "run", "--agent", "builtin:minimal",
         "--task-id", "r-gateway-port", "--base-url", local_model.base_url,
         "--model", "local/answer", "--option", "tool_mode=json",
         "--option", "reply_tokens=48", "--out", "r.json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode in (0, 2), done.stderr  # 2: measured, and the 270M model failed
    (row,) = json.loads((tmp_path / "r.json").read_text())["results"]
    assert row["failure_class"] in ("passed", "wrong_answer", "over_budget"), row["error"]
    records = [json.loads(line) for line in (tmp_path / row["trajectory_file"]).open()]
    models = [r for r in records if r.get("type") == "model"]
    assert models and all(r["model"] == "local/answer" for r in models)
    assert all(r["prompt_tokens"] > 0 and r["completion_tokens"] > 0 for r in models)
    assert row["tokens"] == sum(r["prompt_tokens"] + r["completion_tokens"] for r in models)
    (stop,) = [r for r in records if r.get("type") == "stop"]
    assert stop["reason"] in STOPS
    assert records[-1]["type"] == "score"


@pytest.mark.parametrize("mode", ["json", "native"])
def test_a_reply_cut_by_the_token_limit_is_recorded_not_parsed(
    local_model: LocalModelServer, tmp_path: Path, mode: str
) -> None:
    # Three tokens hold no whole action or tool call, whatever the model samples.
    done = subprocess.run(
        [sys.executable, "-m", "agent_eval", "run", "--agent", "builtin:minimal",
         "--task-id", "r-gateway-port", "--base-url", local_model.base_url,
         "--model", "local/answer", "--option", f"tool_mode={mode}",
         "--option", "reply_tokens=3", "--out", "r.json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    (row,) = json.loads((tmp_path / "r.json").read_text())["results"]
    assert (row["stopped"], row["failure_class"], row["steps"]) == ("reply_cut", "over_budget", 1)
    records = [json.loads(line) for line in (tmp_path / row["trajectory_file"]).open()]
    (stop,) = [r for r in records if r.get("type") == "stop"]
    assert "cut at the 3-token reply limit (finish_reason length)" in stop["detail"]


def test_retrieve_read_on_the_local_model(local_model: LocalModelServer, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agent_eval", "run", "--agent", "builtin:retrieve-read",
         "--task-id", "r-log-retention", "--task-id", "x-refusal", "--repeats", "2",
         "--seed", "1", "--base-url", local_model.base_url, "--model", "local/answer",
         "--option", "temperature=0.7", "--option", "reply_tokens=48", "--out", "r.json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode in (0, 2), done.stderr
    rows = json.loads((tmp_path / "r.json").read_text())["results"]
    assert len(rows) == 4
    for row in rows:
        assert row["failure_class"] in ("passed", "wrong_answer", "over_budget"), row["error"]
        records = [json.loads(line) for line in (tmp_path / row["trajectory_file"]).open()]
        kinds = [r.get("type") for r in records[1:]]
        assert kinds == ["tool", "model", "stop", "score"]
        tool, model, stop = records[1:4]
        assert (tool["tool"], tool["error"]) == ("search_documents", False)
        assert model["prompt_tokens"] > 0 and model["role"] == "reader"
        # The shipped model has no chat template, so the server says so and it is completed.
        assert "prompt style completion (the server reports no chat template)" in stop["detail"]
        assert stop["reason"] in ("finished", "reply_cut") and row["steps"] == 2
        assert row["answer"] == row["answer"].strip()


@pytest.mark.slow
def test_the_demo_measures_every_scaffold(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agent_eval", "demo", "--task-id", "r-gateway-port",
         "--repeats", "2", "--parallel", "1"],
        cwd=tmp_path, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "measuring gemma-3-270m-q4_k_m.gguf (Q4_K_M) on llama.cpp via llama-cpp-python" in (
        done.stdout
    )
    out = tmp_path / "demo-out"
    names = ("minimal", "multi-agent", "retrieve-read")
    assert sorted(p.name for p in out.glob("results-*")) == sorted(
        f"results-{n}.{ext}" for n in names for ext in ("html", "json", "txt")
    )
    assert len((out / "labbook.jsonl").read_text().splitlines()) == 3
    for name in names:
        run = json.loads((out / f"results-{name}.json").read_text())["run"]
        assert (run["quant"], run["engine_version"]) == (
            "Q4_K_M",
            __import__("llama_cpp").__version__,
        )
    lines = done.stdout.splitlines()
    table = lines.index(next(line for line in lines if line.startswith("scaffold ")))
    assert sorted(line.split()[0] for line in lines[table + 1 : table + 4]) == sorted(names)
    assert "cost at 0.5 per million tokens, an example price: replace it with yours" in lines
    assert sum(line.startswith("- ") and " vs " in line for line in lines) == 3
    assert "Unstable tasks (passed in some attempts, failed in others):" in lines
