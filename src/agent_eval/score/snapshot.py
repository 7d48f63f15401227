"""The state of a workspace as data: a canonical snapshot, what changed, and a diff.

A snapshot maps every path under a folder, sorted, to the sha256 and size of its
content, like tau-bench's database hash: two workspaces are in the same state exactly
when their snapshots are equal. :func:`snapshot` and :func:`workspace_diff` read the
disk; :func:`changes` is a pure comparison of two snapshots. :func:`still_copy` is what
an attempt is judged on: its workspace copied where nothing the agent left running can
reach, with no link followed.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import hashlib
import json
import os
import shutil
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

CHUNK = 1024 * 1024
MAX_DIFF_BYTES = 512 * 1024
"""Text files larger than this are listed as changed instead of diffed line by line."""
MAX_WORKSPACE_DIFF_BYTES = 2 * 1024 * 1024
"""The largest workspace diff kept with a trajectory (2 MiB): an agent that rewrites
thousands of files must not leave a diff of hundreds of megabytes."""
DIFF_CUT_MARK = "[agent-eval] diff cut"
"""How the last line of a diff that was cut begins."""
MAX_COPY_FILES = 20_000
MAX_COPY_BYTES = 1024 * 1024 * 1024
"""The largest workspace an attempt is judged on (files, bytes): a copy of more would
cost the run more than any check is worth."""


@dataclass(frozen=True)
class Entry:
    """One path's state: what it is and a hash of its content."""

    sha256: str
    """Hex digest of the content (of the target text, for a symbolic link)."""
    size: int
    """Bytes of content."""
    kind: Literal["file", "link", "other"] = "file"
    """A regular file, a symbolic link (never followed), or something else (a pipe...)."""


@dataclass(frozen=True)
class Snapshot:
    """Every path under a folder, sorted, with its state; folders are implied by paths."""

    files: Mapping[str, Entry] = field(default_factory=dict)
    """Posix paths relative to the folder, in sorted order."""

    def digest(self) -> str:
        """One hash of the whole state, from its canonical (sorted, compact) JSON."""
        canonical = json.dumps(
            [[path, e.kind, e.sha256, e.size] for path, e in sorted(self.files.items())],
            separators=(",", ":"),
        )
        return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Changes:
    """What differs between two snapshots, each list sorted."""

    added: list[str]
    removed: list[str]
    changed: list[str]

    def paths(self) -> list[str]:
        """Every differing path, sorted; aligned with :meth:`lines`."""
        return sorted([*self.added, *self.removed, *self.changed])

    def lines(self) -> list[str]:
        """One line per differing path: 'added x', 'removed y' or 'changed z'."""
        verb = {p: "added" for p in self.added}
        verb |= {p: "removed" for p in self.removed}
        verb |= {p: "changed" for p in self.changed}
        return [f"{verb[path]} {path}" for path in self.paths()]


def snapshot(folder: Path) -> Snapshot:
    """Record the state of every path under ``folder`` without following links."""
    files: dict[str, Entry] = {}
    for root, dirs, names in os.walk(folder, followlinks=False):
        base = Path(root)
        # os.walk lists a link to a folder among dirs and does not enter it; record it.
        for name in [*names, *(d for d in dirs if (base / d).is_symlink())]:
            path = base / name
            files[path.relative_to(folder).as_posix()] = _entry(path)
    return Snapshot(dict(sorted(files.items())))


def _entry(path: Path) -> Entry:
    if path.is_symlink():
        target = os.readlink(path).encode("utf-8", errors="surrogateescape")
        return Entry(hashlib.sha256(target).hexdigest(), len(target), "link")
    if not path.is_file():
        return Entry(hashlib.sha256(b"").hexdigest(), 0, "other")
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return Entry(digest.hexdigest(), size)


def changes(before: Snapshot, after: Snapshot) -> Changes:
    """Paths added, removed and changed from ``before`` to ``after``: pure."""
    start, end = before.files, after.files
    return Changes(
        added=sorted(set(end) - set(start)),
        removed=sorted(set(start) - set(end)),
        changed=sorted(p for p in set(start) & set(end) if start[p] != end[p]),
    )


def workspace_diff(
    before: Path | Snapshot | None, workspace: Path, after: Snapshot | None = None
) -> str:
    """A unified diff from the starting state to ``workspace``; '' when nothing changed.

    ``before`` is the folder the workspace was copied from (full text diffs), or only its
    snapshot (then a changed file's old text is unknown and the file is listed), or None
    for a workspace that started empty; ``after`` is the workspace's snapshot, when the
    caller took it already. Binary and very large files are listed in the
    form GNU diff uses, 'Binary files a/x and b/x differ', which patch tools skip. The
    diff ends before the first file that would take it past MAX_WORKSPACE_DIFF_BYTES,
    with a line (which patch tools skip too) saying what was cut.
    """
    folder = before if isinstance(before, Path) else None
    start = snapshot(before) if isinstance(before, Path) else (before or Snapshot())
    end = snapshot(workspace) if after is None else after
    moved = changes(start, end)
    paths = moved.paths()
    parts, size = [], 0
    for shown, path in enumerate(paths):
        part = _path_diff(path, moved, start, end, folder, workspace)
        size += len(part.encode("utf-8"))
        if size > MAX_WORKSPACE_DIFF_BYTES:
            parts.append(
                f"{DIFF_CUT_MARK} at {MAX_WORKSPACE_DIFF_BYTES // 1024 // 1024} MiB: "
                f"{len(paths) - shown} more changed file(s) not shown, from {path}\n"
            )
            break
        parts.append(part)
    return "".join(parts)


