"""--executor ray on three nodes (simulated on this machine with ray.cluster_utils)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import ray

from agent_eval.run.runner import execute, prepare
from agent_eval.run.settings import RunConfig

pytestmark = pytest.mark.usefixtures("ray_cluster")

AGENT = """
import pathlib, time

def run_task(task, options):
    started = pathlib.Path(options["started"])
    (started / f"{options['task_id']}-{options['attempt']}").touch()
    time.sleep(float(task))
    return {"answer": "done", "steps": 1, "tokens": 1}
"""


def run(tmp_path: Path, suite: Path, agent: Path, **fields: Any) -> dict[str, Any]:
    (tmp_path / "started").mkdir()
    out = tmp_path / "r.json"
    config = RunConfig(agent=str(agent), tasks=str(suite), executor="ray", out=out,
                       trajectory_dir=tmp_path / "traj", retry_backoff=0.05,
                       options={"started": str(tmp_path / "started")}, **fields)  # fmt: skip
    execute(prepare(config))
    return json.loads(out.read_text())  # type: ignore[no-any-return]


def nodes_of(tmp_path: Path, document: dict[str, Any]) -> set[str]:
    found = set()
    for row in document["results"]:
        first = (tmp_path / row["trajectory_file"]).read_text().splitlines()[0]
        found.add(json.loads(first)["meta"]["ray_node_id"])
    return found


def test_attempts_run_on_every_node_of_the_cluster(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[[str], Path]
) -> None:
    suite = write_suite([{"id": f"t{i}", "task": "0.3", "expect_in_answer": ["done"]}
                         for i in range(3)])  # fmt: skip
    document = run(tmp_path, suite, write_agent(AGENT), repeats=2, concurrency=3)
    assert document["run"]["summary"]["passed"] == 6
    alive = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
    assert len(alive) == 3
    assert nodes_of(tmp_path, document) == alive


def test_a_node_that_dies_mid_attempt_costs_a_retry_not_the_attempt(
    tmp_path: Path,
    write_suite: Callable[..., Path],
    write_agent: Callable[[str], Path],
    ray_cluster: Any,
) -> None:
    suite = write_suite([{"id": f"t{i}", "task": "2", "expect_in_answer": ["done"]}
                         for i in range(3)])  # fmt: skip
    result: dict[str, Any] = {}
    runner = threading.Thread(target=lambda: result.update(
        run(tmp_path, suite, write_agent(AGENT), concurrency=3)))  # fmt: skip
    runner.start()
    deadline = time.monotonic() + 60
    while len(list((tmp_path / "started").glob("*"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)  # every node is mid-attempt now
    doomed = next(iter(ray_cluster.worker_nodes))
    ray_cluster.remove_node(doomed, allow_graceful=False)
    runner.join(120)
    try:
        assert not runner.is_alive()
        rows = result["results"]
        assert [(r["id"], r["failure_class"]) for r in rows] == [
            ("t0", "passed"), ("t1", "passed"), ("t2", "passed")
        ]  # fmt: skip
        assert sorted(r["infra_retries"] for r in rows) == [0, 0, 1]
        (retried,) = [r for r in rows if r["infra_retries"]]
        first = (tmp_path / retried["trajectory_file"]).with_suffix(".try1.jsonl")
        assert json.loads(first.read_text().splitlines()[-1])["error"].startswith(
            "ray slot group died"
        )
    finally:
        ray_cluster.add_node(num_cpus=1)
        ray_cluster.wait_for_nodes()
