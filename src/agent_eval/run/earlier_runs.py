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
MAX_ENTRIES = 20_000
MAX_BYTES = 256 << 20
"""How many entries the folders may hold, and how many bytes of them are read, all told,
for the sandbox to show them."""
NOT_LOOKED_INTO = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__",
                             ".mypy_cache", ".ruff_cache", ".pytest_cache", ".tox"})  # fmt: skip
"""Folders that hold no record of a run (version control, caches, packages)."""


@dataclass
class EarlierRecords:
    """What the folders shown hold of earlier runs."""

    paths: list[Path] = field(default_factory=list)
    """The records, and the folders holding nothing else, to hide."""
    complete: bool = True
    """False when the folders held more than MAX_ENTRIES entries or MAX_BYTES to read:
    not every one was looked at, so the sandbox must not show them."""


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

    def records_in(self, folder: str) -> tuple[list[str], bool]:
        """The records in ``folder`` (or folders of them), and whether it holds nothing
        else."""
        records: list[str] = []
        only_records = True
        try:
            with os.scandir(folder) as scan:
                entries = sorted(scan, key=lambda e: e.name)
        except OSError:
            return [], False
        self.entries += len(entries)
        if self.entries > MAX_ENTRIES:
            raise _TooMany
        for entry in entries:
            if entry.path in self.passed_over or entry.is_symlink():
                only_records = False
            elif entry.is_dir():
                inside, nothing_else = self._folder(entry)
                if nothing_else and inside:
                    records.append(entry.path)
                else:
                    records += inside
                only_records = only_records and nothing_else and bool(inside)
            elif entry.is_file() and self._is_record(entry):
                records.append(entry.path)
            else:
                only_records = False
        return records, only_records

    def _folder(self, entry: os.DirEntry[str]) -> tuple[list[str], bool]:
        if entry.name in NOT_LOOKED_INTO or os.path.exists(os.path.join(entry.path, "pyvenv.cfg")):
            return [], False
        return self.records_in(entry.path)

    def _is_record(self, entry: os.DirEntry[str]) -> bool:
        suffix = os.path.splitext(entry.name)[1].lower()
        if suffix in HIDDEN_BY_SUFFIX:
            return True
        if suffix in CODE_SUFFIXES:
            return False
        try:
            with open(entry.path, "rb") as handle:
                head = handle.read(HEAD_BYTES)
        except OSError:
            return False
        self.read += len(head)
        if self.read > MAX_BYTES:
            raise _TooMany
        if b"\0" in head[:8192]:  # not text: a record is
            return False
        return bool(self.task_id.search(head)) and bool(RECORD_WORDS.search(head))
