"""Verified citations end to end: a suite that asks for them, an agent that gives them,
and the verdicts through `agent-eval run`, `validate` and `report`.

Near misses: a quote one word off, the right file with a quote from another, a file that
is not there, a quote the agent wrote into the file before citing it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_eval.models.mock_server import MockModelServer
from agent_eval.records import Citation
from agent_eval.score.citations import judge_citations, normalise

A_TEXT = "# Lamp\n\nThe lamp is lit at 19:00   every\nevening.\n"
B_TEXT = "# Keepers\n\nThe head keeper is Ada Brand.\n"

AGENT = """
from pathlib import Path
CITES = {
    "exact": [{"file": "a.md", "quote": "the LAMP is lit at 19:00 every evening"}],
    "one-word-off": [{"file": "a.md", "quote": "The lamp is lit at 19:00 every morning"}],
    "misattributed": [{"file": "a.md", "quote": "The head keeper is Ada Brand"}],
    "no-such-file": [{"file": "c.md", "quote": "The lamp is lit"}],
    "other-file": [{"file": "b.md", "quote": "The head keeper is Ada Brand"}],
    "written-first": [{"file": "a.md", "quote": "The lamp is lit at dawn"}],
    "uncited": [],
    "free-but-wrong": [{"file": "./a.md", "quote": "the lamp is never lit"}],
}
def run_task(task, options):
    task_id = options["task_id"]
    if task_id == "written-first":
        with open(Path(options["workspace"]) / "a.md", "a") as f:
            f.write("The lamp is lit at dawn.\\n")
    return {"answer": "At 19:00.", "steps": 1, "tokens": 10, "citations": CITES[task_id]}
