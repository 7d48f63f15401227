"""Other harnesses' runs in the viewer, over its JSON API on a real server."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.interop.conftest import InspectRun

from agent_eval.viewer import open_viewer

Cli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def served(
    inspect_run: InspectRun, our_run: Path, cli: Cli, tmp_path: Path
) -> Iterator[tuple[str, dict[str, dict[str, Any]]]]:
    """A viewer over a folder holding an Inspect log, our run and an ATIF export of ours."""
    folder = tmp_path / "runs"
    shutil.copytree(our_run.parent, folder / "ours")
    (folder / "inspect").mkdir()
    shutil.copy(inspect_run.log, folder / "inspect" / "arith.eval")
    atif = folder / "atif"
    assert cli("export", str(our_run), "--format", "atif", "--out", str(atif)).returncode == 0
    server = open_viewer([folder]).start()
    try:
        base = server.root_url
        runs = httpx.get(f"{base}/api/runs", timeout=60).json()["runs"]
        yield base, {Path(run["file"]).name: run for run in runs}
    finally:
        server.stop()


def test_an_inspect_log_opens_with_its_attempts_and_trajectories(
    served: tuple[str, dict[str, dict[str, Any]]],
) -> None:
    base, runs = served
    assert {"arith.eval", "ours.json", "atif"} <= set(runs)
    run = runs["arith.eval"]
    grid = httpx.get(f"{base}/api/grid/{run['id']}", timeout=60).json()
    cells = {t["task_id"]: [c["failure_class"] for c in t["cells"]] for t in grid["tasks"]}
    assert cells == {"sum": ["passed", "passed"], "capital": ["passed", "passed"],
                     "eight": ["wrong_answer", "wrong_answer"],
                     "loop": ["over_budget", "over_budget"]}  # fmt: skip
    index = next(c["index"] for t in grid["tasks"] if t["task_id"] == "sum" for c in t["cells"])
    attempt = httpx.get(f"{base}/api/attempt/{run['id']}/{index}", timeout=60).json()
    assert attempt["task"] == "What is 2 plus 3?" and attempt["trajectory_problem"] is None
    steps = httpx.get(f"{base}/api/steps/{run['id']}/{index}", timeout=60).json()
    kinds = [r["type"] for r in steps["records"]]
    assert kinds == ["model", "tool", "model", "stop", "score"]
    assert steps["records"][1]["args"] == {"x": 2, "y": 3}


def test_the_viewer_compares_an_inspect_log_with_our_run(
    served: tuple[str, dict[str, dict[str, Any]]],
) -> None:
    base, runs = served
    a, b = runs["arith.eval"]["id"], runs["ours.json"]["id"]
    result = httpx.get(f"{base}/api/compare/{a}/{b}", timeout=60).json()
    flips = {t["task_id"]: t["change"] for t in result["per_task"]}
    assert flips == {"sum": "same", "capital": "worse", "eight": "better", "loop": "same"}
    pair = httpx.get(f"{base}/api/pair/{a}/{b}/capital", timeout=60).json()
    assert "error" not in pair, pair
    atif = httpx.get(f"{base}/api/grid/{runs['atif']['id']}", timeout=60).json()
    assert sum(len(t["cells"]) for t in atif["tasks"]) == 8
