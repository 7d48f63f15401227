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
from agent_eval.suite import LoadedSuite, shipped_suites

MEMORY_SCRATCH = Path("/dev/shm")
"""Where attempt workspaces go when it exists: they are scratch, and creating files on a
RAM-backed folder costs a tenth of what it costs on a disk."""


def scratch_root() -> str | None:
    """The folder attempt workspaces are made in (None: the system temporary folder)."""
    if MEMORY_SCRATCH.is_dir() and os.access(MEMORY_SCRATCH, os.W_OK | os.X_OK):
        return str(MEMORY_SCRATCH)
    return None


def workspace_source(
    loaded: LoadedSuite, workspace: Path | None, allow_empty: bool = False
) -> tuple[Path | None, str]:
    """The folder each attempt copies, and a note for the console about where it came from.

    An explicit --workspace wins. When it names a folder that does not exist yet (or an
    empty one) and the suite has documents, the folder is created with them, so the
    course's commands (`--workspace ./agent-workspace`) work verbatim on a fresh clone.
    A run never starts on an empty workspace unless ``allow_empty`` says so.
    """
    check_workspace(loaded, workspace, allow_empty)
    documents = loaded.documents
    origin = "from the suite"
    if loaded.same_as is not None:
        origin = f"from the shipped suite {loaded.same_as} ({loaded.path.name} has its tasks)"
    if workspace is None:
        if documents is None:
            return None, "workspace: empty (--allow-empty-workspace)"
        return documents, f"workspace: {_count(documents)} {origin}"
    if _has_files(workspace) or documents is None:
        return workspace, f"workspace: {_count(workspace)} from {workspace}"
    shutil.copytree(documents, workspace, dirs_exist_ok=True)
    return workspace, f"workspace: created {workspace} with {_count(workspace)} {origin}"


def check_workspace(loaded: LoadedSuite, workspace: Path | None, allow_empty: bool) -> None:
    """Raise ConfigError, naming the fix, when a run would start from no documents.

    Changes nothing on disk, so `validate` can ask the same question `run` does.
    """
    label, documents = loaded.path.name, loaded.documents
    has_documents = documents is not None and _has_files(documents)
    if workspace is not None:
        if workspace.exists() and not workspace.is_dir():
            raise ConfigError(f"--workspace {workspace}: is a file, not a folder; give a folder")
        if _has_files(workspace) or has_documents or (allow_empty and workspace.is_dir()):
            return
        if not workspace.exists():
            raise ConfigError(
                f"--workspace {workspace}: no such folder, and suite {label} has no documents "
                f"to create it with; create it with the agent's documents ({_shipped_documents()})"
            )
        raise ConfigError(
            f"--workspace {workspace}: the folder is empty; put the agent's documents in it, "
            f"or give --allow-empty-workspace if the tasks need none"
        )
    if has_documents or allow_empty:
        return
    where = (
        f"its documents folder {documents} is empty"
        if documents is not None
        else "its 'workspace' names no folder next to it"
    )
    raise ConfigError(
        f"suite {label}: no documents to work on ({where}); give --workspace DIR with the "
        f"agent's documents ({_shipped_documents()}), or --allow-empty-workspace if the tasks "
        "need none"
    )


def _shipped_documents() -> str:
    """Where documents can come from: the shipped suites' folders, and `init`, which
    copies one into a folder of one's own."""
    here = " (./agent-workspace is here)" if _has_files(Path("agent-workspace")) else ""
    folders = ", ".join(str(path.parent / "workspace") for path in shipped_suites().values())
    return (
        f"the shipped suites' documents are in {folders}; `agent-eval init DIR` copies "
        f"part26's (--suite NAME: another's) into DIR/agent-workspace{here}"
    )


def _has_files(folder: Path) -> bool:
    return folder.is_dir() and any(p.is_file() for p in folder.rglob("*"))


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
