"""Reports on files the real runner wrote, and the one-way dependency on results files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

Invoke = Any


def test_reports_read_what_the_runner_writes(
    agent_eval: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, _ = agent_eval(
        "run",
        "--agent",
        "builtin:dump-documents",
        "--tasks",
        "part26",
        "--repeats",
        "2",
        "--out",
        "r.json",
        "--labbook",
        "lb.jsonl",
        "--trajectory-dir",
        "traj",
    )
    assert code in (0, 2)
    written = json.loads(Path("r.json").read_text())
    code, out, err = agent_eval("report", "r.json", "--format", "json")
    assert (code, err) == (0, "")
    summary = json.loads(out)["summary"]
    assert summary["attempts"] == written["run"]["summary"]["runs"]
    assert summary["passed"] == written["run"]["summary"]["passed"]
    assert summary["within_task_var"] is not None
    for fmt in ("text", "markdown", "junit", "html"):
        code, out, err = agent_eval("report", "r.json", "--format", fmt)
        assert (code, err) == (0, "") and out
    code, out, _ = agent_eval("compare", "r.json", "r.json", "--format", "json")
    same = json.loads(out)
    assert code == 0 and same["difference"] == 0 and same["p_fixed_suite"] == 1.0
    code, out, _ = agent_eval("history", "--labbook", "lb.jsonl", "--format", "json")
    history = json.loads(out)
    assert code == 0 and history["problems"] == [] and len(history["runs"]) == 1


def test_report_imports_nothing_of_the_runner() -> None:
    probe = (
        "import sys, agent_eval.report, agent_eval.report.text; "
        "bad = sorted(m for m in sys.modules if m.startswith(('agent_eval.run', "
        "'agent_eval.agents', 'agent_eval.cli'))); print(bad)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "[]"


MARKDOWN_AGENT = """
SCAFFOLD_NAME = "[all tests passed](https://scaffold.invalid/)"

def run_task(task, options):
    raise RuntimeError("see ![pixel](https://pixel.invalid/p.png) and [proof](https://proof.invalid/)")
"""


def test_the_markdown_report_shows_what_an_agent_wrote_as_text(
    agent_eval: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CI summary renders Markdown: an agent's name and error, written as an image and
    links, come out as text, so the summary neither fetches the image nor links it."""
    from markdown_it import MarkdownIt

    monkeypatch.chdir(tmp_path)
    Path("agent.py").write_text(MARKDOWN_AGENT, encoding="utf-8")
    code, _, _ = agent_eval("run", "--agent", "agent.py", "--tasks", "part26", "--task-id",
                            "r-backup-window", "--sandbox", "off", "--out", "r.json")  # fmt: skip
    assert code == 2
    code, out, _ = agent_eval("report", "r.json", "--format", "markdown")
    assert code == 0
    tokens = MarkdownIt("commonmark").enable("table").parse(out)
    inline = [child for token in tokens for child in token.children or []]
    assert [t.type for t in inline if t.type in ("image", "link_open")] == []
    text = "".join(t.content for t in inline if t.type == "text")
    assert "see ![pixel](https://pixel.invalid/p.png) and [proof](https://proof.invalid/)" in text
    assert "[all tests passed](https://scaffold.invalid/)" in text
