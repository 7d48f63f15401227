"""Where the viewer's data comes from: runs found under the given paths, read through the
results, journal and labbook readers, and files confined to the given folders.

This is the viewer's only module that reads files. Every page asks it by an opaque run
id and a row index, never by a path, so no URL can name a file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_eval.errors import AgentEvalError, ConfigError, ResultsError
from agent_eval.interop import foreign_kind, load_runs
from agent_eval.results import (
    JOURNAL_SUFFIX,
    AttemptResult,
    RunHead,
    RunResults,
    load_results,
    read_head,
    read_journal,
    read_labbook,
)
from agent_eval.results.rows import Attempt, compact

TRAJECTORY_NAME = re.compile(r"-r\d+\.jsonl$")
"""Trajectory files, which are never runs; a folder of 100,000 of them is skipped fast."""
MAX_DEPTH = 4
"""Folders below a given one that are searched for runs."""
RESCAN_SECONDS = 2.0
"""A live run's new files and rows show up within this long."""
LIVE_SECONDS = 600
"""A journal changed this recently shows as a run in progress."""
TRAJECTORY_LIMIT = 64 * 1024 * 1024
"""The largest trajectory file read, in bytes."""


@dataclass
class RunSource:
    """One run found on disk: a results file, a journal of a run in progress, or a
    labbook line without its results file."""

    id: str
    """Opaque and stable: a hash of the kind, the path and the labbook line."""
    kind: str
    """results, journal, labbook, or foreign (another harness's log or folder)."""
    path: Path
    """The file, inside one of the given folders."""
    run: dict[str, Any] = field(default_factory=dict)
    """The run object (for a journal: its header and what its rows tell)."""
    problem: str | None = None
    """Why the run cannot be read, shown on the page instead of its numbers."""
    problems: list[str] = field(default_factory=list)
    """Lines skipped while reading, for a journal or labbook."""
    signature: tuple[int, int] = (0, 0)
    """(mtime_ns, size) when read; a change means read again."""
    index: int = 0
    """Which run of a foreign log holding several."""


def _run_id(kind: str, path: Path, line: int = 0) -> str:
    digest = hashlib.sha256(f"{kind}\0{path}\0{line}".encode()).hexdigest()
    return digest[:12]


def _recent(signature: tuple[int, int]) -> bool:
    """Whether a journal was written to lately: a run that wrote no results file leaves
    its journal behind, and a journal alone cannot say whether its run still goes on."""
    return time.time_ns() - signature[0] < LIVE_SECONDS * 1_000_000_000


def _journal_run(header: dict[str, Any], rows: list[AttemptResult]) -> RunHead:
    """What a journal tells of its run: its header names the run, agent and model."""
    return RunHead(
        run_id=str(header.get("run_id", "?")),
        scaffold=str(header.get("agent", "?")),
        model=str(header.get("model", "?")),
        task_set="(in progress)",
        task_set_version="",
        suite_hash=header.get("suite_hash"),
        repeats=max((row.attempt for row in rows), default=0),
        date=header.get("started"),
    )


def _journal_summary(rows: list[AttemptResult]) -> dict[str, Any]:
    """The four numbers over the attempts journaled so far, rounded as the runner rounds."""
    n = len(rows)
    if not n:
        return {"runs": 0, "passed": 0}
    passed = sum(row.checks.passed for row in rows)
    return {
        "runs": n,
        "passed": passed,
        "success_rate": round(passed / n, 3),
        "mean_steps": round(sum(r.steps for r in rows) / n, 2),
        "mean_tokens": round(sum(r.tokens for r in rows) / n, 1),
        "mean_seconds": round(sum(r.seconds for r in rows) / n, 1),
    }


