"""The reading API other tools build on: every shape loads into the same typed records,
rows stream one at a time, and a journal reads while its run is still writing it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_eval.errors import ResultsError
from agent_eval.records import Checks
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
SHAPES = ["course-results.json", "schema1-results.json"]


@pytest.mark.parametrize("name", SHAPES)
def test_every_shape_gives_the_same_records(name: str) -> None:
    rows = list(iter_rows(DATA / name))
    course = list(iter_rows(DATA / "course-results.json"))
    strip = {"failure_class", "checks"}
    assert [r.model_dump(exclude=strip) for r in rows] == [
        r.model_dump(exclude=strip) for r in course
    ]
    assert [r.failure_class for r in rows] == [
        "passed", "passed", "wrong_answer", "passed", "over_budget", "passed"
    ]  # fmt: skip
    assert [r.checks.forbidden for r in rows] == [[]] * 6
    loaded = load_results(DATA / name)
    assert [(a.id, a.attempt, a.passed) for a in loaded.rows] == [
        (r.id, r.attempt, r.passed) for r in rows
    ]
    assert loaded.schema == (None if name.startswith("course") else 1)
    head = read_head(DATA / name)
    assert head.run == loaded.run and [t.id for t in head.per_task] == [
        "r-gateway-port", "r-backup-window", "t-list-workspace"
    ]  # fmt: skip


def test_a_newer_schema_is_refused_with_the_fix(tmp_path: Path) -> None:
    document = json.loads((DATA / "course-results.json").read_text())
    path = tmp_path / "new.json"
    path.write_text(json.dumps({"schema": 3, **document}))
    with pytest.raises(ResultsError, match=r"schema 3 is newer than this agent-eval reads "):
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
    assert header == {"schema": 2, "run_id": "x"}
    # The retry replaced the attempt's infra error; the torn line is not a row yet.
    assert [(r.id, r.attempt, r.failure_class) for r in rows] == [
        ("a", 1, "passed"), ("b", 1, "passed")
    ]  # fmt: skip
    journal.close()
