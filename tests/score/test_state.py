"""State checks: pure comparisons with near misses, and the checks on a real workspace."""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from agent_eval.records import (
    Checks,
    FileContains,
    FileEquals,
    FileNotContains,
    SqliteCheck,
    StateCheck,
    StateOutcome,
)
from agent_eval.score.snapshot import (
    Changes,
    Entry,
    Snapshot,
    changes,
    snapshot,
    still_copy,
    workspace_diff,
)
from agent_eval.score.state import (
    check_state,
    describe,
    judge_content,
    judge_only_changed,
    judge_rows,
    judge_unchanged,
    unjudged,
)

CHECK = TypeAdapter(StateCheck)


def state(raw: dict[str, Any]) -> StateCheck:
    return CHECK.validate_python(raw)


def snap(**files: str) -> Snapshot:
    """A snapshot whose hashes are the given strings (paths use '__' for '/')."""
    return Snapshot({k.replace("__", "/"): Entry(v, len(v)) for k, v in sorted(files.items())})


@pytest.mark.parametrize(
    ("check", "data", "ok"),
    [
        (FileContains(file="f", contains="30 days"), b"kept for 30 days.", True),
        (FileContains(file="f", contains="30 days"), b"kept for 30 Days.", False),
        (FileContains(file="f", contains="30 days"), b"kept for 30  days.", False),
        (FileContains(file="f", contains="30 days"), b"kept for 30\ndays.", False),
        (FileContains(file="f", contains="3 days"), b"kept for 13 days.", True),
        (FileContains(file="f", contains="caf\u00e9"), "caf\u00e9".encode(), True),
        (FileContains(file="f", contains=""), b"", True),
        (FileNotContains(file="f", not_contains="28 days"), b"kept for 30 days", True),
        (FileNotContains(file="f", not_contains="28 days"), b"x\nkept for 28 days", False),
        (FileNotContains(file="f", not_contains="28 days"), b"kept for 28 Days", True),
        (FileEquals(file="f", equals="hello\n"), b"hello\n", True),
        (FileEquals(file="f", equals="hello\n"), b"hello", False),
        (FileEquals(file="f", equals="hello\n"), b"hello\r\n", False),
        (FileEquals(file="f", equals="hello\n"), b"hello \n", False),
        (FileEquals(file="f", equals="hello\n"), b"hello\n\n", False),
        (FileEquals(file="f", equals=""), b"", True),
    ],
)
def test_content_checks(check: Any, data: bytes, ok: bool) -> None:
    assert judge_content(check, data)[0] is ok


@pytest.mark.parametrize(
    ("data", "detail"),
    [
        (b"hello", "the file ends early; missing at the end: '\\n'"),
        (b"hello\n\n", "the file has extra content at the end: '\\n'"),
        (b"help\n", "line 1: expected 'hello', found 'help'"),
    ],
)
def test_equals_says_where_it_differs(data: bytes, detail: str) -> None:
    assert judge_content(FileEquals(file="f", equals="hello\n"), data) == (False, detail)


def test_not_contains_names_the_line() -> None:
    check = FileNotContains(file="rb.md", not_contains="28 days")
    assert judge_content(check, b"a\nb\nkept 28 days") == (
        False,
        "'28 days' still occurs in rb.md at line 3",
    )


def rows_check(**wanted: Any) -> SqliteCheck:
    return SqliteCheck(sqlite="o.db", query="SELECT 1", **wanted)


@pytest.mark.parametrize(
    ("wanted", "rows", "ok"),
    [
        ({"equals": 1}, [(1,)], True),
        ({"equals": 1}, [(1.0,)], True),
        ({"equals": 1}, [("1",)], False),
        ({"equals": "1"}, [(1,)], False),
        ({"equals": 1}, [(10,)], False),
        ({"equals": 1}, [(1,), (1,)], False),
        ({"equals": 1}, [], False),
        ({"equals": 1}, [(1, 2)], False),
        ({"equals": None}, [(None,)], True),
        ({"equals": None}, [(0,)], False),
        ({"equals": "Sunday"}, [("sunday",)], False),
        ({"equals_rows": [["a", 1]]}, [("a", 1)], True),
        ({"equals_rows": [["a", 1], ["b", 2]]}, [("b", 2), ("a", 1)], False),
        ({"equals_rows": [["a", 1]]}, [("a", 1), ("a", 1)], False),
        ({"equals_rows": []}, [], True),
        ({"equals_rows": [["a", 1]]}, [("a", "1")], False),
    ],
)
def test_rows(wanted: dict[str, Any], rows: list[tuple[Any, ...]], ok: bool) -> None:
    assert judge_rows(rows_check(**wanted), rows)[0] is ok


