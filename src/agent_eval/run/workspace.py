"""Each attempt starts from a fresh copy of the suite's documents, so no attempt can
change what another attempt, or the shipped suite, sees.

A run's scratch is one folder, ``agent-eval-run-{pid}-{random}``, in RAM when it can be:
a folder per slot (its attempts' workspaces, and the private /tmp and HOME a sandbox
binds), and the state checks' copies. It is removed when the run ends, and a later run
removes any whose process is gone (a run killed with SIGKILL), so none stays for good.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agent_eval.errors import ConfigError
from agent_eval.redaction import Redactor
from agent_eval.suite import LoadedSuite, shipped_suites

MEMORY_SCRATCH = Path("/dev/shm")
"""Where attempt workspaces go when it exists: they are scratch, and creating files on a
RAM-backed folder costs a tenth of what it costs on a disk."""


def scratch_root() -> str | None:
    """The folder attempt workspaces are made in (None: the system temporary folder)."""
    if MEMORY_SCRATCH.is_dir() and os.access(MEMORY_SCRATCH, os.W_OK | os.X_OK):
        return str(MEMORY_SCRATCH)
    return None


def scratch_parent() -> str:
    """The folder a run's scratch folder is made in."""
    return scratch_root() or tempfile.gettempdir()


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


RUN_PREFIX = "agent-eval-run-"
SLOT_PRIVATE = ("tmp", "home")
"""What a slot folder keeps between attempts, emptied before each: a sandbox binds them
as the attempt's /tmp and HOME, so the folders themselves must stay."""
SLOT_LOGS = "logs"
"""A sandboxed agent's log folder (options["log_dir"]), in its slot folder. It is bound
there from the slot's log folder beside it (slot_logs), kept for the whole run: the
harness appends what is in it to the run's trajectory folder at the end."""
LOG_SUFFIX = ".log"
"""What every agent log collected from a sandbox is named with: no reader of runs takes it."""


@contextmanager
def run_scratch() -> Iterator[Path]:
    """The run's scratch folder, removed afterwards; stale ones of dead runs go first."""
    parent = scratch_parent()
    remove_stale(Path(parent))
    root = Path(tempfile.mkdtemp(prefix=f"{RUN_PREFIX}{os.getpid()}-", dir=parent))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def remove_stale(parent: Path) -> None:
    """Remove the scratch folders of runs whose process no longer exists."""
    with contextlib.suppress(OSError), os.scandir(parent) as entries:
        for entry in entries:
            if not entry.name.startswith(RUN_PREFIX):
                continue
            pid = entry.name.removeprefix(RUN_PREFIX).partition("-")[0]
            if pid.isdigit() and not _alive(int(pid)):
                shutil.rmtree(entry.path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def slot_folder(run: Path, number: int) -> Path:
    """A slot's folder in the run's scratch, with its private /tmp and HOME, and its log
    folder beside it. A sandbox may replace the folder with one of its own
    (run/executors/sandboxed.py)."""
    folder = run / f"slot-{number}"
    for name in (*SLOT_PRIVATE, SLOT_LOGS):
        (folder / name).mkdir(parents=True, exist_ok=True)
    slot_logs(folder).mkdir(exist_ok=True)
    return folder


def slot_logs(folder: Path) -> Path:
    """Where a sandboxed slot's agent logs are kept: beside the slot folder, which may
    exist only as long as one sandbox."""
    return folder.with_name(f"{folder.name}.{SLOT_LOGS}")


def collect_logs(run: Path, folder: Path, redact: Redactor) -> None:
    """Move every slot's agent logs still in the run's scratch to ``folder`` (move_logs)."""
    for logs in sorted(run.glob(f"slot-*.{SLOT_LOGS}")):
        move_logs(logs, folder, redact)


def move_logs(logs: Path, folder: Path, redact: Redactor, limit: int | None = None) -> None:
    """Append each log in ``logs`` to the file of the same name in ``folder``, redacted (the
    agent wrote them, and may have written a secret it was given), and empty ``logs``, so
    that nothing in it reaches a later attempt. Past ``limit`` bytes in all, a last line
    says how much was left out.

    ``folder`` holds the run's trajectories, and may hold results, journals and
    labbooks: a log not named ``*.log`` gets the suffix added, so that no name an agent
    chooses lands on a file the harness reads as a run or a record (``forged.json``
    becomes ``forged.json.log``)."""
    left = limit
    for log in sorted(logs.iterdir()):
        if log.is_file() and not log.is_symlink() and log.stat().st_size and left != 0:
            folder.mkdir(parents=True, exist_ok=True)
            name = log.name if log.name.endswith(LOG_SUFFIX) else log.name + LOG_SUFFIX
            with log.open("rb") as reader, (folder / name).open("ab") as writer:
                stream = redact.stream(writer.write)
                while left != 0 and (chunk := reader.read(1 << 16)):
                    if left is not None:
                        chunk, left = chunk[:left], max(0, left - len(chunk))
                    stream.write(chunk)
                if left == 0:  # whatever follows, here or in later files, is left out
                    stream.write(f"\n[agent-eval] log cut at {limit:,} bytes, the most one "
                                 "attempt's logs keep\n".encode())  # fmt: skip
                stream.close()
        if log.is_dir() and not log.is_symlink():
            shutil.rmtree(log, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                log.unlink()


def clear_slot(folder: Path, mounts_in_tmp: tuple[str, ...] = ()) -> None:
    """Empty a slot folder between attempts: what one attempt left there, in /tmp, HOME
    or beside its workspace, never reaches the next. Its processes are all gone by now.

    ``mounts_in_tmp`` are the sandbox's mount points in its /tmp (relative to it): they
    stay, empty, or the folders bound there would vanish from the sandbox."""
    spared: set[tuple[str, ...]] = {(SLOT_LOGS,)}
    spared |= {("tmp", *Path(m).parts) for m in mounts_in_tmp}
    _empty(folder, (), spared)
    for name in SLOT_PRIVATE:
        (folder / name).mkdir(exist_ok=True)  # in case it was replaced by a file


def _empty(folder: Path, here: tuple[str, ...], spared: set[tuple[str, ...]]) -> None:
    """Remove what is in ``folder`` (at ``here`` in the slot), but for the ``spared``
    paths, and the folders on the way to them, which are emptied around them."""
    with os.scandir(folder) as entries:
        for entry in entries:
            path = (*here, entry.name)
            if path in spared and entry.is_dir(follow_symlinks=False):
                continue
            if entry.is_dir(follow_symlinks=False):
                leads = path in {("tmp",), ("home",)} or any(s[: len(path)] == path for s in spared)
                if leads:
                    _empty(Path(entry.path), path, spared)
                else:
                    shutil.rmtree(entry.path, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)


@contextmanager
def fresh_workspace(
    source: Path | None, slot: Path | None = None, mounts_in_tmp: tuple[str, ...] = ()
) -> Iterator[Path]:
    """A temporary copy of ``source`` (or an empty folder), removed afterwards; in the
    ``slot`` folder, emptied first, when the attempt has one."""
    if slot is not None:
        clear_slot(slot, mounts_in_tmp)
    root = Path(tempfile.mkdtemp(prefix="agent-eval-", dir=slot or scratch_root()))
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
    """Copy files and folders, and symbolic links as links (never followed), with their
    modification times: what an agent sees (`ls -l`) is the same in every attempt and in
    a replay of it.

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
                _same_times(entry.path, destination)
    _same_times(source, target)  # after its entries, whose creation changed it


def _same_times(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    made = os.stat(source)
    os.utime(target, ns=(made.st_atime_ns, made.st_mtime_ns))
