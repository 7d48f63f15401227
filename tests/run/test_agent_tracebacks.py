"""A crashing agent's traceback is kept: its own frames, in the row, the trajectory's stop
record, the console (the last frame under the BAD line; every frame with --debug) and
the viewer's attempt page."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_eval.viewer import Library, Views

Cli = Callable[..., subprocess.CompletedProcess[str]]
AGENT_EVAL = Path(sys.executable).with_name("agent-eval")
AGENT = """\
import json


def pick(items):
    return items[3]


def run_task(task, options):
    if "json" in task:
        return json.loads("not json")
    if "fine" in task:
        return {"answer": "4000", "steps": 1, "tokens": 0}
    return pick([1, 2])
"""
PICK_LINE = 5
RUN_TASK_LINE = 13
JSON_LINE = 10


def suite(folder: Path) -> None:
    tasks = [
        {"id": "t-crash", "category": "x", "task": "crash please", "expect_in_answer": ["4000"]},
        {"id": "t-json", "category": "x", "task": "json please", "expect_in_answer": ["4000"]},
        {"id": "t-fine", "category": "x", "task": "fine please", "expect_in_answer": ["4000"]},
    ]
    suite = {"name": "crashes", "version": "1.0.0", "tasks": tasks}
    (folder / "suite.json").write_text(json.dumps(suite), encoding="utf-8")
    (folder / "my_agent.py").write_text(AGENT, encoding="utf-8")


def run(agent_eval: Cli, folder: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    suite(folder)
    args = ["run", "--agent", "my_agent.py", "--tasks", "suite.json", "--out", "r.json"]
    return agent_eval(*args, "--allow-empty-workspace", *extra, cwd=folder)


def console(folder: Path, *extra: str) -> list[str]:
    """What a terminal shows: stdout and stderr as one stream, in the order written."""
    suite(folder)
    args = ["run", "--agent", "my_agent.py", "--tasks", "suite.json", "--out", "r.json"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    done = subprocess.run([str(AGENT_EVAL), *args, "--allow-empty-workspace", *extra],
                          cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=120, env=env)  # fmt: skip
    return done.stdout.splitlines()


def rows(folder: Path) -> dict[str, dict[str, Any]]:
    data = json.loads((folder / "r.json").read_text(encoding="utf-8"))
    return {row["id"]: row for row in data["results"]}


def test_the_row_and_the_stop_record_keep_the_agents_own_frames(
    agent_eval: Cli, tmp_path: Path
) -> None:
    done = run(agent_eval, tmp_path)
    assert done.returncode == 2, done.stderr
    crash = rows(tmp_path)["t-crash"]
    assert crash["error"] == "run_task raised IndexError: list index out of range"
    assert crash["traceback"] == [
        {"file": "my_agent.py", "line": RUN_TASK_LINE, "function": "run_task",
         "code": "return pick([1, 2])"},
        {"file": "my_agent.py", "line": PICK_LINE, "function": "pick", "code": "return items[3]"},
    ]  # fmt: skip
    records = [json.loads(line) for line in (tmp_path / crash["trajectory_file"]).open()]
    (stop,) = [r for r in records if r.get("type") == "stop"]
    assert stop == {"type": "stop", "reason": "agent_error", "detail": crash["error"],
                    "traceback": crash["traceback"]}  # fmt: skip
    assert records[-1]["type"] == "score"


def test_the_standard_librarys_and_the_harnesss_frames_are_left_out(
    agent_eval: Cli, tmp_path: Path
) -> None:
    run(agent_eval, tmp_path)
    found = rows(tmp_path)
    (frame,) = found["t-json"]["traceback"]  # json's decoder frames are not the agent's
    assert (frame["file"], frame["line"], frame["function"]) == ("my_agent.py", JSON_LINE,
                                                                 "run_task")  # fmt: skip
    assert found["t-fine"]["traceback"] is None
    every = [f["file"] for row in found.values() for f in row["traceback"] or ()]
    assert set(every) == {"my_agent.py"}


def test_the_console_shows_the_last_frame_under_the_bad_line(
    agent_eval: Cli, tmp_path: Path
) -> None:
    lines = console(tmp_path)
    at = next(i for i, line in enumerate(lines) if line.startswith("  BAD t-crash"))
    assert lines[at + 1] == f"        at my_agent.py:{PICK_LINE} in pick: return items[3]"
    assert "        at " not in run(agent_eval, tmp_path).stdout  # stdout is the course's
    fine = next(i for i, line in enumerate(lines) if line.startswith("  ok  t-fine"))
    assert not lines[fine + 1].strip().startswith("at ")


def test_debug_prints_every_frame(agent_eval: Cli, tmp_path: Path) -> None:
    lines = console(tmp_path, "--debug")
    at = next(i for i, line in enumerate(lines) if line.startswith("  BAD t-crash"))
    assert lines[at + 1 : at + 3] == [
        f"        at my_agent.py:{RUN_TASK_LINE} in run_task: return pick([1, 2])",
        f"        at my_agent.py:{PICK_LINE} in pick: return items[3]",
    ]


def test_the_viewers_attempt_page_has_the_whole_traceback(agent_eval: Cli, tmp_path: Path) -> None:
    run(agent_eval, tmp_path)
    views = Views(Library([tmp_path / "r.json"]))
    (run_id,) = [card["id"] for card in views.runs()["runs"]]
    crash = next(i for i, row in enumerate(rows(tmp_path).values()) if row["id"] == "t-crash")
    page = views.attempt(run_id, crash)
    assert [(f["function"], f["line"]) for f in page["traceback"]] == [
        ("run_task", RUN_TASK_LINE),
        ("pick", PICK_LINE),
    ]


def test_a_cmd_agent_has_no_harness_frames_for_a_traceback(agent_eval: Cli, tmp_path: Path) -> None:
    suite(tmp_path)
    (tmp_path / "dies.py").write_text("import sys\nsys.exit(3)\n", encoding="utf-8")
    args = ["run", "--agent", "cmd:python3 dies.py", "--tasks", "suite.json", "--out", "r.json"]
    done = agent_eval(*args, "--allow-empty-workspace", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    found = rows(tmp_path)
    assert {row["failure_class"] for row in found.values()} == {"agent_error"}
    assert {json.dumps(row["traceback"]) for row in found.values()} == {"null"}
    assert "        at " not in done.stdout
