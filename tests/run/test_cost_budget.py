"""`run --max-cost-per-task`: a cost budget like steps, tokens and time, end to end.

An agent that reports usage as it goes (the reference agents) is stopped while it runs;
any other agent is judged on its final figures. Just under the budget passes; just over
is over_budget. The report's headline states the budgets next to the success rate.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_eval.models.mock_server import MockModelServer

FIXED = """
SCAFFOLD_NAME = "fixed"
def run_task(task, options):
    return {"answer": "The lamp is lit at 19:00.", "steps": 1, "tokens": TOKENS}
"""
TASK = {"id": "lamp", "task": "When is the lamp lit?", "expect_in_answer": ["19:00"],
        "max_steps": 6}  # fmt: skip


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    return subprocess.run([sys.executable, "-m", "agent_eval", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, env=env)  # fmt: skip


def rows(path: Path) -> list[dict[str, Any]]:
    return list(json.loads(path.read_text(encoding="utf-8"))["results"])


def test_a_cost_budget_needs_a_price(tmp_path: Path, write_suite: Callable[..., Path]) -> None:
    write_suite([TASK])
    done = cli("run", "--agent", "builtin:empty", "--tasks", "suite.json",
               "--max-cost-per-task", "0.002", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        "Error: --max-cost-per-task 0.002: cost needs your price; add --cost-per-million, "
        "or --input-cost-per-million and --output-cost-per-million"
    )
    assert not (tmp_path / "trajectories").exists() or not any(
        (tmp_path / "trajectories").iterdir()
    )


def test_final_figures_just_under_and_just_over(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    """An agent that reports only its totals is judged when it returns."""
    write_suite([TASK])
    for tokens, out in ((1999, "under.json"), (2001, "over.json")):
        write_agent(FIXED.replace("TOKENS", str(tokens)), f"fixed{tokens}.py")
        done = cli("run", "--agent", f"fixed{tokens}.py", "--tasks", "suite.json", "--out", out,
                   "--cost-per-million", "1", "--max-cost-per-task", "0.002",
                   cwd=tmp_path)  # fmt: skip
        assert done.returncode == (0 if tokens < 2000 else 2), done.stderr
    (under,), (over,) = rows(tmp_path / "under.json"), rows(tmp_path / "over.json")
    assert (under["failure_class"], under["checks"]["within_cost"]) == ("passed", True)
    assert (over["failure_class"], over["checks"]["within_cost"]) == ("over_budget", False)
    assert over["checks"]["missing"] == []  # the answer was right; the budget failed it
    run = json.loads((tmp_path / "over.json").read_text(encoding="utf-8"))["run"]
    assert run["limits"]["max_cost_per_task"] == 0.002
    assert run["budgets"] == {
        "max_steps": {"low": 6, "high": 6, "tasks": 1, "of": 1},
        "max_tokens": None,
        "max_seconds": None,
        "max_cost_per_task": 0.002,
        "tools": ["search_documents", "read_file", "run_command"],
        "writes": False,
    }
    report = cli("report", "under.json", cwd=tmp_path)
    assert report.stdout.splitlines()[2] == (
        "success 1.000 [0.207, 1.000] (success rate, Wilson interval) at ≤ 6 steps, "
        "≤ 0.002 cost per task, read-only tools"
    )
    rescored = cli("rescore", "over.json", "--tasks", "suite.json", cwd=tmp_path)
    assert rescored.returncode == 2  # the recorded budget still holds on a rescore


def usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion}


def test_reference_agent_is_stopped_while_it_runs(
    tmp_path: Path, write_suite: Callable[..., Path], mock_model: Callable[..., MockModelServer]
) -> None:
    """Each reply costs 0.001 at 1 per million; the fourth would break a 0.0025 budget."""
    search = {"tool_calls": [{"name": "search_documents", "arguments": {"query": "lamp"}}]}
    replies = [
        {**search, "usage": usage(600, 400)},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.md"}}],
         "usage": usage(600, 400)},
        {"tool_calls": [{"name": "search_documents", "arguments": {"query": "lit"}}],
         "usage": usage(600, 400)},
        {"content": "At 19:00.", "usage": usage(600, 400)},
    ]  # fmt: skip
    server = mock_model({"replies": replies})
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("The lamp is lit at 19:00.\n", encoding="utf-8")
    write_suite([{**TASK, "max_steps": 12}], workspace="docs")
    found = {}
    for budget, out in (("0.0041", "under.json"), ("0.0025", "over.json")):
        done = cli("run", "--agent", "builtin:minimal", "--tasks", "suite.json", "--out", out,
                   "--base-url", server.base_url, "--model", "m", "--cost-per-million", "1",
                   "--max-cost-per-task", budget, cwd=tmp_path)  # fmt: skip
        (found[out],) = rows(tmp_path / out)
        assert done.returncode == (0 if out == "under.json" else 2), done.stderr
    under, over = found["under.json"], found["over.json"]
    assert (under["failure_class"], under["tokens"], under["checks"]["within_cost"]) == (
        "passed", 4000, True)  # fmt: skip
    assert (over["failure_class"], over["stopped"], over["tokens"]) == (
        "over_budget", "cost_budget", 3000)  # fmt: skip
    assert over["checks"]["within_cost"] is False