def test_sqlite_check_needs_exactly_one_expectation() -> None:
    with pytest.raises(ValidationError, match="exactly one of 'equals'"):
        SqliteCheck(sqlite="o.db", query="SELECT 1")
    with pytest.raises(ValidationError, match="exactly one of 'equals'"):
        SqliteCheck(sqlite="o.db", query="SELECT 1", equals=1, equals_rows=[[1]])


BEFORE = snap(**{"rb.md": "1", "notes__a.md": "2", "notes-old__x.md": "3", "policy.md": "4"})


@pytest.mark.parametrize(
    ("globs", "after", "ok"),
    [
        (["rb.md"], {"rb.md": "9"}, True),
        ([], {}, True),
        ([], {"rb.md": "9"}, False),
        (["rb.md"], {"policy.md": "9"}, False),
        (["notes/*"], {"notes__a.md": "9", "notes__b__c.md": "1"}, True),
        (["notes/*"], {"notes-old__x.md": "9"}, False),
        (["notes"], {"notes__a.md": "9"}, False),
        (["Notes/*"], {"notes__a.md": "9"}, False),
        (["*.md"], {"notes__a.md": "9"}, True),
        (["rb.md"], {"rb.md.bak": "1"}, False),
        (["rb.md"], {"policy.md": None}, False),
    ],
)
def test_only_changed(globs: list[str], after: dict[str, str | None], ok: bool) -> None:
    files = {**BEFORE.files}
    for key, value in after.items():
        path = key.replace("__", "/")
        if value is None:
            del files[path]
        else:
            files[path] = Entry(value, 1)
    assert judge_only_changed(globs, BEFORE, Snapshot(files))[0] is ok


@pytest.mark.parametrize(
    ("path", "after", "ok"),
    [
        ("policy.md", {}, True),
        ("policy.md", {"policy.md": "9"}, False),
        ("notes", {"notes-old__x.md": "9"}, True),
        ("notes", {"notes__new.md": "1"}, False),
        ("notes/", {"notes__a.md": "9"}, False),
        ("absent.md", {}, True),
        ("absent.md", {"absent.md": "1"}, False),
    ],
)
def test_unchanged(path: str, after: dict[str, str], ok: bool) -> None:
    files = {**BEFORE.files, **{k.replace("__", "/"): Entry(v, 1) for k, v in after.items()}}
    assert judge_unchanged(path, BEFORE, Snapshot(files))[0] is ok


def test_changes_are_sorted_and_named() -> None:
    after = snap(**{"rb.md": "9", "notes__a.md": "2", "new.txt": "5", "policy.md": "4"})
    moved = changes(BEFORE, after)
    assert moved == Changes(added=["new.txt"], removed=["notes-old/x.md"], changed=["rb.md"])
    assert moved.lines() == ["added new.txt", "removed notes-old/x.md", "changed rb.md"]


