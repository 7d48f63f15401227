"""Old numbers carry over: the course harness's files and agent-eval's schema 1 are read by
every command, as a user types it, and what they do not record shows as not recorded.

The course fixtures are written in exactly the course harness's shape: its ``run`` keys,
its ``per_task`` and ``results`` keys, ``json.dump(indent=2)``, no ``schema`` and no
``suite_hash``; the labbook holds its ``run`` objects, one a line.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_eval.suite import load_suite

DATA = Path(__file__).with_name("data")
COURSE_A, COURSE_B = DATA / "course-results.json", DATA / "course-results-b.json"
SCHEMA_1 = DATA / "schema1-results.json"
COURSE_KEYS = ["id", "category", "attempt", "answer", "steps", "tokens", "prompt_tokens",
               "completion_tokens", "seconds", "stopped", "checks", "trajectory_file"]  # fmt: skip
COURSE_CHECKS = ["missing", "forbidden", "regex_ok", "tool_ok", "within_steps", "tools_used",
                 "passed"]  # fmt: skip
NO_HASH = "records no suite hash (the course harness writes none)"


def cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    return subprocess.run(
        [sys.executable, "-m", "agent_eval", *map(str, args)],
        cwd=cwd, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """The fixtures copied into a folder of the test's own."""
    for path in DATA.iterdir():
        shutil.copy(path, tmp_path / path.name)
    return tmp_path


def test_the_fixtures_have_the_course_shape() -> None:
    document = json.loads(COURSE_A.read_text())
    assert list(document) == ["run", "per_task", "results"]
    assert "suite_hash" not in document["run"] and "schema" not in document
    for row in document["results"]:
        assert list(row) == COURSE_KEYS and list(row["checks"]) == COURSE_CHECKS


@pytest.mark.parametrize("name", ["course-results.json", "schema1-results.json"])
def test_report_reads_old_files_with_their_figures(files: Path, name: str) -> None:
    done = cli("report", name, "--format", "json", cwd=files)
    assert (done.returncode, done.stderr) == (0, "")
    summary = json.loads(done.stdout)["summary"]
    assert (summary["attempts"], summary["passed"], summary["tasks"]) == (6, 4, 3)
    assert summary["total_tokens"] == 43860
    # The course records no class: derived from its checks and stop reason.
    assert summary["failure_classes"] == {"over_budget": 1, "passed": 4, "wrong_answer": 1}
    assert summary["run"]["date"] == "2025-03-01"
    hashed = name.startswith("schema1")
    assert (summary["run"]["suite_hash"] is not None) is hashed


@pytest.mark.parametrize("fmt", ["markdown", "junit", "html"])
def test_every_report_format_reads_a_course_file(files: Path, fmt: str) -> None:
    done = cli("report", "course-results.json", "--format", fmt, "--out", f"r.{fmt}", cwd=files)
    assert (done.returncode, done.stderr) == (0, f"{fmt} report written to r.{fmt}\n")
    assert "t-list-workspace" in (files / f"r.{fmt}").read_text()


def test_report_text_says_the_course_file_records_no_hash(files: Path) -> None:
    done = cli("report", "course-results.json", cwd=files)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == (
        "suite Part 26 agent task suite 1.0.0 (hash not recorded), run 20250301-101500"
    )


def test_a_course_row_whose_checks_do_not_tell_has_no_class(files: Path) -> None:
    document = json.loads((files / "course-results.json").read_text())
    row = document["results"][0]
    row["checks"]["passed"] = False  # failed, yet every check holds: nothing says why
    row["stopped"] = None
    (files / "odd.json").write_text(json.dumps(document, indent=2))
    done = cli("report", "odd.json", "--format", "json", cwd=files)
    assert done.returncode == 0, done.stderr
    classes = json.loads(done.stdout)["summary"]["failure_classes"]
    assert classes == {"over_budget": 1, "passed": 3, "unknown": 1, "wrong_answer": 1}


def test_compare_pairs_course_runs_by_name_and_version_and_warns(files: Path) -> None:
    done = cli("compare", "course-results.json", "course-results-b.json", "--format", "json",
               cwd=files)  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["tasks"], result["mean_a"], result["mean_b"]) == (3, pytest.approx(2 / 3), 1.0)
    assert result["unverified_suites"] == ["course-results.json", "course-results-b.json"]
    assert done.stderr.splitlines() == [
        f"Warning: course-results.json {NO_HASH}, so a change to its tasks cannot be "
        "detected; it is paired by suite name and version",
        f"Warning: course-results-b.json {NO_HASH}, so a change to its tasks cannot be "
        "detected; it is paired by suite name and version",
    ]


def test_compare_a_schema_1_run_with_a_course_run(files: Path) -> None:
    done = cli("compare", "schema1-results.json", "course-results-b.json", cwd=files)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"Warning: course-results-b.json {NO_HASH}, so a change to its tasks cannot be "
        "detected; it is paired by suite name and version"
    ]


def test_compare_still_refuses_course_runs_of_different_suites(files: Path) -> None:
    document = json.loads((files / "course-results-b.json").read_text())
    document["run"]["task_set_version"] = "1.1.0"
    (files / "other.json").write_text(json.dumps(document, indent=2))
    done = cli("compare", "course-results.json", "other.json", cwd=files)
    assert done.returncode == 1
    assert done.stderr.startswith(
        "Error: compare course-results.json other.json: the runs used different suites "
        "(Part 26 agent task suite 1.0.0 hash not recorded against Part 26 agent task suite "
        "1.1.0 hash not recorded)"
    )


