"""State checks: judge the workspace an attempt left behind, not the words of its answer.

The starting state is a :class:`Snapshot`, recorded before the agent runs: a sorted,
canonical map of every path to its content hash, like tau-bench's database hash.
:func:`check_state` reads the final workspace (files, SQLite, a command in a copy) and
hands every comparison to a pure function of snapshots, bytes or rows, so a verdict
depends on nothing but the two states. A check never raises: a workspace the agent left
in a strange shape fails the check with a reason instead of stopping the run.
"""

from __future__ import annotations

import fnmatch
import json
import os
import sqlite3
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from agent_eval.records import (
    CommandCheck,
    FileCheck,
    FileContains,
    FileEquals,
    FileExists,
    FileNotContains,
    FileUnchanged,
    OnlyChanged,
    SqliteCheck,
    SqlValue,
    StateCheck,
    StateOutcome,
)
from agent_eval.sandbox import Sandbox
from agent_eval.score.command_check import run_command_check
from agent_eval.score.snapshot import Entry, Snapshot, changes, snapshot, workspace_diff

__all__ = [
    "Entry",
    "Snapshot",
    "changes",
    "check_state",
    "describe",
    "snapshot",
    "workspace_diff",
]

MAX_READ_BYTES = 16 * 1024 * 1024
"""Files larger than this fail content checks instead of being read into memory."""
SQL_SECONDS = 10.0
"""How long one check's query may run; a runaway recursive query is cut off."""


def describe(check: StateCheck) -> str:
    """The check in words, as its outcome is named in the verdict."""
    if isinstance(check, FileContains):
        return f"file {check.file} contains {_quote(check.contains)}"
    if isinstance(check, FileNotContains):
        return f"file {check.file} does not contain {_quote(check.not_contains)}"
    if isinstance(check, FileExists):
        return f"file {check.file} {'exists' if check.exists else 'does not exist'}"
    if isinstance(check, FileEquals):
        return f"file {check.file} equals {_quote(check.equals)}"
    if isinstance(check, FileUnchanged):
        return f"file {check.file} unchanged"
    if isinstance(check, OnlyChanged):
        allowed = ", ".join(check.only_changed)
        return f"only changed {allowed}" if allowed else "nothing changed"
    if isinstance(check, SqliteCheck):
        wanted = (
            f"equals rows {_quote(json.dumps(check.equals_rows))}"
            if "equals_rows" in check.model_fields_set
            else f"equals {json.dumps(check.equals)}"
        )
        return f"sqlite {check.sqlite}: {_quote(check.query, 200)} {wanted}"
    return f"command {' '.join(check.command)} exits {check.exit_code}"


def check_state(
    checks: Sequence[StateCheck],
    before: Snapshot,
    workspace: Path,
    suite_dir: Path,
    after: Snapshot | None = None,
    sandbox: Sandbox | None = None,
    scratch: Path | None = None,
) -> list[StateOutcome]:
    """Every state check's outcome, in order, for the workspace an attempt left.

    ``before`` is the snapshot taken before the agent ran; ``after`` may be passed when
    the caller already took the final one. ``suite_dir`` is the suite file's folder, where
    a command check's ``with_files`` lives. A command check runs in ``sandbox`` when one
    is given, on a copy made in ``scratch``.
    """
    if after is None and any(isinstance(c, FileUnchanged | OnlyChanged) for c in checks):
        after = snapshot(workspace)
    outcomes = []
    for check in checks:
        try:
            ok, detail = _judge(check, before, after, workspace, suite_dir, sandbox, scratch)
        except (OSError, sqlite3.Error, UnicodeError) as exc:
            ok, detail = False, f"could not be checked: {exc}"
        outcomes.append(StateOutcome(name=describe(check), ok=ok, detail=detail))
    return outcomes


def unjudged(checks: Sequence[StateCheck], why: str) -> list[StateOutcome]:
    """Every check failed, with the reason the workspace could not be judged."""
    return [StateOutcome(name=describe(check), ok=False, detail=why) for check in checks]


def _judge(
    check: StateCheck,
    before: Snapshot,
    after: Snapshot | None,
    workspace: Path,
    suite_dir: Path,
    sandbox: Sandbox | None = None,
    scratch: Path | None = None,
) -> tuple[bool, str | None]:
    if isinstance(check, FileUnchanged | OnlyChanged):
        final = after if after is not None else snapshot(workspace)
        if isinstance(check, FileUnchanged):
            return judge_unchanged(check.file, before, final)
        return judge_only_changed(check.only_changed, before, final)
    if isinstance(check, CommandCheck):
        return run_command_check(check, workspace, suite_dir, sandbox, scratch)
    target = inside(workspace, check.sqlite if isinstance(check, SqliteCheck) else check.file)
    if isinstance(target, str):
        return False, target
    if isinstance(check, FileExists):
        present = os.path.lexists(target)
        return present == check.exists, None if present == check.exists else (
            f"{check.file} {'is missing' if check.exists else 'is present'}"
        )
    if isinstance(check, SqliteCheck):
        return judge_rows(check, _query(target, check.query))
    if not target.is_file():
        return False, f"{check.file} {'is not a file' if target.exists() else 'does not exist'}"
    if target.stat().st_size > MAX_READ_BYTES:
        return False, f"{check.file} is over {MAX_READ_BYTES} bytes; not read"
    return judge_content(check, target.read_bytes())


