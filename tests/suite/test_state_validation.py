"""Validation of expect_state and granted tools: one clear line per problem, with the fix."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_eval import tools
from agent_eval.errors import SuiteError
from agent_eval.records import Suite, Task
from agent_eval.suite import load_suite, suite_hash
from agent_eval.suite.load import AGENT_TOOLS, ALL_STATE_KEYS, validate

GOOD = {"id": "t1", "task": "Edit the runbook."}


def problems_of(path: Path) -> list[str]:
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    return caught.value.problems


@pytest.mark.parametrize(
    ("check", "expected"),
    [
        ({"file": "rb.md", "contians": "30 days"},
         "task t1: expect_state[0]: unknown key 'contians' (did you mean 'contains'?)"),
        ({"file": "rb.md", "exist": True},
         "task t1: expect_state[0]: unknown key 'exist' (did you mean 'exists'?)"),
        ({"sqlite": "o.db", "querry": "SELECT 1", "equals": 1},
         "expect_state[0]: unknown key 'querry' (did you mean 'query'?)"),
        ({"command": ["python"], "exitcode": 0},
         "expect_state[0]: unknown key 'exitcode' (did you mean 'exit_code'?)"),
        ({"onlychanged": ["a"]},
         "expect_state[0]: unknown key 'onlychanged' (did you mean 'only_changed'?)"),
        ({"file": "/etc/passwd", "contains": "root"},
         "expect_state[0]: field 'file': '/etc/passwd' is absolute; give a path relative"),
        ({"file": "../up.md", "exists": True},
         "expect_state[0]: field 'file': '../up.md' leaves the workspace ('..')"),
        ({"file": "notes/../../x", "unchanged": True},
         "expect_state[0]: field 'file': 'notes/../../x' leaves the workspace"),
        ({"file": "C:\\x.md", "contains": "a"}, "is absolute"),
        ({"sqlite": "../o.db", "query": "SELECT 1", "equals": 1},
         "expect_state[0]: field 'sqlite': '../o.db' leaves the workspace"),
        ({"sqlite": "o.db", "equals": 1}, "expect_state[0]: field 'query': is required; add it"),
        ({"sqlite": "o.db", "query": "SELECT 1"},
         "expect_state[0]: give exactly one of 'equals' (one value) or 'equals_rows'"),
        ({"sqlite": "o.db", "query": "SELECT 1", "equals_rows": "1"},
         "expect_state[0]: field 'equals_rows': must be a list of rows"),
        ({"command": "python -m unittest"},
         "expect_state[0]: field 'command': must be a list of strings, the program"),
        ({"command": ["python", 3]}, "expect_state[0]: field 'command': must be a list of strings"),
        ({"command": []}, "expect_state[0]: field 'command': List should have at least 1 item"),
        ({"command": ["python"], "timeout": 0}, "expect_state[0]: field 'timeout': Input should"),
        ({"command": ["python"], "with_files": "hidden"},
         "expect_state[0]: with_files 'hidden' is not a folder next to the suite file"),
        ({"file": "rb.md"}, "expect_state[0]: a 'file' check needs one of contains, not_contains"),
        ({"file": "rb.md", "contains": "a", "equals": "b"},
         "expect_state[0]: gives contains, equals; give one per check"),
        ({"file": "rb.md", "unchanged": False},
         "expect_state[0]: field 'unchanged': only true has a meaning"),
        ({"file": "rb.md", "exists": "yes"},
         "expect_state[0]: field 'exists': must be true or false, not str"),
        ({"file": "rb.md", "sqlite": "o.db"}, "expect_state[0]: mixes 'file' and 'sqlite'"),
        ({"query": "SELECT 1"}, "expect_state[0]: not a state check; start it with 'file'"),
        ("rb.md", "expect_state[0]: must be an object such as"),
    ],
)  # fmt: skip
def test_malformed_state_check(write_suite: Callable[..., Path], check: Any, expected: str) -> None:
    problems = problems_of(write_suite([{**GOOD, "expect_state": [check]}]))
    assert any(expected in p for p in problems), problems
    assert len(problems) == 1, problems
    assert problems[0].startswith("suite suite.json, task t1: ")


def test_every_problem_is_listed_with_its_position(write_suite: Callable[..., Path]) -> None:
    checks = [{"file": "a.md", "exists": True}, {"file": "../b"}, {"sqlite": "o.db"}]
    problems = problems_of(write_suite([{**GOOD, "expect_state": checks}]))
    assert [p.split(": ")[1] for p in problems] == ["expect_state[1]", "expect_state[2]"]


def test_expect_state_must_be_a_list(write_suite: Callable[..., Path]) -> None:
    problems = problems_of(write_suite([{**GOOD, "expect_state": {"file": "a"}}]))
    assert problems == [
        "suite suite.json, task t1: field 'expect_state': must be a list of check objects"
    ]


def test_with_files_is_found_next_to_the_suite(write_suite: Callable[..., Path]) -> None:
    path = write_suite([{**GOOD, "expect_state": [{"command": ["true"], "with_files": "h/"}]}])
    (path.parent / "h").mkdir()
    assert load_suite(path).suite.tasks[0].expect_state[0].kind == "command"


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("suite", "suite suite.json: field 'tools'"),
        ("task", "suite suite.json, task t1: field 'tools'"),
    ],
)
def test_unknown_tool_names(write_suite: Callable[..., Path], where: str, expected: str) -> None:
    tools_field = {"tools": ["read_file", "write_fle"]}
    task = {**GOOD, **tools_field} if where == "task" else GOOD
    top = tools_field if where == "suite" else {}
    problems = problems_of(write_suite([task], **top))
    assert problems == [f"{expected}: unknown tool 'write_fle' (did you mean 'write_file'?)"]


def test_tools_must_be_a_list(write_suite: Callable[..., Path]) -> None:
    problems = problems_of(write_suite([GOOD], tools="write_file"))
    assert problems == [
        "suite suite.json: field 'tools': must be a list of strings, for example [\"4000\"]"
    ]


def test_suite_knows_exactly_the_tools_an_agent_can_be_given() -> None:
    assert set(AGENT_TOOLS) == {*tools.READ_TOOLS, *tools.WRITE_TOOLS}


def test_task_tools_replace_the_suite_tools() -> None:
    suite = Suite.model_validate(
        {
            "name": "s",
            "version": "1",
            "tools": ["write_file"],
            "tasks": [GOOD, {**GOOD, "id": "t2", "tools": []}, {**GOOD, "id": "t3", "tools": None}],
        }
    )
    assert [suite.tools_for(t) for t in suite.tasks] == [["write_file"], [], ["write_file"]]


def test_granting_tools_changes_the_hash_and_nothing_else_does() -> None:
    plain = Suite.model_validate({"name": "s", "version": "1", "tasks": [GOOD]})
    none = Suite.model_validate({"name": "s", "version": "1", "tools": None, "tasks": [GOOD]})
    writing = Suite.model_validate(
        {"name": "s", "version": "1", "tools": ["write_file"], "tasks": [GOOD]}
    )
    assert suite_hash(plain) == suite_hash(none) != suite_hash(writing)
    checked = Suite.model_validate(
        {"name": "s", "version": "1", "tasks": [{**GOOD, "expect_state": [{"only_changed": []}]}]}
    )
    assert suite_hash(checked) != suite_hash(plain)


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.text(max_size=6),
    st.lists(st.text(max_size=4), max_size=2),
)
CHECKS = st.dictionaries(
    st.one_of(st.sampled_from(ALL_STATE_KEYS), st.text(max_size=8)), VALUES, max_size=4
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(checks=st.lists(CHECKS, max_size=3))
def test_validation_agrees_with_the_record(checks: list[dict[str, Any]]) -> None:
    """Whatever the checks, validate lists problems or the task loads: never both, never a crash."""
    raw = {"name": "s", "version": "1", "tasks": [{**GOOD, "expect_state": checks}]}
    problems = validate(raw, "p.json")
    try:
        Task.model_validate(raw["tasks"][0])
        loads = True
    except ValueError:
        loads = False
    assert loads == (not problems), problems


def test_the_hidden_files_of_command_checks_are_part_of_the_hash(
    write_suite: Callable[..., Path],
) -> None:
    path = write_suite([{**GOOD, "expect_state": [{"command": ["true"], "with_files": "h"}]}])
    hidden = path.parent / "h"
    (hidden / "deep").mkdir(parents=True)
    (hidden / "deep" / "test_it.py").write_text("assert True\n")
    first = load_suite(path).hash
    assert load_suite(path).hash == first  # stable
    (hidden / "deep" / "test_it.py").write_text("assert False\n")
    changed = load_suite(path).hash
    (hidden / "deep" / "test_it.py").rename(hidden / "test_it.py")  # same bytes, moved
    assert len({first, changed, load_suite(path).hash}) == 3
    plain = Suite.model_validate({"name": "s", "version": "1", "tasks": [GOOD]})
    assert suite_hash(plain, path.parent) == suite_hash(plain)  # no with_files: as before


@pytest.mark.parametrize(
    ("with_files", "expected"),
    [
        ("/root", "field 'with_files': '/root' is absolute; give a folder relative to the suite"),
        ("../up", "field 'with_files': '../up' leaves the suite's folder ('..')"),
        ("h/../../x", "field 'with_files': 'h/../../x' leaves the suite's folder"),
        ("link", "with_files 'link' leads outside the suite's folder (a link)"),
    ],
)
def test_with_files_stays_in_the_suite_folder(
    write_suite: Callable[..., Path], tmp_path: Path, with_files: str, expected: str
) -> None:
    """A check's hidden files come from the suite, never from /root or beside it: a path
    that leaves the suite's folder is one clear problem at load, as a file check's is."""
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (tmp_path / "link").symlink_to(outside, target_is_directory=True)
    check = {"command": ["true"], "with_files": with_files}
    problems = problems_of(write_suite([{**GOOD, "expect_state": [check]}]))
    assert len(problems) == 1, problems
    assert expected in problems[0], problems
