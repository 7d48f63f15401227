"""Where the viewer's data comes from: runs found under the given paths, read through the
results, journal, labbook and trajectory owners, and files confined to the given folders.

This is the viewer's only module that reads files. Every page asks it by an opaque run
id and a row index, never by a path, so no URL can name a file. Each file is opened by
walking down from a given folder one name at a time without following any symbolic link,
and read only when the descriptor opened is a regular file: a link swapped in after a
check, or a FIFO that would block, is never read. What it parses is capped in size.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from agent_eval.errors import AgentEvalError, ConfigError, ResultsError
from agent_eval.interop import foreign_kind, load_runs
from agent_eval.results import (
    JOURNAL_SUFFIX,
    Attempt,
    AttemptResult,
    RunHead,
    RunResults,
    compact,
    load_results,
    read_head,
    read_journal,
    read_labbook,
    tally,
)
from agent_eval.trajectory import (
    JsonLines,
    Limits,
    Trajectory,
    is_trajectory_name,
    read_json_lines,
    read_trajectory,
    trajectory_path,
)

MAX_DEPTH = 4
"""Folders below a given one that are searched for runs."""
RESCAN_SECONDS = 2.0
"""A live run's new files and rows show up within this long."""
LIVE_SECONDS = 600
"""A journal changed this recently shows as a run in progress."""
RUN_FILE_LIMIT = 2 * 1024 * 1024 * 1024
"""The largest results, journal or labbook file read, in bytes (a run of 100,000 attempts
is about 100 MB)."""
DIFF_LIMIT = 2 * 1024 * 1024
"""Bytes of a workspace diff shown; the rest is cut, and the page says so."""
TRAJECTORY_RECORDS = 20_000
"""Records kept of one trajectory; the rest are counted and cut, and the page says so."""
TRAJECTORY_BYTES = 16 * 1024 * 1024
"""Bytes of one trajectory's records kept, however few the records."""
RECORD_LIMIT = 8 * 1024 * 1024
"""The longest trajectory line parsed, in bytes; a longer one is skipped and named."""
READ_LIMITS = Limits(records=TRAJECTORY_RECORDS, bytes=TRAJECTORY_BYTES, line=RECORD_LIMIT)
"""How much of a trajectory (or a recording) a page reads."""
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)


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


def _signature(path: Path) -> tuple[int, int]:
    found = path.stat()
    return found.st_mtime_ns, found.st_size


_TOO_DEEP = "nested too deeply to read (the file is damaged; re-run or restore it)"


def _read_journal(
    path: Path, skipped: list[str] | None = None
) -> tuple[dict[str, Any], list[AttemptResult]]:
    """``read_journal``, with a line nested beyond the parser's stack named as damage."""
    try:
        return read_journal(path, skipped=skipped)
    except RecursionError:
        raise ResultsError(f"journal {path.name}: {_TOO_DEEP}") from None


