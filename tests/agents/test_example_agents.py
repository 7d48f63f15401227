"""The example entry-point files and the example script, run through the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent_eval.models.mock_script import load_script
from agent_eval.models.mock_server import MockModelServer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def agent_eval(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    code = "import sys; from agent_eval.cli import main; sys.argv[0] = 'agent-eval'; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("example", ["scaffold-minimal.py", "multi-agent-system.py"])
def test_example_files_re_export_the_builtins(example: str, tmp_path: Path) -> None:
    server = MockModelServer(load_script(EXAMPLES / "mock-replies.json")).start()
    try:
        out = tmp_path / "results.json"
        done = agent_eval(
            "run",
            "--agent",
            str(EXAMPLES / example),
            "--tasks",
            "part26",
            "--task-id",
            "r-backup-window",
            "--task-id",
            "t-read-review-date",
            "--base-url",
            server.base_url,
            "--model",
            "mock",
            "--out",
            str(out),
            "--trajectory-dir",
            str(tmp_path / "trajectories"),
            cwd=tmp_path,
        )
    finally:
        server.stop()
    results = json.loads(out.read_text(encoding="utf-8"))
    scaffold = "minimal" if example == "scaffold-minimal.py" else "multi-agent"
    assert results["run"]["scaffold"] == scaffold
    rows = {row["id"]: row for row in results["results"]}
    assert set(rows) == {"r-backup-window", "t-read-review-date"}
    if scaffold == "minimal":
        # The example script is written for the single loop: both tasks pass.
        assert done.returncode == 0, done.stderr
        assert all(row["checks"]["passed"] for row in rows.values())
        assert "  ok  r-backup-window  r1   3 step(s)" in done.stdout  # the course's 16
    else:
        assert all(row["failure_class"] != "agent_error" for row in rows.values())
