"""The records of earlier runs in the folders the sandbox shows, so that it hides them.

The sandbox shows the current folder and the agent's own folder read-only, because an
agent may read its prompts or helpers there by a relative path. Earlier runs of the same
tasks leave their records there too: results files (ours and the course's), journals,
trajectories, reports, other harnesses' logs. An agent that read them could pass from an
earlier attempt's answer, or from the strings its checks missed.

A record is recognised by what it says, whoever wrote it and whatever its name: a text
file, not source code, that names one of this run's task ids as a whole word, and a word
a record of an attempt carries (an answer, a pass, what was missing, a ``task_id``).
Inspect AI's zipped logs (``.eval``) cannot be read so; they are hidden by their suffix.
A folder that holds nothing but records is hidden whole, so that a folder of a thousand
trajectories costs one mount, not a thousand.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

CODE_SUFFIXES = frozenset({".py", ".pyi", ".pyx", ".js", ".mjs", ".cjs", ".ts", ".sh", ".bash",
                           ".rb", ".go", ".rs", ".java", ".c", ".h", ".cc", ".cpp", ".hpp",
                           ".pl", ".php", ".lua", ".r", ".jl"})  # fmt: skip
"""Source code: the agent's own, which names its tasks and answers as any agent may."""
HIDDEN_BY_SUFFIX = frozenset({".eval"})
RECORD_WORDS = re.compile(rb"answer|missing|passed|success|score|recording|task_id", re.I)
"""What a record of an attempt says besides its task: its answer or outcome, or the
``task_id`` a trajectory (the course's too) opens with."""
HEAD_BYTES = 1 << 20
"""How much of a file is read: a record names its tasks near its start."""
JUDGED = 32
"""How many record-shaped entries in a row make a folder one of records (a run's)."""
RECORD, SHAPED = "record", "shaped"
"""A record of this run's tasks; a file shaped as one (a ``"task_id"`` or ``"answer"``
key) of other tasks."""
MAX_ENTRIES = 20_000
MAX_BYTES = 256 << 20
"""How many entries may be looked at, and how many bytes of them read, all told, for the
sandbox to show the folders."""
NOT_LOOKED_INTO = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__",
                             ".mypy_cache", ".ruff_cache", ".pytest_cache", ".tox"})  # fmt: skip
"""Folders that hold no record of a run (version control, caches, packages)."""


@dataclass
class EarlierRecords:
    """What the folders shown hold of earlier runs."""

    paths: list[Path] = field(default_factory=list)
    """The records, and the folders holding nothing else, to hide."""
    complete: bool = True
    """False when the folders needed more than MAX_ENTRIES entries or MAX_BYTES looked
    at: not every one was, so the sandbox must not show them."""


def earlier_records(
    folders: Iterable[Path | None], task_ids: Iterable[str], passed_over: Sequence[Path | None]
) -> EarlierRecords:
    """The records of earlier runs of ``task_ids`` in ``folders`` and below, looking past
    ``passed_over`` (what the agent needs, and what is hidden already) and virtual
    environments. Symbolic links are not followed: what they point to is looked at
    where it lies, when that is shown."""
    ids = sorted({i for i in task_ids if i}, key=len, reverse=True)
    if not ids:
        return EarlierRecords()
    names = b"|".join(re.escape(i.encode("utf-8")) for i in ids)
    search = _Search(
        re.compile(rb"(?<![\w.-])(?:" + names + rb")(?![\w.-])"),
        {os.path.realpath(p) for p in passed_over if p is not None},
    )
    roots = {Path(os.path.realpath(f)) for f in folders if f is not None}
    outermost = [str(r) for r in sorted(roots) if not any(r.is_relative_to(o) for o in roots - {r})]
    records: list[str] = []
    try:
        for root in outermost:
            records += search.records_in(root)[0]
    except _TooMany:
        return EarlierRecords([Path(p) for p in records], complete=False)
    return EarlierRecords([Path(p) for p in records])


class _TooMany(Exception):
    pass


@dataclass
class _Search:
    task_id: re.Pattern[bytes]
    passed_over: set[str]
    entries: int = 0
    read: int = 0

    def records_in(self, folder: str, root: bool = True) -> tuple[list[str], bool]:
        """The records of these tasks in ``folder`` and below, and whether to hide the
        folder whole (never a root): it holds records and nothing else, or it is a
        run's folder of them, whose first JUDGED entries are record-shaped (the rest is
        left unread: hiding records of other tasks too is safe)."""
        found: list[str] = []
        only_records = True
        try:
            with os.scandir(folder) as scan:
                entries = sorted(scan, key=lambda e: e.name)
        except OSError:
            return [], False
        for number, entry in enumerate(entries):
            if only_records and not root and number == JUDGED:
                return found, True
            self.entries += 1
            if self.entries > MAX_ENTRIES:
                raise _TooMany
            if entry.path in self.passed_over or entry.is_symlink():
                only_records = False
            elif entry.is_dir():
                inside, whole = self._folder(entry)
                found += [entry.path] if whole else inside
                only_records = only_records and whole
            elif entry.is_file():
                kind = self._kind(entry)
                if kind is RECORD:
                    found.append(entry.path)
                only_records = only_records and kind is not None
            else:
                only_records = False
        return found, only_records and bool(found) and not root

    def _folder(self, entry: os.DirEntry[str]) -> tuple[list[str], bool]:
        if entry.name in NOT_LOOKED_INTO or os.path.exists(os.path.join(entry.path, "pyvenv.cfg")):
            return [], False
        return self.records_in(entry.path, root=False)

    def _kind(self, entry: os.DirEntry[str]) -> str | None:
        """RECORD for a record of these tasks, SHAPED for one of others, else None."""
        suffix = os.path.splitext(entry.name)[1].lower()
        if suffix in HIDDEN_BY_SUFFIX:
            return RECORD
        if suffix in CODE_SUFFIXES:
            return None
        try:
            with open(entry.path, "rb") as handle:
                head = handle.read(HEAD_BYTES)
        except OSError:
            return None
        self.read += len(head)
        if self.read > MAX_BYTES:
            raise _TooMany
        if b"\0" in head[:8192]:  # not text: a record is
            return None
        if self.task_id.search(head) and RECORD_WORDS.search(head):
            return RECORD
        return SHAPED if b'"task_id"' in head or b'"answer"' in head else None
