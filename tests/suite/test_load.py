"""Suite loading: every malformed case is an error naming the task, field and fix."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_eval.errors import SuiteError
from agent_eval.suite import load_suite, shipped_suites, suite_hash

GOOD = {"id": "t1", "task": "Which port?", "expect_in_answer": ["4000"]}


def problems_of(path: Path) -> list[str]:
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    return caught.value.problems


def test_shipped_suite_is_the_course_file_unchanged() -> None:
    loaded = load_suite("part26")
    shipped = Path(__file__).parents[2] / "src/agent_eval/suites/part26/agent-tasks.json"
    assert shipped_suites()["part26"] == loaded.path
    assert loaded.path.read_bytes() == shipped.read_bytes()
    assert (loaded.suite.name, loaded.suite.version) == ("Part 26 agent task suite", "1.0.0")
    assert len(loaded.suite.tasks) == 15
    assert loaded.documents is not None
    names = sorted(p.name for p in loaded.documents.iterdir())
    assert names == ["machine-inventory.md", "model-policy.md", "service-runbook.md"]


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        (
            {**GOOD, "expect_in_anwser": ["x"]},
            "task t1: unknown field 'expect_in_anwser' (did you mean 'expect_in_answer'?)",
        ),
        ({**GOOD, "expect_in_answer": "4000"}, "task t1: field 'expect_in_answer': must be a list"),
        ({**GOOD, "expect_regex": "(unclosed"}, "task t1: field 'expect_regex': the pattern"),
        ({**GOOD, "max_steps": 0}, "task t1: field 'max_steps': Input should be greater than"),
        ({**GOOD, "max_steps": "6"}, "task t1: field 'max_steps': must be an integer"),
        ({"id": "t1"}, "task t1: field 'task': is required; add it"),
        ({**GOOD, "id": "has space"}, "field 'id': use only letters, digits"),
        ({**GOOD, "id": "../up"}, "field 'id': use only letters, digits"),
        ({"task": "no id"}, "task #1: field 'id': is required; add it"),
    ],
)
def test_malformed_task(
    write_suite: Callable[..., Path], task: dict[str, Any], expected: str
) -> None:
    problems = problems_of(write_suite([task]))
    assert any(expected in p for p in problems), problems
    assert all(p.startswith("suite suite.json") for p in problems)
    assert all("\n" not in p for p in problems)


def test_every_problem_is_reported_at_once(write_suite: Callable[..., Path]) -> None:
    tasks = [
        {**GOOD, "expect_in_anwser": ["x"]},
        {**GOOD, "expect_regex": "["},
        {**GOOD, "id": "t2", "expect_tool": 3},
        dict(GOOD),
        "not an object",
    ]
    problems = problems_of(write_suite(tasks, naem="typo"))
    assert len(problems) == 7, problems
    assert "suite suite.json: unknown field 'naem' (did you mean 'name'?)" in problems
    assert sum("duplicate id (also task #1)" in p for p in problems) == 2
    assert any("task t2: field 'expect_tool': must be a string, not int" in p for p in problems)
    assert any("task #5: must be a JSON object" in p for p in problems)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"name": "x", "version": "1", "tasks": []}, "field 'tasks' is empty"),
        ({"name": "x", "tasks": [GOOD]}, "field 'version': is required"),
        ({"name": "x", "version": "1", "tasks": {"a": 1}}, "field 'tasks' must be a list"),
        ({"name": "x", "version": 1, "tasks": [GOOD]}, "field 'version': must be a string"),
        ([GOOD], "the top level must be a JSON object"),
    ],
)
def test_malformed_suite(tmp_path: Path, body: Any, expected: str) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    problems = problems_of(path)
    assert any(expected in p for p in problems), problems


def test_not_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('{"name": "x",\n  "version": }', encoding="utf-8")
    assert problems_of(path) == [
        "suite s.json: not valid JSON at line 2 column 14 (Expecting value); fix the syntax there"
    ]


def test_missing_file_lists_shipped_suites(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match=r"no such file and no shipped suite .* part26"):
        load_suite(tmp_path / "nope.json")


def test_workspace_folder_relative_to_suite(
    tmp_path: Path, write_suite: Callable[..., Path]
) -> None:
    (tmp_path / "docs").mkdir()
    assert load_suite(write_suite([GOOD], workspace="docs")).documents == tmp_path / "docs"
    assert load_suite(write_suite([GOOD], workspace="prose about documents")).documents is None
    assert load_suite(write_suite([GOOD], workspace="../")).documents is None


def test_hash_tracks_content_not_layout(tmp_path: Path, write_suite: Callable[..., Path]) -> None:
    base = load_suite(write_suite([GOOD])).hash
    explicit_default = {**GOOD, "expect_not_in_answer": []}
    assert load_suite(write_suite([explicit_default], comment="new words")).hash == base
    changed = {**GOOD, "expect_in_answer": ["4001"]}
    assert load_suite(write_suite([changed])).hash != base


ids = st.from_regex(r"[A-Za-z0-9._-]{1,12}", fullmatch=True)
texts = st.text(min_size=1, max_size=30)
tasks = st.fixed_dictionaries(
    {"id": ids, "task": texts},
    optional={
        "category": texts,
        "expect_in_answer": st.lists(texts, max_size=3),
        "expect_not_in_answer": st.lists(texts, max_size=3),
        "max_steps": st.integers(1, 50),
    },
)


@settings(
    max_examples=60,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(tasks, min_size=1, max_size=5, unique_by=lambda t: t["id"]))
def test_any_valid_suite_loads_and_hashes_stably(
    write_suite: Callable[..., Path], generated: list[dict[str, Any]]
) -> None:
    loaded = load_suite(write_suite(generated))
    assert [t.id for t in loaded.suite.tasks] == [t["id"] for t in generated]
    assert suite_hash(loaded.suite) == loaded.hash


@settings(
    max_examples=80,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
        ),
        max_leaves=12,
    )
)
def test_junk_is_a_suite_error_never_a_crash(tmp_path: Path, junk: Any) -> None:
    path = tmp_path / "junk.json"
    path.write_text(json.dumps(junk), encoding="utf-8")
    try:
        load_suite(path)
    except SuiteError as exc:
        assert exc.problems and all(isinstance(p, str) and p for p in exc.problems)