def test_history_lists_course_and_agent_eval_lines(files: Path) -> None:
    labbook = files / "course-labbook.jsonl"
    ours = json.loads((files / "schema1-results.json").read_text())["run"]
    with labbook.open("a") as handle:
        handle.write(json.dumps(ours) + "\n")
    done = cli("history", "--labbook", labbook.name, "--format", "json", cwd=files)
    assert (done.returncode, done.stderr) == (0, "")
    history = json.loads(done.stdout)
    assert history["problems"] == [] and history["suite_changes"] == []
    runs = [(r["run_id"], r["quant"], r["suite_hash"] is None, r["passed"], r["attempts"])
            for r in history["runs"]]  # fmt: skip
    assert runs == [
        ("20250301-101500", "Q4_K_M", True, 4, 6),
        ("20250301-101500", "Q4_K_M", False, 4, 6),  # schema 1: the full timestamp sorts later
        ("20250308-091000", "Q8_0", True, 6, 6),
    ]
    text = cli("history", "--labbook", labbook.name, cwd=files)
    assert text.stdout.splitlines()[0] == "3 run(s) in course-labbook.jsonl"


@pytest.mark.parametrize("name", ["course-results.json", "schema1-results.json"])
def test_rescore_writes_an_old_file_again_in_the_current_schema(files: Path, name: str) -> None:
    done = cli("rescore", name, "--tasks", "part26", "--out", "new.json", cwd=files)
    assert done.stdout.splitlines() == [
        "rescored 6 attempt(s) against Part 26 agent task suite 1.0.0: 0 verdict(s) changed, "
        "success rate 0.667",
        "written to new.json",
    ]
    assert done.returncode == 2  # some attempts failed, as before
    new = json.loads((files / "new.json").read_text())
    assert new["schema"] == 2 and new["run"]["suite_hash"] == load_suite("part26").hash
    old = json.loads(COURSE_A.read_text())["results"]
    assert [list(row)[:12] for row in new["results"]] == [COURSE_KEYS] * 6
    assert [row["checks"] for row in old] == [
        {key: row["checks"][key] for key in COURSE_CHECKS} for row in new["results"]
    ]
    again = cli("report", "new.json", "--format", "json", cwd=files)
    assert json.loads(again.stdout)["summary"]["passed"] == 4


def test_export_otel_reads_a_course_file_and_names_what_is_missing(files: Path) -> None:
    done = cli("export-otel", "course-results.json", "--otlp-endpoint", "http://127.0.0.1:9",
               cwd=files)  # fmt: skip
    assert done.returncode == 1
    assert done.stdout == "0 of 6 attempts sent to http://127.0.0.1:9/v1/traces\n"
    warnings = done.stderr.splitlines()[:-1]
    assert len(warnings) == 6 and all(w.endswith(".jsonl not found") for w in warnings)
    assert warnings[0] == (
        "Warning: r-gateway-port r1: trajectory file "
        "trajectories/20250301-101500-scaffold-minimal-local_chat-r-gateway-port-r1.jsonl "
        "not found"
    )


SLOW_AGENT = """
import pathlib
CALLS = pathlib.Path(__file__).with_name("calls.log")

def run_task(task, options):
    with CALLS.open("a") as f:
        f.write(f"{options['task_id']} {options['attempt']}\\n")
    return {"answer": "yes", "steps": 1, "tokens": 10}
"""


def _schema_1_row(task_id: str, answer: str) -> dict[str, object]:
    return {
        "task_id": task_id, "category": "c", "attempt": 1, "passed": True,
        "failure_class": "passed", "answer": answer, "steps": 2, "tokens": 20,
        "prompt_tokens": None, "completion_tokens": None, "seconds": 0.5, "stopped": "finished",
        "error": None,
        "checks": {"passed": True, "missing": [], "forbidden_found": [], "regex_ok": None,
                   "tool_ok": None, "within_steps": None, "within_tokens": None,
                   "within_seconds": None, "tools_used": [], "state": []},
        "roles": None, "infra_retries": 0, "changed_files": None, "trajectory_file": None,
    }  # fmt: skip


def test_resume_continues_a_run_journaled_in_schema_1(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[[str], Path]
) -> None:
    suite = write_suite([{"id": f"t{i}", "task": "Say yes.", "expect_in_answer": ["yes"]}
                         for i in range(4)])  # fmt: skip
    write_agent(SLOW_AGENT)
    header = {"run_id": "0123456789ab", "started": "2025-03-01T10:15:00+00:00",
              "suite_hash": load_suite(str(suite)).hash, "agent": "agent.py",
              "model": "local/chat"}  # fmt: skip
    lines = [{"journal": header}, _schema_1_row("t0", "yes, before"), _schema_1_row("t1", "yes")]
    journal = tmp_path / "out.json.journal.jsonl"
    journal.write_text("".join(json.dumps(line) + "\n" for line in lines))
    done = cli("run", "--agent", "agent.py", "--tasks", "suite.json", "--out", "out.json",
               "--resume", "out.json", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "resumed: 2 finished attempt(s) kept, not re-run" in done.stderr
    assert (tmp_path / "calls.log").read_text().split("\n")[:-1] == ["t2 1", "t3 1"]
    document = json.loads((tmp_path / "out.json").read_text())
    assert document["run"]["run_id"] == "0123456789ab"
    assert document["run"]["started_at"] == "2025-03-01T10:15:00+00:00"
    assert document["run"]["date"] == "2025-03-01"
    rows = document["results"]
    assert [(row["id"], row["answer"]) for row in rows] == [
        ("t0", "yes, before"), ("t1", "yes"), ("t2", "yes"), ("t3", "yes")
    ]  # fmt: skip
    assert all(list(row)[:12] == COURSE_KEYS for row in rows)
    assert rows[0]["checks"]["regex_ok"] is True and "forbidden_found" not in rows[0]["checks"]
    assert not journal.exists()  # the run finished
