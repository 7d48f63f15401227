"""Run a suite's command check after the agent stops, in a copy of the final workspace.

The copy keeps the attempt's workspace exactly as the agent left it (for the diff and
the other checks), and lets the suite add files the agent never saw, such as hidden
tests, over whatever the agent wrote. There is no shell; the environment is built from
nothing, so no API key or other secret of the harness reaches the command; the command
runs in its own process group, which is killed when its time is up.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO

from agent_eval.records import CommandCheck

TAIL_CHARS = 2000
"""How much of the end of a command's output is kept in the outcome."""
SAFE_PATH = "/usr/bin:/bin"
"""System programs; the harness's own interpreter folder is put in front of it."""
PYTHON_NAMES = frozenset({"python", "python3"})
"""Program names that mean the harness's interpreter, so checks run the same everywhere."""


def run_command_check(
    check: CommandCheck, workspace: Path, suite_dir: Path
) -> tuple[bool, str | None]:
    """Run ``check`` on a copy of ``workspace``: whether it passed, and its output's tail."""
    hidden = None
    if check.with_files is not None:
        hidden = suite_dir / check.with_files
        if not hidden.is_dir():
            return False, f"with_files folder {check.with_files} is missing next to the suite"
    with tempfile.TemporaryDirectory(prefix="agent-eval-check-") as scratch:
        copy = Path(scratch) / "workspace"
        shutil.copytree(workspace, copy, symlinks=True)
        if hidden is not None:
            overlay(hidden, copy)
        program = resolve_program(check.command[0], copy)
        if program is None:
            return False, f"{check.command[0]!r} is not installed on this machine"
        env = command_environment(copy, Path(scratch))
        return _run([program, *check.command[1:]], copy, env, check)


def overlay(source: Path, target: Path) -> None:
    """Copy every file of ``source`` into ``target``, replacing what the agent left there.

    A link the agent planted where a hidden file goes is removed first, so the copy can
    neither be redirected outside the scratch folder nor serve the agent's own version.
    """
    for root, _dirs, names in os.walk(source):
        relative = Path(root).relative_to(source)
        folder = target
        for part in relative.parts:
            folder = folder / part
            if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
                folder.unlink()
            folder.mkdir(exist_ok=True)
        for name in names:
            destination = folder / name
            if destination.is_symlink() or destination.is_file():
                destination.unlink()
            elif destination.is_dir():
                shutil.rmtree(destination)
            shutil.copy2(Path(root) / name, destination)


def resolve_program(name: str, copy: Path) -> str | None:
    """The executable for argv[0]: our interpreter, a file in the copy, or a system tool."""
    if name in PYTHON_NAMES:
        return sys.executable
    if "/" in name:
        candidate = (copy / name).resolve()
        inside = candidate.is_relative_to(copy.resolve())
        return str(candidate) if inside and candidate.is_file() else None
    return shutil.which(name, path=search_path())


def search_path() -> str:
    """The harness interpreter's folder (test runners installed with it), then the system."""
    return os.pathsep.join([str(Path(sys.executable).parent), SAFE_PATH])


def command_environment(copy: Path, scratch: Path) -> dict[str, str]:
    """The whole environment of a check command; nothing is inherited from the harness."""
    return {
        "PATH": search_path(),
        "HOME": str(copy),
        "TMPDIR": str(scratch),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
    }


def _run(
    argv: list[str], cwd: Path, env: dict[str, str], check: CommandCheck
) -> tuple[bool, str | None]:
    # A file rather than a pipe: the child never blocks on a full pipe, and endless
    # output is bounded by the timeout alone.
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            code: int | None = process.wait(timeout=check.timeout)
        except subprocess.TimeoutExpired:
            code = None
        # Children left running in the background would outlive the scratch folder.
        _kill_group(process.pid)
        process.wait()
        tail = _tail(output)
    if code is None:
        return False, f"did not finish within {check.timeout:g} s and was stopped{tail}"
    if code != check.exit_code:
        return False, f"exit code {code}, expected {check.exit_code}{tail}"
    return True, f"exit code {code}{tail}"


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _tail(output: IO[bytes]) -> str:
    """The end of the captured output, prefixed for the outcome's detail, or ''."""
    size = output.seek(0, os.SEEK_END)
    output.seek(max(0, size - TAIL_CHARS * 4))
    text = output.read().decode("utf-8", errors="replace")[-TAIL_CHARS:].strip()
    if not text:
        return ""
    cut = "..." if size > len(text.encode("utf-8")) + 2 else ""
    return f"; output tail:\n{cut}{text}"
