"""Record a sampled run on the embedded model, stop it, replay: the same verdicts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "llama_cpp", reason="the local extra is not installed: pip install -e '.[local]'"
)

from agent_eval.workflows.demo import model_server


def run(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_eval", "run", "--agent", "builtin:minimal",
         "--task-id", "r-gateway-port", "--repeats", "2", "--seed", "26",
         "--option", "tool_mode=json", "--option", "reply_tokens=32",
         "--option", "temperature=0.8", *extra],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def records(tmp_path: Path, row: dict[str, Any]) -> list[dict[str, Any]]:
    lines = (tmp_path / row["trajectory_file"]).read_text().splitlines()[1:]
    drop = {"seconds", "started", "run_id"}
    return [{k: v for k, v in json.loads(line).items() if k not in drop} for line in lines]


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_sampled_run_on_the_embedded_model_replays_with_it_stopped(tmp_path: Path) -> None:
    # `agent-eval serve-model` in its own process, as the demo runs it
    with model_server(1, tmp_path / "serve-model.log") as (base_url, _):
        done = run(tmp_path, "--base-url", base_url, "--model", "local/answer", "--record",
                   "--out", "rec.json")  # fmt: skip
    assert done.returncode in (0, 2), done.stderr
    answered = json.loads((tmp_path / "rec.json").read_text())["results"]
    assert any(r["failure_class"] != "infra_error" for r in answered), (
        "the embedded model never answered; see serve-model.log"
    )
    done = run(tmp_path, "--replay", "rec.json", "--out", "rep.json")
    assert done.returncode in (0, 2), done.stderr
    recorded, replayed = (json.loads((tmp_path / n).read_text())["results"]
                          for n in ("rec.json", "rep.json"))  # fmt: skip
    keys = ("id", "attempt", "answer", "steps", "tokens", "stopped", "failure_class", "checks")
    assert [{k: r[k] for k in keys} for r in replayed] == [
        {k: r[k] for k in keys} for r in recorded
    ]
    assert all(r["failure_class"] != "replay_mismatch" for r in replayed)
    for before, after in zip(recorded, replayed, strict=True):
        assert records(tmp_path, after) == records(tmp_path, before)