def _signature(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_mtime_ns, stat.st_size


class Library:
    """The runs under the given paths, read lazily and cached until their file changes."""

    def __init__(self, paths: Iterable[str | Path]) -> None:
        self.roots: list[Path] = []
        """Where files may be read from: each folder given, and each given file's folder."""
        self.folders: list[Path] = []
        """The folders given, searched for runs."""
        self.files: list[Path] = []
        """The files given."""
        for given in paths:
            path = Path(given)
            if not path.exists():
                raise ConfigError(f"view {given}: not found; give results files or folders")
            resolved = path.resolve()
            walked = resolved.is_dir() and foreign_kind(resolved) is None
            (self.folders if walked else self.files).append(resolved)
            self.roots.append(resolved if resolved.is_dir() else resolved.parent)
        self._lock = threading.Lock()
        self._sources: dict[str, RunSource] = {}
        self._loaded: dict[str, tuple[tuple[int, int], RunResults]] = {}
        self._reading: dict[str, threading.Lock] = {}
        self._scanned_at = -RESCAN_SECONDS

    # -- discovery -------------------------------------------------------------------

    def runs(self) -> list[RunSource]:
        """Every run found, in path order; the folders are searched again every few seconds."""
        with self._lock:
            if time.monotonic() - self._scanned_at >= RESCAN_SECONDS:
                self._scan()
                self._scanned_at = time.monotonic()
            return list(self._sources.values())

    def source(self, run_id: str) -> RunSource:
        """The run with this id; ResultsError when there is none."""
        found = {s.id: s for s in self.runs()}.get(run_id)
        if found is None:
            raise ResultsError(f"run {run_id}: not found under the folders given")
        return found

    def _candidates(self) -> list[Path]:
        found = list(self.files)
        for root in self.folders:
            for folder, dirs, names in os.walk(root):
                depth = len(Path(folder).relative_to(root).parts)
                keep = [] if depth >= MAX_DEPTH else [d for d in dirs if not d.startswith(".")]
                dirs[:] = sorted(keep)
                maybe = dirs or any(name.endswith(".json") for name in names)
                if maybe and foreign_kind(Path(folder)) is not None:  # ATIF files, Harbor job:
                    found.append(Path(folder))  # one run per agent and model, not per file
                    dirs[:] = []
                    continue
                for name in sorted(names):
                    if name.endswith((".json", ".jsonl", ".eval")) and not TRAJECTORY_NAME.search(
                        name
                    ):
                        found.append(Path(folder) / name)
        unique: dict[Path, None] = {}
        for path in found:
            if not path.is_symlink():
                unique.setdefault(path, None)
        return list(unique)

    def _scan(self) -> None:
        fresh: dict[str, RunSource] = {}
        results_ids: set[str] = set()
        labbooks: list[Path] = []
        for path in self._candidates():
            source: RunSource | None
            if foreign_kind(path) is not None:
                for source in self._foreign(path):
                    fresh[source.id] = source
                continue
            if path.name.endswith(JOURNAL_SUFFIX):
                source = self._journal(path)
            elif path.suffix == ".json":
                source = self._results(path)
            else:
                labbooks.append(path)
                continue
            if source is not None:
                fresh[source.id] = source
                if source.kind == "results" and source.problem is None:
                    results_ids.add(str(source.run.get("run_id")))
        for journal in [s for s in fresh.values() if s.kind == "journal"]:
            if journal.run.get("run_id") in results_ids:
                del fresh[journal.id]  # the run finished; its results file shows it
        for path in labbooks:
            for source in self._labbook(path):
                if source.run.get("run_id") not in results_ids:
                    fresh[source.id] = source
        self._sources = fresh

    def _results(self, path: Path) -> RunSource | None:
        try:
            with path.open("rb") as handle:
                start = handle.read(4096)
        except OSError:
            return None
        if b'"run"' not in start:
            return None  # some other JSON file: not a run, not worth a message
        source = RunSource(_run_id("results", path), "results", path)
        old = self._sources.get(source.id)
        try:
            source.signature = _signature(path)
            if old is not None and old.signature == source.signature:
                return old
            source.run = read_head(path).run.model_dump(mode="json")
        except (AgentEvalError, OSError) as exc:
            if b'"schema"' not in start and b'"results"' not in start:
                return None  # a JSON report, say: it names a run but holds no attempts
            source.problem = str(exc)
        return source

    def _foreign(self, path: Path) -> list[RunSource]:
        """One source per run of another harness's log or folder, read whole once (its
        summary comes from its attempts) and cached until it changes."""
        first = RunSource(_run_id("foreign", path), "foreign", path)
        try:
            first.signature = _signature(path)
            old = [s for s in self._sources.values() if s.path == path and s.kind == "foreign"]
            if old and old[0].signature == first.signature:
                return old
            runs = load_runs(path)
        except (AgentEvalError, OSError) as exc:
            first.problem = str(exc)
            return [first]
        sources = []
        for index, run in enumerate(runs):
            source = RunSource(
                _run_id("foreign", path, index), "foreign", path, signature=first.signature,
                index=index, run=run.run.model_dump(mode="json"),
            )  # fmt: skip
            self._loaded[source.id] = (first.signature, run)
            sources.append(source)
        return sources

    def _journal(self, path: Path) -> RunSource:
        source = RunSource(_run_id("journal", path), "journal", path)
        old = self._sources.get(source.id)
        try:
            source.signature = _signature(path)
            if old is not None and old.signature == source.signature:
                old.run["in_progress"] = _recent(old.signature)
                return old  # a journal only grows: unchanged, it says the same
            header, rows = read_journal(path, skipped=source.problems)
        except (AgentEvalError, OSError) as exc:
            source.problem = str(exc)
            return source
        source.run = {
            **_journal_run(header, rows).model_dump(mode="json"),
            "in_progress": _recent(source.signature),
            "summary": _journal_summary(rows),
        }
        return source

    def _labbook(self, path: Path) -> list[RunSource]:
        try:
            with path.open("rb") as handle:
                first = handle.readline()
            probe = json.loads(first) if first.strip() else None
        except (OSError, ValueError):
            return []
        if not isinstance(probe, dict) or "run_id" not in probe or "meta" in probe:
            return []  # a trajectory or some other JSON-lines file
        try:
            labbook = read_labbook(path)
        except AgentEvalError as exc:
            return [RunSource(_run_id("labbook", path), "labbook", path, problem=str(exc))]
        sources = [
            RunSource(_run_id("labbook", path, n), "labbook", path, run.model_dump(mode="json"))
            for n, run in enumerate(labbook.runs, start=1)
        ]
        sources += [
            RunSource(
                _run_id("labbook-problem", path, n),
                "labbook",
                path,
                problem=f"labbook {path.name} {problem}",
            )
            for n, problem in enumerate(labbook.problems, start=1)
        ]
        return sources

    # -- reading ---------------------------------------------------------------------

    def results(self, run_id: str) -> RunResults:
        """The run's rows, validated; read again only when its file has changed. Callers
        asking for one run at once wait for a single read."""
        source = self.source(run_id)
        if source.problem is not None:
            raise ResultsError(source.problem)
        if source.kind == "labbook":
            raise ResultsError(
                f"run {source.run.get('run_id')}: only its labbook line was found; give "
                "the folder that holds its results file to see its attempts"
            )
        with self._lock:
            reading = self._reading.setdefault(run_id, threading.Lock())
        with reading:
            signature = _signature(source.path)
            cached = self._loaded.get(run_id)
            if cached is not None and cached[0] == signature:
                return cached[1]
            if source.kind == "foreign":
                loaded = load_runs(source.path)[source.index]
            elif source.kind == "journal":
                header, rows = read_journal(source.path)
                run = _journal_run(header, rows)
                loaded = RunResults(source.path, run, tuple(compact(row) for row in rows))
            else:
                loaded = load_results(source.path)
            self._loaded[run_id] = (signature, loaded)
            return loaded

    def confined(self, path: Path) -> Path:
        """``path`` when it lies inside a given folder and no part of it is a symbolic
        link; ResultsError otherwise."""
        absolute = Path(os.path.abspath(path))
        if absolute != absolute.resolve() or not any(
            absolute.is_relative_to(root) for root in self.roots
        ):
            raise ResultsError(f"{path}: outside the folders given to view; not shown")
        return absolute

    def sibling(self, results: RunResults, row: Attempt, suffix: str) -> Path | None:
        """The attempt's trajectory file (suffix '.jsonl') or its diff ('.diff'), confined;
        None when the row names none."""
        if not row.trajectory_file:
            return None
        candidate = Path(row.trajectory_file)
        if not candidate.is_absolute():
            candidate = results.path.parent / candidate
        return self.confined(candidate.with_suffix(suffix))

    def read_text(self, path: Path) -> str:
        """A confined file's text; ResultsError naming it when it cannot be read."""
        try:
            if path.stat().st_size > TRAJECTORY_LIMIT:
                raise ResultsError(f"{path.name}: larger than {TRAJECTORY_LIMIT} bytes; not shown")
            return path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            raise ResultsError(f"{path.name}: not found (moved or deleted?)") from None
        except OSError as exc:
            raise ResultsError(f"{path.name}: cannot be read ({exc.strerror})") from None
