"""`run --replay` takes the recorded run's settings that decide its calls as defaults."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_eval.models.mock_server import MockModelServer
from agent_eval.replay import recorded_settings
from agent_eval.run.runner import execute, prepare
from agent_eval.run.settings import Prices, RunConfig

SEARCH = {"tool_calls": [{"name": "search_documents", "arguments": {"query": "gateway port"}}]}
ANSWER = {"content": "The model gateway listens on port 4000."}
SCRIPT: dict[str, Any] = {"replies": [SEARCH, ANSWER]}
TASKS = ("r-gateway-port", "r-backup-window", "t-list-workspace")
SUITE_NOTE = (
    "suite: the shipped part26 (Part 26 agent task suite 1.0.0, 15 task(s)), the recorded "
    "run's (rec.json)"
)


def record(folder: Path, server: MockModelServer, **extra: Any) -> Path:
    """Record a run of the minimal agent in ``folder``; its results file."""
    settings: dict[str, Any] = {
        "agent": "builtin:minimal", "tasks": "part26", "task_ids": TASKS, "model": "mock",
        "base_url": server.base_url, "out": folder / "rec.json",
        "trajectory_dir": folder / "traj", "retry_backoff": 0.01, "repeats": 2,
        "record": True, "options": {"tool_mode": "native"}, **extra,
    }  # fmt: skip
    execute(prepare(RunConfig(**settings)))
    return folder / "rec.json"


def rows(results: Path) -> list[dict[str, Any]]:
    """What a replay gives back equal: each row's verdict, retries and trajectory meta."""
    kept = []
    for row in json.loads(results.read_text())["results"]:
        meta = json.loads((results.parent / row["trajectory_file"]).read_text().split("\n")[0])
        kept.append({
            **{k: row[k] for k in ("id", "attempt", "failure_class", "infra_retries", "stopped",
                                   "answer", "steps", "tokens", "checks")},
            "router_model": meta["meta"]["router_model"],
            "error": row["error"] and row["error"].split("(HTTP")[-1],  # not the proxy's port
        })  # fmt: skip
    return kept


def test_a_replay_retries_as_often_as_the_recorded_run_and_keeps_its_router_model(
    student: Path,
    mock_model: Callable[..., MockModelServer],
    agent_eval: Callable[..., Any],
) -> None:
    server = mock_model(SCRIPT, fault_rate=0.4, faults=("503", "malformed", "no_choices"), seed=2)
    results = record(student, server, max_infra_retries=1)
    server.stop()
    recorded = rows(results)
    classes = [(r["failure_class"], r["infra_retries"]) for r in recorded]
    assert ("infra_error", 1) in classes and ("passed", 1) in classes  # what the seed draws
    assert {r["router_model"] for r in recorded} == {None}
    # from a course folder, whose ./agent-tasks.json is not what a replay runs
    done = agent_eval("run", "--agent", "builtin:minimal", "--replay", "rec.json", "--out",
                      "rep.json", cwd=student)  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert rows(student / "rep.json") == recorded
    assert json.loads((student / "rep.json").read_text())["run"]["limits"][
        "max_infra_retries"] == 1  # fmt: skip
    assert SUITE_NOTE in done.stderr.splitlines()
    assert "  at " not in done.stdout + done.stderr  # no agent crashed on a refused call
    # a flag still wins: a try the recorded run never made has no recording
    done = agent_eval("run", "--agent", "builtin:minimal", "--replay", "rec.json", "--out",
                      "more.json", "--max-infra-retries", "2", cwd=student)  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    more = json.loads((student / "more.json").read_text())["results"]
    retried = [(r["failure_class"], r["infra_retries"]) for r in more if r["infra_retries"]]
    assert ("replay_mismatch", 2) in retried
    assert any("try 3 has no recording" in (r["error"] or "") for r in more)


def test_the_recorded_limits_prices_and_router_model_are_the_defaults(
    tmp_path: Path, mock_model: Callable[..., MockModelServer]
) -> None:
    server = mock_model(SCRIPT)
    results = record(tmp_path, server, task_ids=TASKS[:1], repeats=1, seed=3,
                     max_infra_retries=0, timeout_per_task=30.0, max_cost_per_task=5.0,
                     prices=Prices(per_million=2.0))  # fmt: skip
    assert recorded_settings(results, ()) == {
        "model": "mock", "router_model": None, "repeats": 1, "seed": 3,
        "base_url": server.base_url, "max_infra_retries": 0, "timeout_per_task": 30.0,
        "max_cost_per_task": 5.0, "cost_per_million": 2.0,
    }  # fmt: skip
    # what the user gives is left to them; a price given takes none of the recorded ones
    given = {"router_model", "max_infra_retries", "input_cost_per_million"}
    assert recorded_settings(results, given) == {
        "model": "mock", "repeats": 1, "seed": 3, "base_url": server.base_url,
        "timeout_per_task": 30.0, "max_cost_per_task": 5.0,
    }  # fmt: skip
    # a router model that was given is the replay's too
    routed = record(tmp_path / "routed", server, task_ids=TASKS[:1], repeats=1,
                    router_model="mock-router")  # fmt: skip
    assert recorded_settings(routed, ())["router_model"] == "mock-router"
