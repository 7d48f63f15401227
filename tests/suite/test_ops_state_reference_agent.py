"""The reference agent on ops-state against the scripted server: judged by the world."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agent_eval.models.mock_server import MockModelServer
from agent_eval.results import AttemptResult
from agent_eval.run.runner import execute, prepare
from agent_eval.run.settings import RunConfig

RUNBOOK = "src/agent_eval/suites/ops-state/workspace/service-runbook.md"


def script(new: str) -> dict[str, object]:
    """Read the runbook, replace its retention line with ``new``, then claim success."""
    lines = [x for x in Path(RUNBOOK).read_text().splitlines() if "28 days" in x]
    calls = [{"name": "read_file", "arguments": {"path": "service-runbook.md"}}]
    calls += [
        {"name": "edit_file",
         "arguments": {"path": "service-runbook.md", "old": line,
                       "new": line.replace("28 days", new)}}
        for line in lines
    ]  # fmt: skip
    return {
        "replies": [{"tool_calls": [call]} for call in calls]
        + [{"content": "Done: the runbook now says 30 days."}]
    }


def run(tmp_path: Path, server: MockModelServer) -> list[AttemptResult]:
    config = RunConfig(
        agent="builtin:minimal", tasks="ops-state", task_ids=("retention-edit",),
        base_url=server.base_url, model="mock", out=tmp_path / "r.json",
        trajectory_dir=tmp_path / "traj",
    )  # fmt: skip
    return execute(prepare(config)).rows


def test_the_agent_that_edits_the_runbook_passes(
    tmp_path: Path, mock_model: Callable[..., MockModelServer]
) -> None:
    (row,) = run(tmp_path, mock_model(script("30 days")))
    assert row.passed, row.checks.state
    assert row.changed_files == ["M service-runbook.md"]
    assert [o.ok for o in row.checks.state] == [True, True, True, True]


def test_the_agent_that_only_says_it_did_fails(
    tmp_path: Path, mock_model: Callable[..., MockModelServer]
) -> None:
    (row,) = run(tmp_path, mock_model({"replies": [{"content": "Done: it says 30 days."}]}))
    assert not row.passed
    assert row.failure_class == "wrong_answer"
    failed = [o.name for o in row.checks.state if not o.ok]
    assert failed == [
        "file service-runbook.md contains '30 days'",
        "file service-runbook.md does not contain '28 days'",
    ]
    assert row.changed_files == []


def test_report_shows_which_files_an_attempt_changed(
    tmp_path: Path, mock_model: Callable[..., MockModelServer]
) -> None:
    import subprocess
    import sys

    run(tmp_path, mock_model(script("30 days")))
    done = subprocess.run(
        [sys.executable, "-m", "agent_eval", "report", str(tmp_path / "r.json")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    start = lines.index("Files changed")
    assert any("retention-edit r1" in line and "M service-runbook.md" in line
               for line in lines[start:])  # fmt: skip


@pytest.mark.parametrize(
    ("task_id", "sql", "passes"),
    [
        ("backup-row", "INSERT INTO backups (host, day, time) VALUES ('db-2', 'Sunday', '02:30')",
         True),
        ("backup-row", "INSERT INTO backups (host, day, time) VALUES ('db-2', 'Sunday', '2:30')",
         False),
        ("incident-resolve", "UPDATE incidents SET status = 'resolved' WHERE id = 7", True),
        ("incident-resolve", "UPDATE incidents SET status = 'resolved' WHERE id >= 7", False),
    ],
)  # fmt: skip
def test_the_agent_records_rows_with_the_database_tool(
    tmp_path: Path,
    mock_model: Callable[..., MockModelServer],
    task_id: str,
    sql: str,
    passes: bool,
) -> None:
    server = mock_model({"replies": [
        {"tool_calls": [{"name": "query_database", "arguments": {"path": "ops.db", "sql": sql}}]},
        {"content": "Recorded in ops.db."},
    ]})  # fmt: skip
    config = RunConfig(
        agent="builtin:minimal", tasks="ops-state", task_ids=(task_id,),
        base_url=server.base_url, model="mock", out=tmp_path / "r.json",
        trajectory_dir=tmp_path / "traj",
    )  # fmt: skip
    (row,) = execute(prepare(config)).rows
    assert row.passed is passes, row.checks.state
    assert row.changed_files == ["M ops.db"]
    assert "query_database" in row.checks.tools_used
