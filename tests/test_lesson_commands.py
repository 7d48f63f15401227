"""The README's course commands run verbatim in a student's folder, with the lesson's own
agent-tasks.json and no agent-workspace yet, against the scripted model server."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from agent_eval.models.mock_script import load_script
from agent_eval.models.mock_server import MockModelServer

ROOT = Path(__file__).resolve().parent.parent


def course_commands() -> list[list[str]]:
    """Each command of the README's "The course's commands" block, as argv."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("## The course's commands\n\n```\n", 1)[1].split("```", 1)[0]
    return [shlex.split(line) for line in block.replace("\\\n", " ").splitlines() if line]


def test_the_course_commands_run_verbatim(
    student: Path, agent_eval: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    shutil.copy(ROOT / "examples" / "scaffold-minimal.py", student / "my_agent.py")
    (student / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "multi-agent-system.py", student / "examples")
    commands = course_commands()
    assert [c[:2] for c in commands] == [["agent-eval", "validate"], *[["agent-eval", "run"]] * 2,
                                         ["agent-eval", "report"], ["agent-eval", "compare"],
                                         ["agent-eval", "history"]]  # fmt: skip
    with MockModelServer(load_script(ROOT / "examples" / "mock-replies.json")) as server:
        for command in commands:
            done = agent_eval(*command[1:], cwd=student, timeout=300,
                              env={"OPENAI_BASE_URL": server.base_url})  # fmt: skip
            assert done.returncode in (0, 2), (command, done.stderr)
            assert "Error" not in done.stderr, (command, done.stderr)
    made = sorted(p.name for p in (student / "agent-workspace").iterdir())
    assert made == ["machine-inventory.md", "model-policy.md", "service-runbook.md"]
    minimal = json.loads((student / "r.json").read_text())
    assert minimal["run"]["summary"]["runs"] == 45
    assert minimal["run"]["summary"]["passed"] >= 9  # the script answers three tasks
    four_role = json.loads((student / "results-four-role.json").read_text())
    assert four_role["run"]["summary"]["runs"] == 15
    assert len((student / "lb.jsonl").read_text().splitlines()) == 1
