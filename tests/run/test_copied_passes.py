"""A pass made mostly of text copied from the task or the documents is flagged, for
every agent: in the row (copied_share), run's summary, every report format, the viewer
and compare's verdict when it moves the difference."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_eval.viewer import Library, Views

Cli = Callable[..., subprocess.CompletedProcess[str]]
DOC = (
    "# Runbook\n\nThe model gateway listens on port 4000 and forwards every request to the "
    "inference server, which keeps its weights on the shared disk in the study. Backups run "
    "every Sunday, in a window from 02:00 to 04:00, and nothing is restarted during them.\n"
)
ECHO = """
from pathlib import Path


def run_task(task, options):
    docs = "".join(p.read_text() for p in sorted(Path(options["workspace"]).glob("*.md")))
    return {"answer": task + " " + docs, "steps": 1, "tokens": 10}
"""
HONEST = """
def run_task(task, options):
    answer = "4000" if "port" in task else "I could not find that."
    return {"answer": answer, "steps": 1, "tokens": 10}
"""
TASKS = [
    {"id": "t-port", "category": "retrieval",
     "task": "Which port does the model gateway listen on? Answer with the number.",
     "expect_in_answer": ["4000"]},
    {"id": "t-backup", "category": "retrieval",
     "task": "On which day do backups run? Answer with the day.",
     "expect_in_answer": ["sunday"]},
]  # fmt: skip


def setup(folder: Path) -> None:
    (folder / "docs").mkdir()
    (folder / "docs" / "runbook.md").write_text(DOC, encoding="utf-8")
    suite = {"name": "copy", "version": "1.0.0", "workspace": "docs", "tasks": TASKS}
    (folder / "suite.json").write_text(json.dumps(suite), encoding="utf-8")
    (folder / "echo_agent.py").write_text(ECHO, encoding="utf-8")
    (folder / "honest_agent.py").write_text(HONEST, encoding="utf-8")


def run(agent_eval: Cli, folder: Path, agent: str, out: str) -> subprocess.CompletedProcess[str]:
    args = ["run", "--agent", agent, "--tasks", "suite.json", "--out", out, "--repeats", "2"]
    return agent_eval(*args, cwd=folder)


@pytest.fixture
def runs(agent_eval: Cli, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], ...]:
    setup(tmp_path)
    return (
        run(agent_eval, tmp_path, "honest_agent.py", "honest.json"),
        run(agent_eval, tmp_path, "echo_agent.py", "echo.json"),
    )


def rows(path: Path) -> list[dict[str, object]]:
    return list(json.loads(path.read_text(encoding="utf-8"))["results"])


def test_the_row_and_the_summary_flag_the_echo_not_the_honest_answer(
    runs: tuple[subprocess.CompletedProcess[str], ...], tmp_path: Path
) -> None:
    honest, echo = runs
    assert "copied " not in honest.stdout
    assert {row["copied_share"] for row in rows(tmp_path / "honest.json")} == {0.0}
    echoed = rows(tmp_path / "echo.json")
    assert all(row["checks"]["passed"] for row in echoed)  # the checks are fooled...
    assert all(float(row["copied_share"]) > 0.9 for row in echoed)  # type: ignore[arg-type]
    line = next(line for line in echo.stdout.splitlines() if line.startswith("copied "))
    head, names = line.split(": ")  # ...and the summary says so, naming the passes
    assert head == (
        "copied        4 of 4 pass(es) mostly copy the task or the documents "
        "(copied_share >= 0.5, 16+ words)"
    )
    assert sorted(names.split(", ")) == ["t-backup r1", "t-backup r2", "t-port r1", "t-port r2"]
    summary = json.loads((tmp_path / "echo.json").read_text(encoding="utf-8"))["run"]["summary"]
    assert summary["copied_passes"] == 4


@pytest.mark.parametrize("form", ["text", "markdown", "html", "junit", "json"])
def test_every_report_format_flags_the_copied_passes(
    runs: tuple[subprocess.CompletedProcess[str], ...], agent_eval: Cli, tmp_path: Path, form: str
) -> None:
    done = agent_eval("report", "echo.json", "--format", form, "--out", f"r.{form}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / f"r.{form}").read_text(encoding="utf-8")
    if form == "json":
        flagged = json.loads(text)["summary"]["copied_passes"]
        assert sorted((c["task_id"], c["attempt"]) for c in flagged) == [
            ("t-backup", 1), ("t-backup", 2), ("t-port", 1), ("t-port", 2)
        ]  # fmt: skip
    elif form == "junit":
        assert '<property name="copied_passes" value="4" />' in text
        assert "copied: r1 copied_share" in text
    else:
        assert "4 of 4 passes mostly copy the task or the documents" in " ".join(text.split())
    honest = agent_eval("report", "honest.json", "--format", form, cwd=tmp_path).stdout
    assert "mostly copy" not in honest and "copied: r" not in honest


def test_the_viewer_flags_the_attempt_and_the_run(
    runs: tuple[subprocess.CompletedProcess[str], ...], tmp_path: Path
) -> None:
    views = Views(Library([tmp_path / "echo.json"]))
    (card,) = views.runs()["runs"]
    assert len(views.run(card["id"])["summary"]["copied_passes"]) == 4
    page = views.attempt(card["id"], 0)
    assert page["copied"] is True and page["copied_share"] > 0.9


def test_compare_names_the_copied_passes_when_they_move_the_difference(
    runs: tuple[subprocess.CompletedProcess[str], ...], agent_eval: Cli, tmp_path: Path
) -> None:
    done = agent_eval("compare", "honest.json", "echo.json", "--format", "json", cwd=tmp_path)
    result = json.loads(done.stdout)
    assert result["copied"]["a"] == 0 and result["copied"]["b"] == 4
    assert result["copied"]["moves_difference"] is True
    assert result["difference"] > 0 > result["copied"]["difference_without"]
    assert (
        "0 of A's and 4 of B's passes mostly copy the task or the documents" in (result["verdict"])
    )
    same = agent_eval("compare", "honest.json", "honest.json", "--format", "json", cwd=tmp_path)
    assert "mostly copy" not in json.loads(same.stdout)["verdict"]
