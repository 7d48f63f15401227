"""The ``query_database`` tool: one SQL statement on a SQLite file in the workspace.

Offered to agents only by suites that allow it, like the file-writing tools: it can
change data. It reads and changes rows, nothing more. Only SELECT, INSERT, UPDATE,
DELETE and WITH statements run, one per call, and SQLite's own authorizer refuses
anything else a statement tries (ATTACH, which could reach a file outside the workspace,
PRAGMA, schema changes). The file must already exist, a statement that runs past two
seconds is stopped, and a change is committed as soon as it succeeds.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from agent_eval.tools.base import (
    Observation,
    ToolArgumentError,
    ToolContext,
    ok,
    refuse,
    string_arg,
)
from agent_eval.tools.paths import relative_name, resolve_inside

NAME = "query_database"
DESCRIPTION = (
    "Run one SQL statement (SELECT, INSERT, UPDATE, DELETE or WITH) on a SQLite database "
    "file in your workspace. A SELECT returns its rows; a change returns how many rows it "
    "changed and is saved at once. The path is relative to the workspace."
)
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "Path of the SQLite file, relative to the workspace.",
        },
        "sql": {"type": "string", "description": "One SQL statement."},
    },
    "required": ["path", "sql"],
    "additionalProperties": False,
}

STATEMENTS = ("select", "insert", "update", "delete", "with")
MAX_ROWS = 200
TIME_LIMIT = 2.0
"""Seconds one statement may run; a runaway recursive query is stopped. A workspace
database answers in milliseconds."""

_ALLOWED_ACTIONS = frozenset(
    {
        sqlite3.SQLITE_SELECT,
        sqlite3.SQLITE_READ,
        sqlite3.SQLITE_INSERT,
        sqlite3.SQLITE_UPDATE,
        sqlite3.SQLITE_DELETE,
        sqlite3.SQLITE_FUNCTION,
        sqlite3.SQLITE_RECURSIVE,
    }
)


def _authorize(action: int, *_: object) -> int:
    return sqlite3.SQLITE_OK if action in _ALLOWED_ACTIONS else sqlite3.SQLITE_DENY


def run(ctx: ToolContext, args: dict[str, Any]) -> Observation:
    """Run ``args["sql"]`` on the database at ``args["path"]``."""
    try:
        raw = string_arg(args, "path")
        sql = string_arg(args, "sql").strip().rstrip(";").strip()
        path = resolve_inside(ctx.workspace, raw)
    except ToolArgumentError as exc:
        return refuse(f"query_database: {exc}")
    name = relative_name(ctx.workspace, path)
    if not path.is_file():
        return refuse(f"query_database: no database file {name!r}; give an existing .db file")
    first = sql.split(None, 1)[0].lower() if sql else ""
    if first not in STATEMENTS:
        allowed = ", ".join(s.upper() for s in STATEMENTS)
        return refuse(f"query_database: {first.upper() or 'an empty'} statement; use {allowed}")
    connection = sqlite3.connect(f"{path.as_uri()}?mode=rw", uri=True, isolation_level=None)
    try:
        connection.set_authorizer(_authorize)
        deadline = time.monotonic() + TIME_LIMIT
        connection.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        connection.execute("SELECT count(*) FROM sqlite_master")  # is it a database at all?
        cursor = connection.execute(sql)
        rows = cursor.fetchmany(MAX_ROWS + 1)
        header = [column[0] for column in cursor.description or ()]
        changed = connection.total_changes
    except (sqlite3.Error, sqlite3.Warning) as exc:
        reason = "it ran past the time limit" if "interrupted" in str(exc) else str(exc)
        return refuse(f"query_database: {reason}")
    finally:
        connection.close()
    if not header:
        return ok(f"{changed} row(s) changed in {name}")
    lines = ["\t".join(header)] + ["\t".join(_text(value) for value in row) for row in rows]
    more = f"\n[... more than {MAX_ROWS} rows; narrow the query]" if len(rows) > MAX_ROWS else ""
    return ok("\n".join(lines[: MAX_ROWS + 1]) + more)


def _text(value: object) -> str:
    return "NULL" if value is None else str(value)
