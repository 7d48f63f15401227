"""The suite audit: degenerate baselines through the real runner."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent_eval", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_audit_part26_finds_the_gameable_tasks(tmp_path: Path) -> None:
    done = cli("audit", "part26", "--format", "json", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    found = json.loads(done.stdout)
    baselines = found["baselines"]
    assert list(baselines) == [
        "empty",
        "echo",
        "dump-documents",
        "top-passage",
        "cannot-find",
        "instructions",
    ]
    dumped = set(baselines["dump-documents"]["passed"])
    assert {"r-backup-window", "r-gateway-port", "r-restore-test"} <= dumped
    assert "x-refusal" not in dumped  # the documents never say they lack a password
    assert baselines["empty"]["passed"] == []
    assert baselines["cannot-find"]["passed"] == ["x-refusal"]
    assert found["gameable"] == sorted({t for b in baselines.values() for t in b["passed"]})
    assert "t-list-workspace" not in found["gameable"]  # needs the run_command tool


def test_audit_of_a_sound_suite_exits_zero(
    tmp_path: Path, write_suite: Callable[..., Path]
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# Ports\nThe gateway listens on port 4000.\n")
    write_suite(
        [{"id": "port", "task": "Which port does the gateway use? Answer with the number only.",
          "expect_regex": "^\\s*4000\\s*$"}],
        workspace="docs",
    )  # fmt: skip
    done = cli("audit", "suite.json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "gameable: none; no baseline passes any task"


def test_index_command_builds_an_index_runs_can_use(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Backups\nThe backup window is on Sunday.\n\n# Ports\nPort 1.\n")
    done = cli("index", "docs", "-o", "idx", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "indexed 2 passage(s) from docs into idx\n")
    bad = cli("index", "nowhere", "-o", "idx2", cwd=tmp_path)
    assert bad.returncode == 1 and bad.stderr.startswith("Error: index:")
    missing = cli("run", "--agent", "builtin:top-passage", "--index", "nope", cwd=tmp_path)
    assert missing.stderr == (
        "Error: --index nope: no such index; build one with `agent-eval index DIR -o nope`\n"
    )
