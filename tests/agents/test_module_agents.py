"""`--agent package.module:object` finds the package in the current folder, as
`python -m` would, with no PYTHONPATH."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

Cli = Callable[..., subprocess.CompletedProcess[str]]
BOT = """
class SupportBot:
    SCAFFOLD_NAME = "support-bot"
    def run_task(self, task, options):
        return {"answer": "The gateway listens on 4000.", "steps": 1, "tokens": 5}

support_bot = SupportBot()
"""


def test_a_package_in_the_current_folder_is_found(tmp_path: Path, agent_eval: Cli) -> None:
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "agents.py").write_text(BOT)
    done = agent_eval("run", "--agent", "mypkg.agents:support_bot", "--task-id",
                      "r-gateway-port", "--model", "m", "--no-preflight", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "support-bot x m: 1 task(s), 1 attempt(s) each"


def test_a_package_elsewhere_names_the_folder_it_looked_in(tmp_path: Path, agent_eval: Cli) -> None:
    done = agent_eval("run", "--agent", "mypkg.agents:support_bot", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith(
        f"Error: agent mypkg.agents:support_bot: cannot import mypkg.agents from {tmp_path} "
        "or the installed packages"
    )
    assert "run from the folder that holds it" in done.stderr
