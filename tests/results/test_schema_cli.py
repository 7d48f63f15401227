"""What `agent-eval run` writes keeps the course harness's keys, order and formats, with
agent-eval's own keys after them."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from test_old_files_cli import COURSE_CHECKS, COURSE_KEYS, cli

from agent_eval.records import RESULTS_SCHEMA

AGENT = """
SCAFFOLD_NAME = "fixed"
def run_task(task, options):
    return {"answer": "The gateway listens on 4000.", "steps": 2, "tokens": 1234,
            "trajectory": [{"type": "tool", "tool": "search_documents"}]}
"""
RUN_KEYS = ["lab", "run_id", "scaffold", "agent_entry_point", "task_set", "task_set_version",
            "model", "router_model", "quant", "engine", "engine_version", "base_url", "repeats",
            "host", "date", "wall_seconds", "notes", "summary"]  # fmt: skip
SUMMARY_KEYS = ["runs", "passed", "success_rate", "mean_steps", "mean_tokens", "mean_seconds",
                "total_tokens", "stdev_steps", "stdev_tokens"]  # fmt: skip
PER_TASK_KEYS = ["id", "category", "attempts", "successes", "success_rate", "steps_min",
                 "steps_max", "tokens_min", "tokens_max", "first_failure"]  # fmt: skip


def test_a_run_writes_the_course_keys_first(
    tmp_path: Path, write_agent: Callable[[str], Path]
) -> None:
    write_agent(AGENT, "fixed.py")
    tasks = ("r-gateway-port", "t-list-workspace", "x-window-length")  # suite order
    flags = [part for task in tasks for part in ("--task-id", task)]
    done = cli("run", "--agent", "fixed.py", *flags, "--repeats", "2", "--out", "r.json",
               "--labbook", "lb.jsonl", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2, done.stderr
    document = json.loads((tmp_path / "r.json").read_text())
    assert (
        list(document) == ["schema", "run", "per_task", "results"]
        and document["schema"] == RESULTS_SCHEMA
    )
    run = document["run"]
    assert list(run)[: len(RUN_KEYS)] == RUN_KEYS
    assert list(run["summary"])[: len(SUMMARY_KEYS)] == SUMMARY_KEYS
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", run["date"])
    assert run["started_at"].startswith(run["date"] + "T") and run["suite_hash"]
    assert [list(task)[: len(PER_TASK_KEYS)] for task in document["per_task"]] == (
        [PER_TASK_KEYS] * 3
    )
    assert [task["id"] for task in document["per_task"]] == list(tasks)
    listing = document["per_task"][1]
    first_failed = next(row for row in document["results"] if row["id"] == tasks[1])
    assert listing["first_failure"] == first_failed["checks"]  # the checks object, as the course
    assert listing["first_failure_reason"].startswith("r1: missing 'machine-inventory.md'")
    assert document["per_task"][0]["first_failure"] is None
    rows = document["results"]
    assert [(row["id"], row["attempt"]) for row in rows] == [  # attempt-major, as the course
        (task, attempt) for attempt in (1, 2) for task in tasks
    ]
    assert [list(row)[:12] for row in rows] == [COURSE_KEYS] * 6
    assert [list(row["checks"])[:7] for row in rows] == [COURSE_CHECKS] * 6
    checks = {row["id"]: row["checks"] for row in rows}
    # A check the task does not ask for holds, as the course writes it; one it asks for
    # says how it went.
    assert (checks["r-gateway-port"]["regex_ok"], checks["r-gateway-port"]["tool_ok"]) == (
        True, True
    )  # fmt: skip
    assert checks["x-window-length"]["regex_ok"] is False
    assert checks["t-list-workspace"]["tool_ok"] is False
    assert all(row["failure_class"] in ("passed", "wrong_answer") for row in rows)
    labbook = [json.loads(line) for line in (tmp_path / "lb.jsonl").read_text().splitlines()]
    assert labbook == [run]
    trajectory = (tmp_path / rows[0]["trajectory_file"]).read_text().splitlines()
    score = json.loads(trajectory[-1])
    assert score["type"] == "score" and score["checks"] == rows[0]["checks"]
    assert json.loads(trajectory[0])["meta"]["schema"] == RESULTS_SCHEMA
