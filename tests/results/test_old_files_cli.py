"""Old numbers carry over: the course harness's files and agent-eval's schema 1 are read by
every command, as a user types it, and what they do not record shows as not recorded.

The course fixtures were written by the course harness itself, run on the deterministic
agents of data/course_agents/ (data/make_course_fixtures.py makes them again); the
labbook holds its ``run`` objects, one a line.
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

from agent_eval.records import RESULTS_SCHEMA
from agent_eval.suite import load_suite

DATA = Path(__file__).with_name("data")
COURSE_A, COURSE_B = DATA / "course-results.json", DATA / "course-results-b.json"
RAISES = DATA / "course-results-raises.json"
SCHEMA_1 = DATA / "schema1-results.json"
COURSE_KEYS = ["id", "category", "attempt", "answer", "steps", "tokens", "prompt_tokens",
               "completion_tokens", "seconds", "stopped", "checks", "trajectory_file"]  # fmt: skip
COURSE_CHECKS = ["missing", "forbidden", "regex_ok", "tool_ok", "within_steps", "tools_used",
                 "passed"]  # fmt: skip
COURSE_TASK_KEYS = ["id", "category", "attempts", "successes", "success_rate", "steps_min",
                    "steps_max", "tokens_min", "tokens_max", "first_failure"]  # fmt: skip
NO_HASH = "records no suite hash (the course harness writes none)"
SUITE = "course compatibility suite 1.0.0"


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
        if path.is_file():
            shutil.copy(path, tmp_path / path.name)
    return tmp_path


def test_the_fixtures_have_the_course_shape() -> None:
    for path in (COURSE_A, COURSE_B, RAISES):
        document = json.loads(path.read_text())
        assert list(document) == ["run", "per_task", "results"]
        assert "suite_hash" not in document["run"] and "schema" not in document
        assert all(list(task) == COURSE_TASK_KEYS for task in document["per_task"])
        for row in document["results"]:
            assert list(row) == COURSE_KEYS and list(row["checks"]) == COURSE_CHECKS


@pytest.mark.parametrize(
    ("name", "figures", "classes"),
    [
        ("course-results.json", (12, 4, 6, 4237),
         {"over_budget": 3, "passed": 4, "wrong_answer": 5}),
        ("course-results-raises.json", (6, 0, 6, 0), {"agent_error": 6}),
        ("schema1-results.json", (6, 4, 3, 43860),
         {"over_budget": 1, "passed": 4, "wrong_answer": 1}),
    ],
)  # fmt: skip
def test_report_reads_old_files_with_their_figures(
    files: Path, name: str, figures: tuple[int, ...], classes: dict[str, int]
) -> None:
    done = cli("report", name, "--format", "json", cwd=files)
    assert (done.returncode, done.stderr) == (0, "")
    report = json.loads(done.stdout)
    summary = report["summary"]
    assert (summary["attempts"], summary["passed"], summary["tasks"], summary["total_tokens"]) == (
        figures
    )
    # The course records no class: derived from its checks and stop reason.
    assert summary["failure_classes"] == classes
    run = json.loads((files / name).read_text())["run"]
    assert summary["run"]["date"] == run["date"][:10]
    assert (summary["run"]["suite_hash"] is not None) is name.startswith("schema1")
    assert all(list(task)[:10] == COURSE_TASK_KEYS for task in report["per_task"])


def test_the_report_per_task_view_is_the_course_files_own(files: Path) -> None:
    done = cli("report", "course-results.json", "--format", "json", cwd=files)
    course = json.loads(COURSE_A.read_text())["per_task"]
    mine = [
        {key: task[key] for key in COURSE_TASK_KEYS} for task in json.loads(done.stdout)["per_task"]
    ]
    for task in mine:  # ours adds its own checks after the course's
        if task["first_failure"] is not None:
            task["first_failure"] = {k: task["first_failure"][k] for k in COURSE_CHECKS}
    assert mine == course


def test_a_raising_agents_course_rows_are_agent_errors_with_the_exception(files: Path) -> None:
    done = cli("report", "course-results-raises.json", "--format", "json", cwd=files)
    tasks = json.loads(done.stdout)["per_task"]
    assert tasks[0]["first_failure_reason"] == (
        "r1: entry point raised ValueError: no answer for 'which' questions"
    )
    text = cli("report", "course-results-raises.json", cwd=files)
    assert "agent_error" in text.stdout and "r1: agent_error:" not in text.stdout


@pytest.mark.parametrize("fmt", ["markdown", "junit", "html"])
def test_every_report_format_reads_a_course_file(files: Path, fmt: str) -> None:
    done = cli("report", "course-results.json", "--format", fmt, "--out", f"r.{fmt}", cwd=files)
    assert (done.returncode, done.stderr) == (0, f"{fmt} report written to r.{fmt}\n")
    assert "review-date" in (files / f"r.{fmt}").read_text()


def test_report_text_says_the_course_file_records_no_hash(files: Path) -> None:
    done = cli("report", "course-results.json", cwd=files)
    assert done.returncode == 0, done.stderr
    run_id = json.loads(COURSE_A.read_text())["run"]["run_id"]
    assert done.stdout.splitlines()[1] == f"suite {SUITE} (hash not recorded), run {run_id}"


def test_a_course_row_whose_checks_do_not_tell_has_no_class(files: Path) -> None:
    document = json.loads((files / "course-results.json").read_text())
    row = document["results"][0]
    row["checks"]["passed"] = False  # failed, yet every check holds: nothing says why
    row["stopped"] = None
    (files / "odd.json").write_text(json.dumps(document, indent=2))
    done = cli("report", "odd.json", "--format", "json", cwd=files)
    assert done.returncode == 0, done.stderr
    classes = json.loads(done.stdout)["summary"]["failure_classes"]
    assert classes == {"over_budget": 3, "passed": 3, "unknown": 1, "wrong_answer": 5}


def test_compare_pairs_course_runs_by_name_and_version_and_warns(files: Path) -> None:
    done = cli("compare", "course-results.json", "course-results-b.json", "--format", "json",
               cwd=files)  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["tasks"], result["mean_a"], result["mean_b"]) == (
        6, pytest.approx(4 / 12), pytest.approx(6 / 12)
    )  # fmt: skip
    changed = {t["task_id"]: t["change"] for t in result["per_task"] if t["change"] != "same"}
    assert list(changed) == ["backup-day"]
    assert result["unverified_suites"] == ["course-results.json", "course-results-b.json"]
    assert done.stderr.splitlines() == [
        f"Warning: course-results.json {NO_HASH}, so a change to its tasks cannot be "
        "detected; it is paired by suite name and version",
        f"Warning: course-results-b.json {NO_HASH}, so a change to its tasks cannot be "
        "detected; it is paired by suite name and version",
    ]


def test_compare_still_refuses_course_runs_of_different_suites(files: Path) -> None:
    document = json.loads((files / "course-results-b.json").read_text())
    document["run"]["task_set_version"] = "1.1.0"
    (files / "other.json").write_text(json.dumps(document, indent=2))
    done = cli("compare", "course-results.json", "other.json", cwd=files)
    assert done.returncode == 1
    assert done.stderr.startswith(
        "Error: compare course-results.json other.json: the runs used different suites "
        f"({SUITE} hash not recorded against course compatibility suite 1.1.0 hash not "
        "recorded)"
    )


def test_a_course_suite_without_a_version_reads_as_not_recorded(files: Path) -> None:
    document = json.loads((files / "course-results.json").read_text())
    document["run"]["task_set_version"] = None  # the course writes spec.get("version")
    (files / "unversioned.json").write_text(json.dumps(document, indent=2))
    done = cli("report", "unversioned.json", cwd=files)
    assert done.returncode == 0, done.stderr
    assert "suite course compatibility suite not recorded (hash not recorded)" in done.stdout


def test_history_lists_course_and_agent_eval_lines(files: Path) -> None:
    labbook = files / "course-labbook.jsonl"
    ours = json.loads((files / "schema1-results.json").read_text())["run"]
    with labbook.open("a") as handle:
        handle.write(json.dumps(ours) + "\n")
    done = cli("history", "--labbook", labbook.name, "--format", "json", cwd=files)
    assert (done.returncode, done.stderr) == (0, "")
    history = json.loads(done.stdout)
    assert history["problems"] == [] and history["suite_changes"] == []
    runs = [(r["scaffold"], r["quant"], r["suite_hash"] is None, r["passed"], r["attempts"])
            for r in history["runs"]]  # fmt: skip
    assert runs == [
        ("scaffold-minimal", "Q4_K_M", False, 4, 6),  # schema 1, from 2025
        ("steady", "Q4_K_M", True, 4, 12),
        ("steady", "Q8_0", True, 6, 12),
        ("raises", "unknown", True, 0, 6),
    ]
    text = cli("history", "--labbook", labbook.name, cwd=files)
    assert text.stdout.splitlines()[0] == "4 run(s) in course-labbook.jsonl"


@pytest.mark.parametrize(
    ("name", "figures"),
    [("course-results.json", (12, "course compatibility suite 1.0.0", "0.333")),
     ("schema1-results.json", (6, "Part 26 agent task suite 1.0.0", "0.667"))],
)  # fmt: skip
def test_rescore_writes_an_old_file_again_in_the_current_schema(
    files: Path, name: str, figures: tuple[int, str, str]
) -> None:
    suite = "course-suite.json" if name.startswith("course") else "part26"
    done = cli("rescore", name, "--tasks", suite, "--out", "new.json", cwd=files)
    attempts, suite_name, rate = figures
    assert done.stdout.splitlines() == [
        f"rescored {attempts} attempt(s) against {suite_name}: 0 verdict(s) changed, "
        f"success rate {rate}",
        "written to new.json",
    ]
    assert done.returncode == 2  # some attempts failed, as before
    new = json.loads((files / "new.json").read_text())
    assert new["schema"] == RESULTS_SCHEMA
    assert new["run"]["suite_hash"] == load_suite(str(files / suite) if suite.endswith(".json")
                                                  else suite).hash  # fmt: skip
    old = json.loads((DATA / name).read_text())["results"]
    assert [list(row)[:12] for row in new["results"]] == [COURSE_KEYS] * attempts
    assert [list(task)[:10] for task in new["per_task"]] == [COURSE_TASK_KEYS] * len(
        new["per_task"]
    )
    if name.startswith("course"):
        assert [row["checks"] for row in old] == [
            {key: row["checks"][key] for key in COURSE_CHECKS} for row in new["results"]
        ]
    again = cli("report", "new.json", "--format", "json", cwd=files)
    assert json.loads(again.stdout)["summary"]["passed"] == 4


def test_export_otel_reads_a_course_file_and_names_what_is_missing(files: Path) -> None:
    done = cli("export-otel", "course-results.json", "--otlp-endpoint", "http://127.0.0.1:9",
               cwd=files)  # fmt: skip
    assert done.returncode == 1
    assert done.stdout == "0 of 12 attempts sent to http://127.0.0.1:9/v1/traces\n"
    warnings = done.stderr.splitlines()[:-1]
    assert len(warnings) == 12 and all(w.endswith(".jsonl not found") for w in warnings)
    first = json.loads(COURSE_A.read_text())["results"][0]["trajectory_file"]
    assert warnings[0] == f"Warning: port r1: trajectory file {first} not found"


def test_duel_resume_names_a_course_results_file_as_no_duel(files: Path) -> None:
    done = cli("duel", "--resume", "course-results.json", cwd=files)
    assert done.returncode == 1
    assert done.stderr.startswith("Error: --resume course-results.json: not a duel file")


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


def test_resume_adds_repeats_to_a_course_run(files: Path) -> None:
    shutil.copy(DATA / "course_agents" / "steady.py", files / "steady.py")
    done = cli("run", "--agent", "steady.py", "--tasks", "course-suite.json", "--repeats", "3",
               "--resume", "course-results.json", "--allow-empty-workspace", cwd=files)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "resumed: 12 finished attempt(s) kept, not re-run" in done.stderr
    old = json.loads(COURSE_A.read_text())
    new = json.loads((files / "course-results.json").read_text())
    assert new["schema"] == RESULTS_SCHEMA and new["run"]["run_id"] == old["run"]["run_id"]
    assert new["run"]["lab"] == old["run"]["lab"]  # no --lab given: the run keeps its own
    assert new["run"]["suite_hash"] == load_suite(str(files / "course-suite.json")).hash
    rows = new["results"]
    assert [(r["id"], r["attempt"]) for r in rows[:12]] == [
        (r["id"], r["attempt"]) for r in old["results"]
    ]
    assert [r["attempt"] for r in rows[12:]] == [3] * 6  # attempt-major: every task of r3
    assert [{k: r[k] for k in COURSE_KEYS if k != "checks"} for r in rows[:12]] == [
        {k: r[k] for k in COURSE_KEYS if k != "checks"} for r in old["results"]
    ]


def test_resume_of_a_course_run_refuses_another_suite(files: Path) -> None:
    shutil.copy(DATA / "course_agents" / "steady.py", files / "steady.py")
    suite = json.loads((files / "course-suite.json").read_text())
    suite["version"] = "2.0.0"
    (files / "other-suite.json").write_text(json.dumps(suite))
    done = cli("run", "--agent", "steady.py", "--tasks", "other-suite.json", "--repeats", "3",
               "--resume", "course-results.json", "--allow-empty-workspace", cwd=files)  # fmt: skip
    assert done.returncode == 1
    assert done.stderr == (
        "Error: --resume course-results.json: that run used suite course compatibility suite "
        "1.0.0, not course compatibility suite 2.0.0; give its suite\n"
    )