def _json_line(line: bytes) -> Any:
    """One line's JSON; ValueError when it is not JSON or nests beyond the parser's stack."""
    try:
        return json.loads(line)
    except RecursionError:
        raise ValueError("nested too deeply") from None


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
                for name in sorted(names):  # a folder of 100,000 trajectories is passed fast
                    if name.endswith((".json", ".jsonl", ".eval")) and not is_trajectory_name(name):
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
            with self.open_confined(path, RUN_FILE_LIMIT) as handle:
                start = handle.read(4096)
        except ResultsError as exc:  # gone meanwhile: nothing to show; a FIFO, say: its message
            if str(exc).endswith("(moved or deleted?)"):
                return None
            return RunSource(_run_id("results", path), "results", path, problem=str(exc))
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
            with self.open_confined(path, RUN_FILE_LIMIT):
                pass  # a regular file under the folders given, and not too large
            source.signature = _signature(path)
            if old is not None and old.signature == source.signature:
                old.run["in_progress"] = _recent(old.signature)
                return old  # a journal only grows: unchanged, it says the same
            header, rows = _read_journal(path, source.problems)
        except (AgentEvalError, OSError) as exc:
            source.problem = str(exc)
            return source
        source.run = {
            **_journal_run(header, rows).model_dump(mode="json"),
            "in_progress": _recent(source.signature),
            "summary": tally(rows).summary().model_dump(mode="json"),
        }
        return source

    def _labbook(self, path: Path) -> list[RunSource]:
        try:
            with self.open_confined(path, RUN_FILE_LIMIT) as handle:
                first = handle.readline(64 * 1024)
            probe = _json_line(first) if first.strip() else None
        except (ResultsError, ValueError):
            return []
        if not isinstance(probe, dict) or "run_id" not in probe or "meta" in probe:
            return []  # a trajectory or some other JSON-lines file
        try:
            labbook = read_labbook(path)
        except RecursionError:
            return [RunSource(_run_id("labbook", path), "labbook", path, problem=_TOO_DEEP)]
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
            if source.kind == "foreign" and source.path.is_dir():
                self.confined(source.path)  # another harness's folder (ATIF, a Harbor job)
            else:
                with self.open_confined(source.path, RUN_FILE_LIMIT):
                    pass  # still a regular file under the folders given, and not too large
            signature = _signature(source.path)
            cached = self._loaded.get(run_id)
            if cached is not None and cached[0] == signature:
                return cached[1]
            if source.kind == "foreign":
                loaded = load_runs(source.path)[source.index]
            elif source.kind == "journal":
                header, rows = _read_journal(source.path)
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
        try:
            resolved = absolute.resolve()
        except OSError as error:  # a link swapped while it was being followed
            raise ResultsError(
                f"{path}: changed while it was read ({error.strerror}); not shown"
            ) from None
        if absolute != resolved or not any(absolute.is_relative_to(root) for root in self.roots):
            raise ResultsError(f"{path}: outside the folders given to view; not shown")
        return absolute

    def sibling(self, results: RunResults, row: Attempt, suffix: str) -> Path | None:
        """The attempt's trajectory file (suffix '.jsonl') or its diff ('.diff'), confined;
        None when the row names none."""
        candidate = trajectory_path(results.path, row.trajectory_file)
        return None if candidate is None else self.confined(candidate.with_suffix(suffix))

    @contextmanager
    def open_confined(self, path: Path, limit: int | None = None) -> Iterator[IO[bytes]]:
        """``path`` opened for reading, when it is a regular file inside a given folder,
        reached without following a symbolic link, and (with ``limit``) at most ``limit``
        bytes long; ResultsError naming it otherwise.

        Each folder on the way is opened relative to the one before with O_NOFOLLOW, and
        the file itself with O_NOFOLLOW and O_NONBLOCK, then checked on its descriptor:
        what is read is what was checked, even if a name is swapped for a link meanwhile,
        and a FIFO is refused instead of blocking.
        """
        absolute = Path(os.path.abspath(path))
        root = next((r for r in self.roots if absolute.is_relative_to(r) and absolute != r), None)
        if root is None:
            raise ResultsError(f"{path}: outside the folders given to view; not shown")
        parts = absolute.relative_to(root).parts
        try:
            folder = os.open(root, _OPEN_FLAGS | os.O_DIRECTORY)
        except OSError as exc:
            raise _unreadable(absolute, exc) from None
        try:
            for part in parts[:-1]:
                inner = os.open(part, _OPEN_FLAGS | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
                os.close(folder)
                folder = inner
            fd = os.open(parts[-1], _OPEN_FLAGS | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
        except OSError as exc:
            raise _unreadable(absolute, exc) from None
        finally:
            os.close(folder)
        handle = os.fdopen(fd, "rb")
        with handle:
            found = os.fstat(handle.fileno())
            if not stat.S_ISREG(found.st_mode):
                raise ResultsError(f"{absolute.name}: not a regular file; not shown")
            if limit is not None and found.st_size > limit:
                raise ResultsError(f"{absolute.name}: larger than {limit} bytes; not shown")
            yield handle

    def read_text(self, path: Path, limit: int = DIFF_LIMIT) -> tuple[str, bool]:
        """A confined file's text, at most ``limit`` bytes of it, and whether more was cut;
        ResultsError naming it when it cannot be read."""
        with self.open_confined(path) as handle:
            data = handle.read(limit + 1)
        return data[:limit].decode("utf-8", errors="replace"), len(data) > limit

    def read_trajectory(self, path: Path) -> Trajectory:
        """A confined trajectory, read by its owner with the page's caps: damaged lines
        are skipped and records past the caps cut, and ``problem`` names them."""
        with self.open_confined(path) as handle:
            return read_trajectory(handle, name=path.name, limits=READ_LIMITS, tolerant=True)

    def read_json_lines(self, path: Path) -> JsonLines:
        """A confined JSON-lines file (a recording), with the caps trajectories are read with."""
        with self.open_confined(path) as handle:
            return read_json_lines(handle, path.name, READ_LIMITS, strict=False)


def _unreadable(path: Path, exc: OSError) -> ResultsError:
    """What to say of a file that could not be opened."""
    if exc.errno == errno.ENOENT:
        return ResultsError(f"{path.name}: not found (moved or deleted?)")
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return ResultsError(f"{path.name}: reached through a symbolic link; not shown")
    return ResultsError(f"{path.name}: cannot be read ({exc.strerror})")
