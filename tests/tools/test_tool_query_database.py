"""query_database: one statement on a SQLite file in the workspace, rows in, rows out,
and nothing that reaches outside it or changes the schema."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agent_eval.tools import ToolContext, run_tool


@pytest.fixture
def db(workspace: Path) -> Path:
    path = workspace / "ops.db"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE backups (id INTEGER PRIMARY KEY, host TEXT, day TEXT)")
        connection.executemany(
            "INSERT INTO backups (host, day) VALUES (?, ?)",
            [("db-1", "Sunday"), ("app-1", None)],
        )
    connection.close()
    return path


def rows(path: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as connection:
        found = connection.execute("SELECT id, host, day FROM backups ORDER BY id").fetchall()
    connection.close()
    return found


def test_select_returns_a_header_and_rows(ctx: ToolContext, db: Path) -> None:
    seen = run_tool("query_database", ctx, {"path": "ops.db", "sql": "SELECT * FROM backups;"})
    assert not seen.error
    assert seen.result == "id\thost\tday\n1\tdb-1\tSunday\n2\tapp-1\tNULL"


def test_a_change_is_saved_at_once_and_counted(ctx: ToolContext, db: Path) -> None:
    sql = "INSERT INTO backups (host, day) VALUES ('db-2', 'Sunday')"
    seen = run_tool("query_database", ctx, {"path": "ops.db", "sql": sql})
    assert (seen.error, seen.result) == (False, "1 row(s) changed in ops.db")
    assert rows(db)[-1] == (3, "db-2", "Sunday")
    update = "UPDATE backups SET day = 'Monday' WHERE day IS NULL"
    assert run_tool("query_database", ctx, {"path": "ops.db", "sql": update}).result == (
        "1 row(s) changed in ops.db"
    )
    assert sorted(p.name for p in db.parent.iterdir() if p.name.startswith("ops")) == ["ops.db"]


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("DROP TABLE backups", "DROP statement; use SELECT, INSERT"),
        ("", "argument 'sql' must not be empty"),
        (" ; ", "an empty statement"),
        ("PRAGMA journal_mode = WAL", "PRAGMA statement"),
        ("ATTACH DATABASE '../outside/x.db' AS x", "ATTACH statement"),
        ("VACUUM INTO '../outside/copy.db'", "VACUUM statement"),
        ("SELECT 1; DELETE FROM backups", "one statement at a time"),
        ("WITH x AS (SELECT 1) SELECT sqlite_version(), load_extension('x')", "not authorized"),
        ("SELECT * FROM nowhere", "no such table: nowhere"),
        (
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
            "SELECT count(*) FROM n",
            "ran past the time limit",
        ),
    ],
)
def test_refusals_change_nothing(
    ctx: ToolContext, db: Path, outside: Path, sql: str, reason: str
) -> None:
    before = rows(db)
    seen = run_tool("query_database", ctx, {"path": "ops.db", "sql": sql})
    assert seen.error and reason in seen.result, seen.result
    assert rows(db) == before
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt", "unlisted.txt"]


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../outside/secret.txt", "climbs out of the workspace"),
        ("missing.db", "no database file 'missing.db'"),
        ("notes.md", "file is not a database"),
    ],
)
def test_only_existing_databases_inside_the_workspace(
    ctx: ToolContext, db: Path, outside: Path, path: str, reason: str
) -> None:
    seen = run_tool("query_database", ctx, {"path": path, "sql": "SELECT 1"})
    assert seen.error and reason in seen.result, seen.result
    assert not (ctx.workspace / "missing.db").exists()