def test_snapshot_is_canonical_and_does_not_follow_links(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for folder, order in ((one, ["b.txt", "a/c.txt"]), (two, ["a/c.txt", "b.txt"])):
        for name in order:
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(name)
    assert snapshot(one) == snapshot(two)
    assert snapshot(one).digest() == snapshot(two).digest()
    assert list(snapshot(one).files) == ["a/c.txt", "b.txt"]
    (two / "b.txt").write_text("B.txt")
    assert snapshot(one).digest() != snapshot(two).digest()
    (one / "out").symlink_to(tmp_path)
    entry = snapshot(one).files["out"]
    assert entry.kind == "link" and "out/one" not in snapshot(one).files


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        ({"file": "service-runbook.md", "contains": "30 days"},
         "file service-runbook.md contains '30 days'"),
        ({"file": "rb.md", "not_contains": "28 days"}, "file rb.md does not contain '28 days'"),
        ({"file": "notes/todo.md", "exists": True}, "file notes/todo.md exists"),
        ({"file": "x.md", "exists": False}, "file x.md does not exist"),
        ({"file": "out.txt", "equals": "hello\n"}, "file out.txt equals 'hello\\n'"),
        ({"file": "policy.md", "unchanged": True}, "file policy.md unchanged"),
        ({"only_changed": ["rb.md", "notes/*"]}, "only changed rb.md, notes/*"),
        ({"only_changed": []}, "nothing changed"),
        ({"sqlite": "ops.db", "query": "SELECT 1", "equals": 1},
         "sqlite ops.db: 'SELECT 1' equals 1"),
        ({"sqlite": "ops.db", "query": "SELECT 1", "equals_rows": [[1]]},
         "sqlite ops.db: 'SELECT 1' equals rows '[[1]]'"),
        ({"command": ["python", "-m", "unittest"], "exit_code": 0},
         "command python -m unittest exits 0"),
    ],
)  # fmt: skip
def test_describe(raw: dict[str, Any], name: str) -> None:
    assert describe(state(raw)) == name


def test_checks_passed_needs_every_state_check() -> None:
    base: dict[str, Any] = {
        "missing": [], "forbidden": [], "regex_ok": True, "tool_ok": True,
        "within_steps": True, "tools_used": [],
    }  # fmt: skip
    bad = [StateOutcome(name="file a exists", ok=False, detail="a is missing")]
    assert not Checks(passed=False, state=bad, **base).passed
    with pytest.raises(ValidationError, match="a state check failed"):
        Checks(passed=True, state=bad, **base)
    assert Checks(passed=True, **base).state == []


# --- checks on a real workspace -------------------------------------------------------


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    (folder / "notes").mkdir(parents=True)
    (folder / "rb.md").write_text("kept for 28 days\n")
    (folder / "notes" / "a.md").write_text("a\n")
    connection = sqlite3.connect(folder / "o.db")
    connection.executescript("CREATE TABLE t (a, b); INSERT INTO t VALUES (1, 'x');")
    connection.commit()
    connection.close()
    return folder


def run(checks: list[dict[str, Any]], before: Snapshot, ws: Path, suite: Path) -> list[Any]:
    return [(o.ok, o.detail) for o in check_state([state(c) for c in checks], before, ws, suite)]


def test_a_link_out_of_the_workspace_fails_every_file_check(workspace: Path) -> None:
    secret = workspace.parent / "secret.txt"
    secret.write_text("password 28 days")
    before = snapshot(workspace)
    (workspace / "leak.txt").symlink_to(secret)
    (workspace / "up").symlink_to(workspace.parent)
    results = run(
        [
            {"file": "leak.txt", "contains": "password"},
            {"file": "leak.txt", "not_contains": "nothing"},
            {"file": "up/secret.txt", "equals": "password 28 days"},
            {"file": "leak.txt", "exists": True},
            {"sqlite": "up/secret.txt", "query": "SELECT 1", "equals": 1},
        ],
        before,
        workspace,
        workspace.parent,
    )
    assert [ok for ok, _ in results] == [False] * 5
    assert all("leads outside the workspace" in str(detail) for _, detail in results)


def test_exists_sees_a_dangling_link_and_a_folder(workspace: Path) -> None:
    (workspace / "dangling").symlink_to(workspace / "nowhere")
    (workspace / "loop").symlink_to(workspace / "loop")
    results = run(
        [
            {"file": "dangling", "exists": False},
            {"file": "notes", "exists": True},
            {"file": "nothing.md", "exists": False},
            {"file": "nothing.md", "contains": "x"},
            {"file": "nothing.md", "not_contains": "x"},
            {"file": "loop", "contains": "x"},
        ],
        snapshot(workspace),
        workspace,
        workspace,
    )
    assert [ok for ok, _ in results] == [False, True, True, False, False, False]
    assert results[4][1] == "nothing.md does not exist"
    assert results[5][1] == "loop is a loop of links; refused"


