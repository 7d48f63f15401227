"""--record and --replay on a local Ray instance: each slot group runs its own proxy."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_eval.models.mock_server import MockModelServer
from agent_eval.run.runner import execute, prepare
from agent_eval.run.settings import RunConfig

pytestmark = pytest.mark.usefixtures("ray_local")

SCRIPT = {
    "replies": [
        {"tool_calls": [{"name": "search_documents", "arguments": {"query": "gateway port"}}]},
        {"content": "The model gateway listens on port 4000."},
    ]
}
KEY = "sk-ray-replay-0123456789"


def run(tmp_path: Path, name: str, **fields: Any) -> dict[str, Any]:
    out = tmp_path / name / "r.json"
    config = RunConfig(agent="builtin:minimal", tasks="part26", repeats=2, concurrency=2,
                       task_ids=("r-gateway-port", "r-backup-window"), model="mock",
                       executor="ray", api_key=KEY, out=out, trajectory_dir=out.parent / "traj",
                       options={"tool_mode": "native"},  # no /v1/models advice asked
                       **fields)  # fmt: skip
    execute(prepare(config))
    return json.loads(out.read_text())  # type: ignore[no-any-return]


def test_a_run_recorded_on_ray_replays_on_ray_with_the_server_stopped(
    tmp_path: Path, mock_model: Callable[..., MockModelServer]
) -> None:
    server = mock_model(SCRIPT)
    recorded = run(tmp_path, "rec", base_url=server.base_url, record=True)
    assert server.request_count == 8
    for row in recorded["results"]:  # the driver wrote each recording where the row says
        text = (tmp_path / "rec" / row["recording_file"]).read_text()
        assert KEY not in text
        lines = [json.loads(line) for line in text.splitlines()]
        assert lines[0]["recording"]["task_id"] == row["id"] and len(lines) == 3
    server.stop()
    replayed = run(tmp_path, "rep", base_url=server.base_url, replay=tmp_path / "rec" / "r.json")
    keys = ("id", "attempt", "answer", "steps", "tokens", "failure_class", "checks")
    assert [{k: r[k] for k in keys} for r in replayed["results"]] == [
        {k: r[k] for k in keys} for r in recorded["results"]
    ]
    assert {r["failure_class"] for r in replayed["results"]} == {"passed", "wrong_answer"}
