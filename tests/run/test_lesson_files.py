"""The lesson's own files run as they are: a copy of a shipped suite uses its documents,
and no run or validate starts silently from no documents."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from agent_eval.suite import shipped_suites

Cli = Callable[..., subprocess.CompletedProcess[str]]
GATEWAY = ("--task-id", "r-gateway-port")


def test_the_lessons_suite_file_uses_the_shipped_documents(student: Path, agent_eval: Cli) -> None:
    done = agent_eval("run", "--agent", "builtin:dump-documents", "--tasks", "agent-tasks.json",
                      *GATEWAY, cwd=student)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[2].startswith("  ok  r-gateway-port   r1")
    assert "workspace: 3 files from the shipped suite part26" in done.stderr


def test_the_lessons_workspace_folder_is_created(student: Path, agent_eval: Cli) -> None:
    done = agent_eval("run", "--agent", "builtin:dump-documents", "--tasks", "agent-tasks.json",
                      "--workspace", "./agent-workspace", *GATEWAY, cwd=student)  # fmt: skip
    assert done.returncode == 0, done.stderr
    made = sorted(p.name for p in (student / "agent-workspace").iterdir())
    assert made == ["machine-inventory.md", "model-policy.md", "service-runbook.md"]
    assert "workspace: created agent-workspace with 3 files" in done.stderr
    # An existing folder is the user's: used as it is, never overwritten.
    (student / "agent-workspace" / "model-policy.md").write_text("mine\n")
    again = agent_eval("run", "--agent", "builtin:dump-documents", "--tasks", "agent-tasks.json",
                       "--workspace", "./agent-workspace", *GATEWAY, cwd=student)  # fmt: skip
    assert again.returncode == 0
    assert (student / "agent-workspace" / "model-policy.md").read_text() == "mine\n"


def test_a_missing_workspace_is_created_from_any_suites_documents(
    tmp_path: Path, write_suite: Callable[..., Path], agent_eval: Cli
) -> None:
    write_suite([{"id": "a", "task": "t", "expect_in_answer": ["tests"]}])  # docs/notes.md
    done = agent_eval("run", "--agent", "builtin:dump-documents", "--tasks", "suite.json",
                      "--workspace", "fresh", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "fresh" / "notes.md").read_text() == "Notes for the tests.\n"


def test_an_edited_copy_is_not_taken_for_the_shipped_suite(student: Path, agent_eval: Cli) -> None:
    raw = json.loads((student / "agent-tasks.json").read_text())
    raw["tasks"][1]["expect_in_answer"] = ["4001"]
    (student / "agent-tasks.json").write_text(json.dumps(raw))
    done = agent_eval("run", "--agent", "builtin:dump-documents", "--tasks", "agent-tasks.json",
                      *GATEWAY, cwd=student)  # fmt: skip
    assert done.returncode == 1
    shipped = ", ".join(str(p.parent / "workspace") for p in shipped_suites().values())
    assert done.stderr.splitlines() == [
        "Error: suite agent-tasks.json: no documents to work on (its 'workspace' names no "
        "folder next to it); give --workspace DIR with the agent's documents (the shipped "
        f"suites' documents are in {shipped}; `agent-eval init DIR` copies part26's "
        "(--suite NAME: another's) into DIR/agent-workspace), or --allow-empty-workspace if "
        "the tasks need none"
    ]
    assert not (student / "trajectories").exists()


def test_no_documents_is_an_error_unless_allowed(
    tmp_path: Path, write_suite: Callable[..., Path], agent_eval: Cli
) -> None:
    write_suite([{"id": "a", "task": "t"}], workspace=None)
    (tmp_path / "empty").mkdir()
    refused = agent_eval("run", "--agent", "builtin:empty", "--tasks", "suite.json", cwd=tmp_path)
    assert refused.returncode == 1
    assert refused.stderr.startswith("Error: suite suite.json: no documents to work on")
    assert len(refused.stderr.splitlines()) == 1
    empty = agent_eval("run", "--agent", "builtin:empty", "--tasks", "suite.json",
                       "--workspace", "empty", cwd=tmp_path)  # fmt: skip
    assert empty.returncode == 1
    assert empty.stderr == (
        "Error: --workspace empty: the folder is empty; put the agent's documents in it, "
        "or give --allow-empty-workspace if the tasks need none\n"
    )
    typo = agent_eval("run", "--agent", "builtin:empty", "--tasks", "suite.json",
                      "--workspace", "nowhere", cwd=tmp_path)  # fmt: skip
    assert typo.returncode == 1
    assert "--workspace nowhere: no such folder, and suite suite.json has no documents" in (
        typo.stderr
    )
    allowed = agent_eval("run", "--agent", "builtin:empty", "--tasks", "suite.json",
                         "--allow-empty-workspace", cwd=tmp_path)  # fmt: skip
    assert allowed.returncode == 0, allowed.stderr
    assert "workspace: empty (--allow-empty-workspace)" in allowed.stderr


def test_validate_reports_a_suite_without_documents(
    tmp_path: Path, student: Path, write_suite: Callable[..., Path], agent_eval: Cli
) -> None:
    write_suite([{"id": "a", "task": "t"}], workspace=None)
    done = agent_eval("validate", "suite.json", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith("Error: suite suite.json: no documents to work on")
    given = agent_eval("validate", "suite.json", "--workspace", "docs", cwd=tmp_path)
    assert given.returncode == 1  # docs/ does not exist for this suite
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("a\n")
    assert agent_eval("validate", "suite.json", "--workspace", "docs", cwd=tmp_path).returncode == 0
    allowed = agent_eval("validate", "suite.json", "--allow-empty-workspace", cwd=tmp_path)
    assert allowed.returncode == 0
    lesson = agent_eval("validate", "agent-tasks.json", cwd=student)
    assert lesson.returncode == 0
    assert "the tasks of shipped suite part26, documents in" in lesson.stdout