def test_sqlite_is_read_only(workspace: Path) -> None:
    before = snapshot(workspace)
    results = run(
        [
            {"sqlite": "o.db", "query": "DELETE FROM t", "equals_rows": []},
            {"sqlite": "o.db", "query": "SELECT count(*) FROM t", "equals": 1},
            {"sqlite": "missing.db", "query": "SELECT 1", "equals": 1},
            {"sqlite": "rb.md", "query": "SELECT 1 FROM t", "equals": 1},
        ],
        before,
        workspace,
        workspace,
    )
    assert [ok for ok, _ in results] == [False, True, False, False]
    assert "readonly" in str(results[0][1])
    assert snapshot(workspace) == before


@pytest.fixture
def suite_dir(tmp_path: Path) -> Path:
    hidden = tmp_path / "suite" / "hidden" / "checks"
    hidden.mkdir(parents=True)
    (hidden / "check.py").write_text(
        "import os, pathlib, sys\n"
        "print('hidden check sees', pathlib.Path('rb.md').read_text().strip())\n"
        "print('env', sorted(os.environ))\n"
        "sys.exit(0 if '30 days' in pathlib.Path('rb.md').read_text() else 4)\n"
    )
    return tmp_path / "suite"


def command(**extra: Any) -> dict[str, Any]:
    return {"command": ["python", "checks/check.py"], "with_files": "hidden", **extra}


