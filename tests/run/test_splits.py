"""Held-out discipline end to end: `run --split`, every test run in the labbook, and the
warning on the fourth look at one suite version's test split."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

AGENT = 'def run_task(task, options):\n    return {"answer": "4000", "steps": 1, "tokens": 5}\n'


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_EVAL_"))}
    env["XDG_DATA_HOME"] = str(cwd / "data")
    return subprocess.run([sys.executable, "-m", "agent_eval", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, env=env)  # fmt: skip


TASKS = [
    {"id": "held-out", "task": "Port?", "expect_in_answer": ["4000"]},
    {"id": "tuning", "task": "Port?", "expect_in_answer": ["4000"], "split": "dev"},
]


def test_the_fourth_look_at_a_test_split_warns(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    write_suite(TASKS, split="test")
    write_agent(AGENT, "a.py")
    labbook = tmp_path / "data" / "agent-eval" / "labbook.jsonl"
    dev = cli("run", "--agent", "a.py", "--tasks", "suite.json", "--split", "dev", "--out",
              "dev.json", cwd=tmp_path)  # fmt: skip
    assert dev.returncode == 0, dev.stderr
    assert [r["id"] for r in json.loads((tmp_path / "dev.json").read_text())["results"]] == [
        "tuning"
    ]
    assert json.loads((tmp_path / "dev.json").read_text())["run"]["splits"] == ["dev"]
    assert not labbook.exists()  # a dev run is not a look at the held-out tasks
    for look in range(1, 5):
        done = cli("run", "--agent", "a.py", "--tasks", "suite.json", "--split", "test",
                   cwd=tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert f"test split: this run is recorded in {labbook}" in done.stderr
        warnings = [line for line in done.stderr.splitlines() if line.startswith("Warning:")]
        if look < 4:
            assert warnings == []
        else:
            assert warnings == [
                "Warning: the test split of tiny 1.0.0 has been evaluated 4 times since that "
                "version (more than 3); its numbers have been tuned against: report them as "
                "dev figures, and bump the version with fresh held-out tasks"
            ]
    records = [json.loads(line) for line in labbook.read_text().splitlines()]
    assert [r["splits"] for r in records] == [["test"]] * 4
    history = cli("history", "--labbook", str(labbook), cwd=tmp_path)
    assert history.stdout.splitlines()[0].startswith(
        "WARNING: the test split of tiny 1.0.0 has been evaluated 4 times"
    )
    quiet = cli("history", "--labbook", str(labbook), "--max-test-looks", "4", cwd=tmp_path)
    assert not quiet.stdout.startswith("WARNING")
    machine = json.loads(
        cli("history", "--labbook", str(labbook), "--format", "json", cwd=tmp_path).stdout
    )
    assert machine["test_looks"] == [{"suite": "tiny", "version": "1.0.0", "looks": 4,
                                      "run_ids": [r["run_id"] for r in records]}]  # fmt: skip
    assert len(machine["warnings"]) == 1
    # A new version starts the count again; a whole-suite run still looks at the test split.
    write_suite(TASKS, split="test", version="1.1.0")
    done = cli("run", "--agent", "a.py", "--tasks", "suite.json", cwd=tmp_path)
    assert "Warning" not in done.stderr
    assert json.loads(labbook.read_text().splitlines()[-1])["splits"] == ["dev", "test"]


def test_split_selection_errors(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    write_suite([TASKS[0]])
    write_agent(AGENT, "a.py")
    done = cli("run", "--agent", "a.py", "--tasks", "suite.json", "--split", "test", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        "Error: --split test: no selected task of suite suite.json is in that split "
        "(splits declared: none)"
    )
    write_suite([{**TASKS[0], "split": "final"}])
    done = cli("validate", "suite.json", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "suite suite.json, task held-out: field 'split': must be 'dev' or 'test'"
    ]


LINE_ENDS_AGENT = (
    'SCAFFOLD_NAME = "evil\\u2028{\\"x\\":1}\\u2029\\x85\\x0b\\x1c"\n'
    'def run_task(task, options):\n    return {"answer": "4000", "steps": 1, "tokens": 5}\n'
)


def test_a_scaffold_name_holding_line_ends_of_splitlines_still_counts_each_look(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    """The labbook's line is written as it is (ensure_ascii=False), U+2028 and all: only
    "\\n" ends it when it is read back."""
    write_suite(TASKS, split="test")
    write_agent(LINE_ENDS_AGENT, "a.py")
    labbook = tmp_path / "data" / "agent-eval" / "labbook.jsonl"
    for _ in range(4):
        done = cli("run", "--agent", "a.py", "--tasks", "suite.json", "--split", "test",
                   cwd=tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stderr
    assert "\u2028" in labbook.read_text(encoding="utf-8")  # the case under test
    assert "Warning: the test split of tiny 1.0.0 has been evaluated 4 times" in done.stderr
    history = cli("history", "--labbook", str(labbook), "--format", "json", cwd=tmp_path)
    machine = json.loads(history.stdout)
    assert machine["problems"] == []
    scaffold = 'evil\u2028{"x":1}\u2029\x85\x0b\x1c'
    assert [run["scaffold"] for run in machine["runs"]] == [scaffold] * 4
    assert machine["test_looks"][0]["looks"] == 4
