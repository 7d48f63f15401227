"""Each attempt starts from a fresh copy of the suite's documents, so no attempt can
change what another attempt, or the shipped suite, sees."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agent_eval.errors import ConfigError
from agent_eval.suite import LoadedSuite

MEMORY_SCRATCH = Path("/dev/shm")
"""Where attempt workspaces go when it exists: they are scratch, and creating files on a
RAM-backed folder costs a tenth of what it costs on a disk."""


def scratch_root() -> str | None:
    """The folder attempt workspaces are made in (None: the system temporary folder)."""
    if MEMORY_SCRATCH.is_dir() and os.access(MEMORY_SCRATCH, os.W_OK | os.X_OK):
        return str(MEMORY_SCRATCH)
    return None


def workspace_source(loaded: LoadedSuite, workspace: Path | None) -> tuple[Path | None, str]:
    """The folder each attempt copies, and a note for the console about where it came from.

    An explicit --workspace wins. When it names a folder that does not exist yet and the
    suite ships documents, the folder is created with them, so the course's commands
    (`--workspace ./agent-workspace`) work verbatim on a fresh clone.
    """
    if workspace is None:
        if loaded.documents is None:
            return None, "workspace: empty (the suite names no documents; give --workspace)"
        return loaded.documents, f"workspace: {_count(loaded.documents)} from the suite"
    if workspace.is_dir():
        return workspace, f"workspace: {_count(workspace)} from {workspace}"
    if workspace.exists():
        raise ConfigError(f"--workspace {workspace}: is a file, not a folder; give a folder")
    if loaded.documents is None:
        raise ConfigError(
            f"--workspace {workspace}: no such folder; create it with the agent's documents"
        )
    shutil.copytree(loaded.documents, workspace)
    return workspace, f"workspace: created {workspace} with {_count(workspace)} from the suite"


def _count(folder: Path) -> str:
    files = sum(1 for p in folder.rglob("*") if p.is_file())
    return f"{files} file{'s' if files != 1 else ''}"


@contextmanager
def fresh_workspace(source: Path | None) -> Iterator[Path]:
    """A temporary copy of ``source`` (or an empty folder), removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="agent-eval-", dir=scratch_root()))
    try:
        folder = root / "workspace"
        if source is None:
            folder.mkdir()
        else:
            _copy_tree(source, folder)
        yield folder
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _copy_tree(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Copy files and folders, and symbolic links as links (never followed).

    A plain walk: shutil.copytree's checks on every file cost more than copying a
    suite's few small documents, and this runs once per attempt.
    """
    os.mkdir(target)
    with os.scandir(source) as entries:
        for entry in entries:
            destination = os.path.join(target, entry.name)
            if entry.is_symlink():
                os.symlink(os.readlink(entry.path), destination)
            elif entry.is_dir():
                _copy_tree(entry.path, destination)
            elif entry.is_file():
                with open(entry.path, "rb") as reader, open(destination, "wb") as writer:
                    shutil.copyfileobj(reader, writer)