def test_command_runs_hidden_files_in_a_copy(
    workspace: Path, suite_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_EVAL_TEST_API_KEY", "sk-do-not-leak")
    before = snapshot(workspace)
    (workspace / "rb.md").write_text("kept for 30 days\n")
    (workspace / "checks").mkdir()
    (workspace / "checks" / "check.py").write_text("import sys; sys.exit(0)\n")
    after = snapshot(workspace)
    [(ok, detail)] = run([command()], before, workspace, suite_dir)
    assert ok, detail
    assert "hidden check sees kept for 30 days" in str(detail)
    assert "API_KEY" not in str(detail) and "'PATH'" in str(detail)
    assert snapshot(workspace) == after  # the hidden files never reach the workspace


def test_command_failure_keeps_the_output_tail(workspace: Path, suite_dir: Path) -> None:
    before = snapshot(workspace)
    (workspace / "checks").symlink_to(workspace.parent)  # planted: must not redirect the copy
    [(ok, detail)] = run([command()], before, workspace, suite_dir)
    assert not ok
    assert str(detail).startswith("exit code 4, expected 0; output tail:\n")
    assert "hidden check sees kept for 28 days" in str(detail)
    assert not (workspace.parent / "check.py").exists()
    [(ok, _)] = run([command(exit_code=4)], before, workspace, suite_dir)
    assert ok


@pytest.mark.parametrize(
    ("raw", "detail"),
    [
        ({"command": ["python", "-c", "import time; time.sleep(30)"], "timeout": 0.5},
         "did not finish within 0.5 s and was stopped"),
        ({"command": ["no-such-program-here"]}, "'no-such-program-here' is not installed"),
        ({"command": ["python", "-c", "1"], "with_files": "absent"},
         "with_files folder absent is missing next to the suite"),
        ({"command": ["./run.sh"]}, "'./run.sh' is not installed"),
    ],
)  # fmt: skip
def test_command_refusals(
    workspace: Path, suite_dir: Path, raw: dict[str, Any], detail: str
) -> None:
    [(ok, found)] = run([raw], snapshot(workspace), workspace, suite_dir)
    assert not ok and str(found).startswith(detail), found


def test_command_python_is_the_harness_interpreter(workspace: Path) -> None:
    code = f"import sys; sys.exit(0 if sys.executable == {sys.executable!r} else 1)"
    [(ok, _)] = run(
        [{"command": ["python", "-c", code]}], snapshot(workspace), workspace, workspace
    )
    assert ok


def test_workspace_diff_text_binary_and_lists(tmp_path: Path, workspace: Path) -> None:
    source = tmp_path / "source"
    os.rename(workspace, source)
    shutil.copytree(source, workspace)
    before = snapshot(workspace)
    assert workspace_diff(source, workspace) == ""
    (workspace / "rb.md").write_text("kept for 30 days\n")
    (workspace / "notes" / "a.md").unlink()
    (workspace / "empty.txt").write_text("")
    (workspace / "tail.txt").write_text("no newline")
    connection = sqlite3.connect(workspace / "o.db")
    connection.execute("INSERT INTO t VALUES (2, 'y')")
    connection.commit()
    connection.close()
    assert workspace_diff(source, workspace) == (
        "Files /dev/null and b/empty.txt differ (empty file)\n"
        "--- a/notes/a.md\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n"
        "Binary files a/o.db and b/o.db differ\n"
        "--- a/rb.md\n+++ b/rb.md\n@@ -1 +1 @@\n-kept for 28 days\n+kept for 30 days\n"
        "--- /dev/null\n+++ b/tail.txt\n@@ -0,0 +1 @@\n+no newline\n"
        "\\ No newline at end of file\n"
    )
    assert workspace_diff(before, workspace).splitlines()[2:4] == [
        "Files a/o.db and b/o.db differ (no starting copy kept)",
        "Files a/rb.md and b/rb.md differ (no starting copy kept)",
    ]
    assert workspace_diff(None, workspace).startswith(
        "Files /dev/null and b/empty.txt differ (empty file)\n"
        "Binary files /dev/null and b/o.db differ\n--- /dev/null\n+++ b/rb.md\n"
    )


def made(folder: Path) -> tuple[int, int]:
    found = os.stat(folder)
    return found.st_dev, found.st_ino


def test_a_still_copy_keeps_every_link_as_a_link(tmp_path: Path) -> None:
    """What an attempt is judged on: the same snapshot as the workspace, with links to
    outside (a file, a folder, a dangling one) copied as links, never what they name,
    and a pipe as something else than a file."""
    outside = tmp_path / "outside"
    (outside / "secrets").mkdir(parents=True)
    (outside / "answer.txt").write_text("8091 Team: platform\n")
    (outside / "secrets" / "key").write_text("k\n")
    workspace = tmp_path / "workspace"
    (workspace / "requests" / "deep").mkdir(parents=True)
    (workspace / "requests" / "deep" / "note.md").write_text("hello\n")
    (workspace / "run.sh").write_text("#!/bin/sh\n")
    (workspace / "run.sh").chmod(0o755)
    (workspace / "requests" / "gateway-port.md").symlink_to(outside / "answer.txt")
    (workspace / "secrets").symlink_to(outside / "secrets")
    (workspace / "gone").symlink_to(tmp_path / "nowhere")
    os.mkfifo(workspace / "pipe")
    judged = tmp_path / "judged"
    assert still_copy(workspace, judged, made(workspace)) is None
    assert snapshot(judged) == snapshot(workspace)
    assert (judged / "requests" / "gateway-port.md").is_symlink()
    assert (judged / "secrets").is_symlink()
    assert os.access(judged / "run.sh", os.X_OK)
    check = state({"file": "requests/gateway-port.md", "contains": "8091"})
    (outcome,) = check_state([check], snapshot(workspace), judged, tmp_path)
    assert not outcome.ok
    assert "leads outside the workspace" in (outcome.detail or "")


def test_a_workspace_replaced_during_the_attempt_is_not_judged(tmp_path: Path) -> None:
    """The agent replaced its workspace folder with a link to another folder (one that
    holds the right answer), or moved another folder to its path: the copy refuses, and
    every check fails saying why."""
    workspace, elsewhere = tmp_path / "workspace", tmp_path / "elsewhere"
    workspace.mkdir()
    elsewhere.mkdir()
    (elsewhere / "notes.txt").write_text("2\n")
    first = made(workspace)
    workspace.rmdir()
    workspace.symlink_to(elsewhere)
    why = still_copy(workspace, tmp_path / "judged", first)
    assert why is not None and "not checked" in why
    assert not (tmp_path / "judged").exists()
    workspace.unlink()
    elsewhere.rename(workspace)  # another folder moved to the workspace's path
    why = still_copy(workspace, tmp_path / "judged", first)
    assert why is not None and "replaced" in why
    checks = [state({"file": "notes.txt", "equals": "2\n"}), state({"only_changed": ["x"]})]
    outcomes = unjudged(checks, why)
    assert [o.ok for o in outcomes] == [False, False]
    assert [o.name for o in outcomes] == [describe(c) for c in checks]
