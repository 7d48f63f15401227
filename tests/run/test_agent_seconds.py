"""A row's seconds are the agent's own when it gives them, as the course records them;
the harness's clock is kept beside them, and it alone judges the time limits."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from agent_eval.run.runner import execute, prepare
from agent_eval.run.settings import RunConfig

AGENT = """
import time

def run_task(task, options):
    time.sleep(0.3 if options["task_id"] == "slow" else 0)
    reply = {"answer": "yes", "steps": 1, "tokens": 1}
    if options["task_id"] != "untimed":
        reply["seconds"] = 3600.0 if options["task_id"] == "timed" else 0.0
    return reply
"""


def test_the_agents_seconds_are_recorded_and_the_harness_clock_judges_the_limit(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    tasks = [{"id": "timed", "category": "c", "task": "x", "expect_in_answer": ["yes"]},
             {"id": "untimed", "category": "c", "task": "x", "expect_in_answer": ["yes"]},
             # says it took no time, but sleeps past its 0.1 s (and the harness's grace)
             {"id": "slow", "category": "c", "task": "x", "expect_in_answer": ["yes"],
              "max_seconds": 0.1}]  # fmt: skip
    config = RunConfig(agent=str(write_agent(AGENT)), tasks=str(write_suite(tasks)), model="m",
                       preflight=False, out=tmp_path / "r.json",
                       trajectory_dir=tmp_path / "traj")  # fmt: skip
    execute(prepare(config))
    document = json.loads((tmp_path / "r.json").read_text())
    rows = {row["id"]: row for row in document["results"]}
    timed, untimed, slow = rows["timed"], rows["untimed"], rows["slow"]
    # an hour by its own account; no attempt of this run takes one
    assert timed["seconds"] == 3600.0 and timed["harness_seconds"] < 3600.0
    assert untimed["seconds"] == untimed["harness_seconds"] > 0
    assert slow["failure_class"] == "over_budget", slow
    assert slow["harness_seconds"] > 0.1
    # the summary is the course's: the mean of the rows' seconds
    assert document["run"]["summary"]["mean_seconds"] == round(
        sum(row["seconds"] for row in rows.values()) / 3, 1
    )
    # the course's keys come first, ours after
    keys = list(timed)
    assert keys.index("seconds") < keys.index("trajectory_file") < keys.index("harness_seconds")