def _path_diff(
    path: str, moved: Changes, start: Snapshot, end: Snapshot, folder: Path | None, workspace: Path
) -> str:
    """One changed path's part of the workspace diff."""
    added, removed = path in moved.added, path in moved.removed
    old_name = "/dev/null" if added else f"a/{path}"
    new_name = "/dev/null" if removed else f"b/{path}"
    if _is_link(start, path) or _is_link(end, path):
        return f"Files {old_name} and {new_name} differ (symbolic link)\n"
    if folder is None and not added:
        return f"Files {old_name} and {new_name} differ (no starting copy kept)\n"
    old = "" if added else _text(folder / path) if folder is not None else None
    new = "" if removed else _text(workspace / path)
    if old is None or new is None:
        return f"Binary files {old_name} and {new_name} differ\n"
    # An empty file added or removed has no lines, so it would not show otherwise.
    unified = _unified(old, new, old_name, new_name)
    return unified or f"Files {old_name} and {new_name} differ (empty file)\n"


def _is_link(snap: Snapshot, path: str) -> bool:
    entry = snap.files.get(path)
    return entry is not None and entry.kind == "link"


def _text(path: Path) -> str | None:
    """The file's text when it is a regular, small, UTF-8 file without NUL bytes."""
    if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_DIFF_BYTES:
        return None
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _unified(old: str, new: str, old_name: str, new_name: str) -> str:
    """One file's unified diff, marking a last line without a newline as diff does."""
    lines = difflib.unified_diff(
        _marked(old), _marked(new), fromfile=old_name, tofile=new_name, lineterm="\n"
    )
    return "".join(lines)


def _marked(text: str) -> list[str]:
    """Lines split on '\\n' only (str.splitlines also splits on form feeds and more)."""
    if not text:
        return []
    lines = [line + "\n" for line in text.split("\n")]
    if text.endswith("\n"):
        lines.pop()
    else:
        lines[-1] = lines[-1] + "\\ No newline at end of file\n"
    return lines


def still_copy(workspace: Path, target: Path, made: tuple[int, int] | None = None) -> str | None:
    """Copy ``workspace`` to ``target`` (a new folder) as it is now, to be judged there.

    The agent may have left a process or a thread running (``--isolation worker``, a
    build() that starts one), which could swap a file for a link to something outside
    between a check's look and its read. The copy goes through descriptors and follows
    no link, not even one swapped in while it is made: links are copied as links (which
    every check refuses to follow), and a file that goes while it is copied is left out.
    ``made`` is the workspace's (device, inode) when it was made; a workspace replaced
    since is refused. Past MAX_COPY_FILES or MAX_COPY_BYTES nothing is judged either.
    Returns why nothing can be judged, or None."""
    try:
        root = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        return f"the workspace cannot be opened ({exc.strerror}); not checked"
    try:
        found = os.fstat(root)
        if made is not None and (found.st_dev, found.st_ino) != made:
            return "the workspace was replaced during the attempt; not checked"
        os.mkdir(target)
        return _copy_folder(root, str(target), [0, 0])
    finally:
        os.close(root)


def _copy_folder(folder: int, there: str, counts: list[int]) -> str | None:
    """Copy what the open folder ``folder`` holds into ``there``; ``counts`` are the
    files and bytes copied so far."""
    with os.scandir(folder) as entries:
        names = [entry.name for entry in entries]
    for name in names:
        destination = os.path.join(there, name)
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                         dir_fd=folder)  # fmt: skip
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # a link: its text, never what it names
                with contextlib.suppress(OSError):
                    os.symlink(os.readlink(name, dir_fd=folder), destination)
            elif exc.errno == errno.ENXIO:  # a socket: something else than a file
                os.mkfifo(destination)
            continue  # gone since it was listed, or unreadable: left out
        try:
            refused = _copy_entry(fd, destination, counts)
        finally:
            os.close(fd)
        if refused is not None:
            return refused
    return None


def _copy_entry(fd: int, destination: str, counts: list[int]) -> str | None:
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        os.mkdir(destination)
        return _copy_folder(fd, destination, counts)
    if not stat.S_ISREG(info.st_mode):
        os.mkfifo(destination)  # a pipe or a device: judged as something else than a file
        return None
    counts[0] += 1
    counts[1] += info.st_size
    if counts[0] > MAX_COPY_FILES or counts[1] > MAX_COPY_BYTES:
        return (f"the workspace is over {MAX_COPY_FILES} files or "
                f"{MAX_COPY_BYTES // 1024 // 1024} MB; not checked")  # fmt: skip
    with open(fd, "rb", closefd=False) as reader, open(destination, "wb") as writer:
        shutil.copyfileobj(reader, writer, CHUNK)
    os.chmod(destination, stat.S_IMODE(info.st_mode) & 0o777)
    return None
