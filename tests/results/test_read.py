"""The reading API other tools build on: every shape loads into the same typed records,
rows stream one at a time, and a journal reads while its run is still writing it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_eval.errors import ResultsError
from agent_eval.records import RESULTS_SCHEMA, Checks
from agent_eval.results import (
    AttemptResult,
    Journal,
    Order,
    iter_rows,
    load_results,
    read_head,
    read_journal,
    row_json,
)

DATA = Path(__file__).with_name("data")
COURSE_CLASSES = [  # attempt-major, as the course harness wrote them
    ("port", 1, "passed"), ("backup-day", 1, "wrong_answer"), ("machines", 1, "over_budget"),
    ("review-date", 1, "passed"), ("window", 1, "passed"), ("list-files", 1, "wrong_answer"),
    ("port", 2, "passed"), ("backup-day", 2, "wrong_answer"), ("machines", 2, "over_budget"),
    ("review-date", 2, "over_budget"), ("window", 2, "wrong_answer"),
    ("list-files", 2, "wrong_answer"),
]  # fmt: skip
SCHEMA_1_CLASSES = [
    ("r-gateway-port", 1, "passed"), ("r-gateway-port", 2, "passed"),
    ("r-backup-window", 1, "wrong_answer"), ("r-backup-window", 2, "passed"),
    ("t-list-workspace", 1, "over_budget"), ("t-list-workspace", 2, "passed"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "schema", "classes"),
    [("course-results.json", None, COURSE_CLASSES), ("schema1-results.json", 1, SCHEMA_1_CLASSES)],
)
def test_every_shape_loads_into_the_current_records(
    name: str, schema: int | None, classes: list[tuple[str, int, str]]
) -> None:
    rows = list(iter_rows(DATA / name))
    assert [(r.id, r.attempt, r.failure_class) for r in rows] == classes
    loaded = load_results(DATA / name)
    assert [(a.id, a.attempt, a.passed) for a in loaded.rows] == [
        (r.id, r.attempt, r.passed) for r in rows
    ]
    assert loaded.schema == schema
    head = read_head(DATA / name)
    ids = list(dict.fromkeys(r.id for r in rows))
    assert head.run == loaded.run and [t.id for t in head.per_task] == ids


def test_old_per_task_keys_and_sentences_move_to_the_current_keys() -> None:
    head = read_head(DATA / "schema1-results.json")
    first = head.per_task[0]
    assert (first.steps_min, first.steps_max, first.tokens_min, first.tokens_max) == (
        4, 4, 6120, 6240
    )  # fmt: skip
    failed = head.per_task[1]
    # Schema 1 kept a sentence; its checks object was never recorded.
    assert failed.first_failure is None and failed.first_failure_reason


def test_a_course_per_task_view_keeps_the_checks_of_the_first_failure() -> None:
    head = read_head(DATA / "course-results.json")
    document = json.loads((DATA / "course-results.json").read_text())
    dumped = [t.model_dump(exclude_none=True) for t in head.per_task]
    assert dumped == [{k: v for k, v in t.items() if v is not None} for t in document["per_task"]]
    review = head.per_task[3]
    assert review.first_failure is not None and review.first_failure["within_steps"] is False
    assert review.first_failure["tools_used"] == [
        "search_documents", "search_documents", "read_file", "search_documents"
    ]  # fmt: skip


def test_a_newer_schema_is_refused_with_the_fix(tmp_path: Path) -> None:
    document = json.loads((DATA / "course-results.json").read_text())
    path = tmp_path / "new.json"
    path.write_text(json.dumps({"schema": RESULTS_SCHEMA + 1, **document}))
    with pytest.raises(
        ResultsError, match=rf"schema {RESULTS_SCHEMA + 1} is newer than this agent-eval reads "
    ):
        list(iter_rows(path))


def _row(task_id: str, attempt: int, failure: str = "passed") -> AttemptResult:
    checks = Checks(missing=[], forbidden=[], regex_ok=True, tool_ok=True, within_steps=True,
                    tools_used=[], passed=failure == "passed")  # fmt: skip
    return AttemptResult(id=task_id, category="c", attempt=attempt, answer="a", steps=1,
                         tokens=1, seconds=0.1, stopped="finished", checks=checks,
                         failure_class=failure)  # fmt: skip


def test_a_journal_reads_while_it_is_written(tmp_path: Path) -> None:
    path = tmp_path / "run.journal.jsonl"
    journal = Journal(path, {"run_id": "x"}, Order(("a", "b"), 2))
    for row in (_row("a", 1), _row("b", 1, "infra_error"), _row("b", 1)):
        journal.append(row, row_json(row))
    with path.open("ab") as handle:
        handle.write(row_json(_row("a", 2)).encode()[:40])  # an append in progress
    header, rows = read_journal(path)
    assert header == {"schema": RESULTS_SCHEMA, "run_id": "x"}
    # The retry replaced the attempt's infra error; the torn line is not a row yet.
    assert [(r.id, r.attempt, r.failure_class) for r in rows] == [
        ("a", 1, "passed"), ("b", 1, "passed")
    ]  # fmt: skip
    journal.close()


def test_a_schema_2_file_loads_with_its_old_per_task_keys(tmp_path: Path) -> None:
    course = json.loads((DATA / "course-results.json").read_text())
    rows = [{**row, "failure_class": None} for row in course["results"]]
    old_tasks = [
        {"id": t["id"], "attempts": t["attempts"], "successes": t["successes"],
         "success_rate": t["success_rate"], "min_steps": t["steps_min"],
         "max_steps": t["steps_max"], "min_tokens": t["tokens_min"],
         "max_tokens": t["tokens_max"],
         "first_failure": None if t["first_failure"] is None else "r1: missing 'sunday'",
         "category": t["category"], "pass_hat_k": {"1": 1.0}}
        for t in course["per_task"]
    ]  # fmt: skip
    path = tmp_path / "schema2.json"
    path.write_text(json.dumps({"schema": 2, "run": course["run"], "per_task": old_tasks,
                                "results": rows}))  # fmt: skip
    head = read_head(path)
    assert [(t.steps_min, t.steps_max, t.tokens_min, t.tokens_max) for t in head.per_task] == [
        (t["steps_min"], t["steps_max"], t["tokens_min"], t["tokens_max"])
        for t in course["per_task"]
    ]
    backup = head.per_task[1]
    assert (backup.first_failure, backup.first_failure_reason) == (None, "r1: missing 'sunday'")
    loaded = load_results(path)
    assert loaded.schema == 2 and len(loaded.rows) == 12
