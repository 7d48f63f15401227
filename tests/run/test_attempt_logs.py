"""An attempt's logs leave its slot when it ends: appended, redacted, to the trajectory
folder, at most the bound given, and nothing of them is left for the next attempt."""

from __future__ import annotations

import os
from pathlib import Path

from agent_eval.redaction import Redactor
from agent_eval.run.workspace import move_logs


def test_logs_move_redacted_within_the_bound_and_leave_nothing_behind(tmp_path: Path) -> None:
    logs, trajectories = tmp_path / "slot-0.logs", tmp_path / "traj"
    logs.mkdir()
    (logs / "agent.log").write_text("started with sk-secret-123\n")
    (logs / "forged.json").write_text('{"run": {}}')
    (logs / "empty.log").touch()
    (logs / "nested").mkdir()
    (logs / "nested" / "memo").write_text("for the next attempt")
    os.symlink("/etc/passwd", logs / "link.log")
    move_logs(logs, trajectories, Redactor(["sk-secret-123"]), limit=None)
    assert list(logs.iterdir()) == []
    assert sorted(p.name for p in trajectories.iterdir()) == ["agent.log", "forged.json.log"]
    assert "sk-secret-123" not in (trajectories / "agent.log").read_text()
    # a later attempt's log of the same name is appended
    (logs / "agent.log").write_text("attempt 2\n")
    move_logs(logs, trajectories, Redactor([]), limit=None)
    assert (trajectories / "agent.log").read_text().endswith("\nattempt 2\n")


def test_past_the_bound_one_line_says_the_rest_was_left_out(tmp_path: Path) -> None:
    logs, trajectories = tmp_path / "slot-0.logs", tmp_path / "traj"
    logs.mkdir()
    (logs / "a.log").write_bytes(b"a" * 700)
    (logs / "b.log").write_bytes(b"b" * 700)
    (logs / "c.log").write_bytes(b"c" * 10)
    move_logs(logs, trajectories, Redactor([]), limit=1000)
    assert (trajectories / "a.log").read_bytes() == b"a" * 700
    kept = (trajectories / "b.log").read_text()
    assert kept.startswith("b" * 300 + "\n[agent-eval] log cut at 1,000 bytes")
    assert not (trajectories / "c.log").exists()
    assert list(logs.iterdir()) == []