def inside(workspace: Path, relative: str) -> Path | str:
    """The path in the workspace, or why it is refused (it or a link in it leads outside).

    The path returned is not resolved: a sandbox's workspace is reached through a link to
    a descriptor (run/executors/sandboxed.py), which resolves to a name that means
    nothing here once the sandbox has ended."""
    root = workspace.resolve()
    candidate = workspace / relative
    try:
        resolved = candidate.resolve()
    except (OSError, RuntimeError):  # a link loop: RuntimeError before Python 3.13
        return f"{relative} is a loop of links; refused"
    if not resolved.is_relative_to(root):
        return f"{relative} leads outside the workspace (a link or '..'); refused"
    return candidate


def judge_content(check: FileCheck, data: bytes) -> tuple[bool, str | None]:
    """contains, not_contains or equals on a file's bytes: pure."""
    if isinstance(check, FileContains):
        found = check.contains.encode("utf-8") in data
        return found, None if found else f"{_quote(check.contains)} does not occur in {check.file}"
    if isinstance(check, FileNotContains):
        at = data.find(check.not_contains.encode("utf-8"))
        if at < 0:
            return True, None
        line = data.count(b"\n", 0, at) + 1
        return False, f"{_quote(check.not_contains)} still occurs in {check.file} at line {line}"
    if isinstance(check, FileEquals):
        wanted = check.equals.encode("utf-8")
        if data == wanted:
            return True, None
        return False, _first_difference(wanted, data)
    raise TypeError(f"not a content check: {check!r}")


def judge_unchanged(file: str, before: Snapshot, after: Snapshot) -> tuple[bool, str | None]:
    """The path (a file, or every file under a folder) is as it was: pure."""
    prefix = PurePosixPath(file).as_posix()
    start, end = _under(before, prefix), _under(after, prefix)
    if start == end:
        return True, None
    moved = changes(Snapshot(start), Snapshot(end))
    return False, "; ".join(moved.lines()) or f"{file} changed"


def judge_only_changed(
    globs: Sequence[str], before: Snapshot, after: Snapshot
) -> tuple[bool, str | None]:
    """Every added, removed or changed path matches an allowed glob: pure."""
    moved = changes(before, after)
    outside = [
        line
        for line, path in zip(moved.lines(), moved.paths(), strict=True)
        if not any(fnmatch.fnmatchcase(path, glob) for glob in globs)
    ]
    if not outside:
        return True, None
    return False, "changed outside the allowed paths: " + "; ".join(outside)


def judge_rows(check: SqliteCheck, rows: list[tuple[SqlValue, ...]]) -> tuple[bool, str | None]:
    """Compare a query's rows with equals (one value) or equals_rows (every row): pure."""
    got = [list(row) for row in rows]
    if "equals_rows" in check.model_fields_set:
        if got == check.equals_rows:
            return True, None
        return False, f"the query returned {_quote(json.dumps(got), 300)}"
    if len(got) != 1 or len(got[0]) != 1:
        shape = f"{len(got)} row(s)" + (f" of {len(got[0])} columns" if got else "")
        return False, f"the query returned {shape}, not one value; use equals_rows for rows"
    value = got[0][0]
    # Python's == already keeps text '1' apart from the number 1 and lets 1 equal 1.0,
    # which is how SQLite itself compares an INTEGER with a REAL.
    if value == check.equals:
        return True, None
    return False, f"the query returned {_quote(repr(value))}"


def _query(database: Path, sql: str) -> list[tuple[SqlValue, ...]]:
    """Run ``sql`` on a database opened read-only, so a check can never change it."""
    if not database.is_file():
        raise sqlite3.OperationalError(f"{database.name} is not a file in the workspace")
    uri = "file:" + urllib.parse.quote(str(database)) + "?mode=ro"
    deadline = time.monotonic() + SQL_SECONDS
    connection = sqlite3.connect(uri, uri=True)
    try:
        connection.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        return list(connection.execute(sql).fetchall())
    finally:
        connection.close()


def _under(snap: Snapshot, prefix: str) -> Mapping[str, Entry]:
    return {
        path: entry
        for path, entry in snap.files.items()
        if path == prefix or path.startswith(prefix + "/")
    }


def _first_difference(wanted: bytes, got: bytes) -> str:
    """Where the content first departs from the expected, in words a reader can act on."""
    if wanted.startswith(got):
        return f"the file ends early; missing at the end: {_quote(_text(wanted[len(got) :]))}"
    if got.startswith(wanted):
        return f"the file has extra content at the end: {_quote(_text(got[len(wanted) :]))}"
    want_lines, got_lines = wanted.split(b"\n"), got.split(b"\n")
    for number, (w, g) in enumerate(zip(want_lines, got_lines, strict=False), start=1):
        if w != g:
            return f"line {number}: expected {_quote(_text(w))}, found {_quote(_text(g))}"
    return "the bytes differ"


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _quote(text: str, limit: int = 60) -> str:
    shown = text if len(text) <= limit else text[: limit - 3] + "..."
    return repr(shown)