"""


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    return subprocess.run([sys.executable, "-m", "agent_eval", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, env=env)  # fmt: skip


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text(A_TEXT, encoding="utf-8")
    (folder / "b.md").write_text(B_TEXT, encoding="utf-8")
    return folder


def task(task_id: str, expect: list[str] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"id": task_id, "task": "When is the lamp lit?",
                            "expect_in_answer": ["19:00"]}  # fmt: skip
    if expect is not None:
        body["expect_citations"] = expect
    return body


def test_every_citation_is_verified_against_the_starting_workspace(
    tmp_path: Path, docs: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    ids = ["exact", "one-word-off", "misattributed", "no-such-file", "other-file",
           "written-first", "uncited"]  # fmt: skip
    tasks = [task(i, ["a.md"]) for i in ids] + [task("free-but-wrong")]
    write_suite(tasks, workspace="docs")
    write_agent(AGENT, "citer.py")
    done = cli("run", "--agent", "citer.py", "--tasks", "suite.json", "--out", "r.json",
               cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2, done.stderr
    rows = {r["id"]: r for r in json.loads((tmp_path / "r.json").read_text())["results"]}
    verdicts = {
        i: (r["failure_class"], r["checks"]["citations_ok"], [b["reason"] for b in
            r["checks"]["bad_citations"]])
        for i, r in rows.items()
    }  # fmt: skip
    assert verdicts == {
        "exact": ("passed", True, []),
        "one-word-off": ("wrong_answer", False, ["the quote is not in a.md"]),
        "misattributed": ("wrong_answer", False, ["the quote is not in a.md"]),
        "no-such-file": ("wrong_answer", False, ["no such file in the starting workspace"]),
        "other-file": ("wrong_answer", False, []),  # true, but not a file the task asks for
        "written-first": ("wrong_answer", False, ["the quote is not in a.md"]),
        "uncited": ("wrong_answer", False, []),
        # No expect_citations: the check holds (the course convention), the invented source
        # is still reported.
        "free-but-wrong": ("passed", True, ["the quote is not in a.md"]),
    }
    assert rows["exact"]["citations"] == [
        {"file": "a.md", "quote": "the LAMP is lit at 19:00 every evening"}
    ]
    assert (docs / "a.md").read_text() == A_TEXT  # the attempt wrote into its own copy
    text = cli("report", "r.json", cwd=tmp_path).stdout
    assert "bad citations  5 of 8 attempts cite a quote their file does not hold" in text
    report = json.loads(cli("report", "r.json", "--format", "json", cwd=tmp_path).stdout)
    assert report["summary"]["bad_citation_attempts"] == 5
    failures = {t["task_id"]: t["failures"] for t in report["per_task"]}
    assert failures["one-word-off"] == ["r1: bad citation of a.md: the quote is not in a.md"]
    assert failures["other-file"] == ["r1: cited none of the expected files"]
    # The starting workspace is gone by now: rescoring keeps the recorded verdicts.
    rescored = cli("rescore", "r.json", "--tasks", "suite.json", cwd=tmp_path)
    assert rescored.stdout.splitlines()[-1].startswith(
        "rescored 8 attempt(s) against tiny 1.0.0: 0 verdict(s) changed"
    )


def test_a_reply_whose_citations_break_the_contract_is_an_agent_error(
    tmp_path: Path, docs: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    write_suite([task("exact", ["a.md"])], workspace="docs")
    write_agent(
        "def run_task(task, options):\n"
        '    return {"answer": "19:00", "steps": 1, "tokens": 1, "citations": "a.md"}\n',
        "bad.py",
    )
    cli("run", "--agent", "bad.py", "--tasks", "suite.json", "--out", "r.json", cwd=tmp_path)
    (row,) = json.loads((tmp_path / "r.json").read_text())["results"]
    assert row["failure_class"] == "agent_error"
    assert row["error"].startswith("citations: ")


def test_validation_names_cited_files_the_documents_lack(
    tmp_path: Path, docs: Path, write_suite: Callable[..., Path]
) -> None:
    write_suite([task("a", ["a.md"]), task("b", ["missing.md"]), task("c", []),
                 task("d", ["../a.md"])], workspace="docs")  # fmt: skip
    done = cli("validate", "suite.json", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "suite suite.json, task c: field 'expect_citations': List should have at least 1 item "
        "after validation, not 0",
        "suite suite.json, task d: field 'expect_citations': '../a.md' leaves the workspace "
        "('..'); give a path inside it",
    ]
    write_suite([task("a", ["a.md"]), task("b", ["missing.md"])], workspace="docs")
    done = cli("validate", "suite.json", cwd=tmp_path)
    assert done.stdout.splitlines() == [
        "suite suite.json, task b: field 'expect_citations': no file 'missing.md' in docs/; "
        "name a file of the suite's documents"
    ]


@pytest.mark.parametrize(
    ("quote", "held"),
    [
        ("The lamp is lit at 19:00 every evening.", True),
        ("  the   lamp IS lit\tat 19:00 ", True),
        ("The lamp is lit at 19:00 every night.", False),  # one word off
        ("The lamp is lit at 19:0", True),  # a prefix is still a quote
        ("The lamp is lit at 19:000", False),
        ("", False),
    ],
)
def test_quote_matching_table(quote: str, held: bool) -> None:
    verdict = judge_citations(["a.md"], [Citation(file="a.md", quote=quote)],
                              {"a.md": normalise(A_TEXT)})  # fmt: skip
    assert verdict.ok is held
    assert normalise("A\n\tB  c") == "a b c"


def test_the_reference_agent_cites_what_it_read(
    tmp_path: Path, mock_model: Callable[..., MockModelServer]
) -> None:
    """On the shipped `cited` suite, builtin:minimal's answer cites the handbook line."""
    search = {"name": "search_documents", "arguments": {"query": "emergency exit door"}}
    answer = {"content": "The north door is the emergency exit."}
    server = mock_model({"replies": [{"tool_calls": [search]}, answer]})
    done = cli("run", "--agent", "builtin:minimal", "--tasks", "cited", "--task-id", "c-exit",
               "--base-url", server.base_url, "--model", "m", "--out", "r.json",
               cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (row,) = json.loads((tmp_path / "r.json").read_text())["results"]
    assert row["checks"]["citations_ok"] is True and row["checks"]["bad_citations"] == []
    assert row["citations"][0] == {
        "file": "observatory-handbook.md",
        "quote": "The emergency exit is the north door, next to the chart table.",
    }
