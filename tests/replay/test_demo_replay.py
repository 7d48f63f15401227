"""`agent-eval demo --replay`: the demo's recorded runs again without the model."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from agent_eval.cli.demo import DemoLines
from agent_eval.errors import ConfigError
from agent_eval.models.mock_server import MockModelServer
from agent_eval.workflows.demo import DemoPlan, _run_agent, run_demo

INFO = {"model_file": "scripted", "quant": "none", "engine": "mock-model",
        "engine_binding": "agent-eval", "engine_version": "1"}  # fmt: skip
SCRIPT = {
    "rules": [{"model": "router", "reply": {"json": {"route": "researcher", "reason": "facts"}}}],
    "replies": [
        {"tool_calls": [{"name": "search_documents", "arguments": {"query": "gateway port"}}]},
        {"content": "The model gateway listens on port 4000."},
    ],
}


def verdicts(path: Path) -> list[tuple[object, ...]]:
    rows = json.loads(path.read_text())["results"]
    return [(r["id"], r["attempt"], r["answer"], r["steps"], r["tokens"], r["failure_class"])
            for r in rows]  # fmt: skip


def test_the_demos_runs_replay_with_the_model_stopped(
    tmp_path: Path, mock_model: Callable[..., MockModelServer]
) -> None:
    server = mock_model(SCRIPT)
    plan = DemoPlan(
        tmp_path / "demo-out", repeats=2, task_ids=("r-gateway-port", "r-backup-window")
    )
    printed: list[str] = []
    recorded = [_run_agent(agent, plan, server.base_url, INFO, DemoLines())
                for agent in plan.agents]  # fmt: skip
    server.stop()
    replayed = run_demo(printed.append, DemoLines(), replace(plan, replay=True))
    assert replayed == [plan.out_dir / "replay" / path.name for path in recorded]
    for path in recorded:
        again = plan.out_dir / "replay" / path.name
        assert verdicts(again) == verdicts(path)
        assert json.loads(again.read_text())["run"]["replayed_from"] == str(path)
    text = "\n".join(printed)
    assert "replaying the demo's recorded runs" in text
    assert f"Replayed results and trajectories: {plan.out_dir / 'replay'}/" in text


def test_demo_replay_without_a_recorded_demo_is_a_clear_error(tmp_path: Path) -> None:
    plan = DemoPlan(tmp_path / "nothing", replay=True)
    with pytest.raises(ConfigError, match=r"results-retrieve-read\.json is missing; run"):
        run_demo(lambda line: None, DemoLines(), plan)
