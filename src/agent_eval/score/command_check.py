"""Run a suite's command check after the agent stops, in a copy of the final workspace.

The copy keeps the attempt's workspace exactly as the agent left it (for the diff and
the other checks), and lets the suite add files the agent never saw, such as hidden
tests, over whatever the agent wrote. There is no shell; the environment is built from
nothing, so no API key or other secret of the harness reaches the command.

With the run's sandbox the command runs in one of its own: no network, the copy its only
writable folder, and the suite's hidden files bound read-only from the suite over their
places in the copy, so nothing in the copy can change them. Without it, the hidden files
are copied in and the command runs in its own process group, killed when its time is up.

A check's own code is trusted; the agent's files it imports or runs are not. So a Python
command runs under our reporter (score/check_report.py), and it passes only when that
reporter says the program ran to its end with the expected exit code and no failed test,
never because the process exited 0: agent code that calls os._exit(0) on import fails.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

from agent_eval.processes import run_in_group
from agent_eval.records import CommandCheck
from agent_eval.sandbox import Sandbox
from agent_eval.score.check_report import SAFE_PATH_FLAG
from agent_eval.score.snapshot import still_copy

TAIL_CHARS = 2000
"""How much of the end of a command's output is kept in the outcome."""
SAFE_PATH = "/usr/bin:/bin"
"""System programs; the harness's own interpreter folder is put in front of it."""
PYTHON_NAMES = frozenset({"python", "python3"})
"""Program names that mean the harness's interpreter, so checks run the same everywhere."""
PYTHON_FLAGS_WITH_VALUE = frozenset({"-W", "-X", "--check-hash-based-pycs"})
PYTEST_NAMES = frozenset({"pytest", "py.test"})
"""pytest's own programs, run as ``python -m pytest`` so that the reporter judges them."""
STOP_GRACE = 5.0
"""Seconds a check past its time has to end what it started before it is killed."""


def run_command_check(
    check: CommandCheck,
    workspace: Path,
    suite_dir: Path,
    sandbox: Sandbox | None = None,
    scratch: Path | None = None,
) -> tuple[bool, str | None]:
    """Run ``check`` on a copy of ``workspace``: whether it passed, and its output's tail.
    The copy is made in ``scratch`` (the run's, removed with it) or the temporary folder."""
    hidden = None
    if check.with_files is not None:
        # Absolute: the sandbox binds from it while working in the copy, where a relative
        # path would name the agent's files instead of the suite's.
        hidden = suite_dir.absolute() / check.with_files
        if not hidden.is_dir():
            return False, f"with_files folder {check.with_files} is missing next to the suite"
    with tempfile.TemporaryDirectory(prefix="agent-eval-check-", dir=scratch) as folder:
        root = Path(folder)
        copy = root / "workspace"
        refused = still_copy(workspace, copy)
        if refused is not None:
            return False, refused
        source = hidden or root
        placed = [] if hidden is None else place_hidden(hidden, copy, copied=sandbox is None)
        remove_conftests(copy, {copy / rel for rel in placed})
        program = resolve_program(check.command[0], copy)
        if program is None:
            return False, f"{check.command[0]!r} is not installed on this machine"
        report = root / "report" / "result.json"
        report.parent.mkdir()
        argv = with_reporter([program, *check.command[1:]], report)
        env = command_environment(copy, root)
        if sandbox is not None:
            for name in ("tmp", "home"):
                (root / name).mkdir()
            env = {**env, "HOME": str(root / "home"), "TMPDIR": "/tmp"}
            argv = sandbox.argv(
                argv,
                writable=[str(copy), str(report.parent), str(root / "home")],
                readonly=[(str(source / rel), str(copy / rel)) for rel in placed],
                tmp=str(root / "tmp"),
                cwd=str(copy),
                network="none",
            )
        else:  # no PID namespace: a subreaper ends what the command leaves running
            # (-P -s: from the harness's install, never from the workspace it runs in)
            argv = [sys.executable, "-P", "-s", "-m", "agent_eval.sandbox.reaper", "--", *argv]
        passed, detail = _run(argv, copy, env, check)
        if passed and _reported(argv):
            return judge_report(report, check, detail)
        return passed, detail


def place_hidden(source: Path, target: Path, copied: bool) -> list[Path]:
    """Make room in the copy for every hidden file: what the agent left on its path (a
    file where a folder goes, a link) is removed. The files are copied in (``copied``),
    or left as empty files for the sandbox to bind the suite's own over, read-only.
    Returns the hidden files' paths relative to ``source``."""
    placed = []
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
            if copied:
                shutil.copy2(Path(root) / name, destination)
            else:
                destination.touch()
            placed.append(relative / name)
    return placed


def remove_conftests(copy: Path, suites: set[Path]) -> None:
    """Remove from the copy every conftest.py but the suite's own: pytest imports each it
    finds, so one the agent wrote would run inside the check and could rewrite its
    verdicts, whatever the check does with the agent's code."""
    for root, _dirs, names in os.walk(copy):
        if "conftest.py" in names and (found := Path(root) / "conftest.py") not in suites:
            found.unlink()


def with_reporter(argv: list[str], report: Path) -> list[str]:
    """A Python command (pytest's own program included) run under our reporter, which
    writes ``report`` if the program ends by itself; any other command unchanged.

    Our interpreter gets -P and -s, so that neither the workspace (the current folder)
    nor a user site the agent planted under HOME provides the reporter or what it
    imports; the reporter puts the folder the check's own flags allow on sys.path last."""
    if Path(argv[0]).name in PYTEST_NAMES:
        argv = [sys.executable, "-m", "pytest", *argv[1:]]
    if argv[0] != sys.executable:
        return argv
    at = 1
    while at < len(argv) and argv[at].startswith("-") and argv[at] not in ("-m", "-c", "-"):
        at += 2 if argv[at] in PYTHON_FLAGS_WITH_VALUE else 1
    if at >= len(argv) or argv[at] == "-":
        return argv  # a program on stdin: nothing to run it under
    flags = argv[1:at]  # the check's own: -I or -P (alone or in a group) means no path
    safe = any(f[:1] == "-" and f[1:2] not in "-WX" and ("I" in f or "P" in f) for f in flags)
    reporter = ["-m", "agent_eval.score.check_report", str(report), *([SAFE_PATH_FLAG] * safe)]
    return [argv[0], "-P", "-s", *flags, *reporter, *argv[at:]]


def _reported(argv: list[str]) -> bool:
    return "agent_eval.score.check_report" in argv


def judge_report(report: Path, check: CommandCheck, detail: str | None) -> tuple[bool, str | None]:
    """Whether the reporter's account says the check passed."""
    try:
        said: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False, (
            "the check did not report its result: it ended before finishing (os._exit, "
            f"or a crash in code it ran), so its exit code proves nothing; {detail}"
        )
    tail = (detail or "").partition(";")[2]
    suffix = f";{tail}" if tail else ""
    if said.get("exit") != check.exit_code:
        return False, f"the check reported exit {said.get('exit')}{suffix}"
    tests, failed = int(said.get("tests") or 0), int(said.get("failed") or 0)
    if failed:
        return False, f"{failed} of {tests} test(s) failed{suffix}"
    if said.get("framework") and tests == 0 and check.exit_code == 0:
        return False, f"{said['framework']} ran no test{suffix}"
    ran = f", {tests} test(s) passed" if tests else ""
    return True, f"exit code {check.exit_code}{ran}{suffix}"


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
        # The plugins installed beside the harness are the harness's (tracing's take
        # seconds to import), not the suite's: a check names those it uses with -p.
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }


def _run(
    argv: list[str], cwd: Path, env: dict[str, str], check: CommandCheck
) -> tuple[bool, str | None]:
    with tempfile.TemporaryFile() as output:
        # SIGTERM first, then the group: under the sandbox the reaper ends what it started.
        code = run_in_group(
            argv, cwd=cwd, env=env, timeout=check.timeout, output=output, grace=STOP_GRACE
        )
        tail = _tail(output)
    if code is None:
        return False, f"did not finish within {check.timeout:g} s and was stopped{tail}"
    if code != check.exit_code:
        return False, f"exit code {code}, expected {check.exit_code}{tail}"
    return True, f"exit code {code}{tail}"


def _tail(output: IO[bytes]) -> str:
    """The end of the captured output, prefixed for the outcome's detail, or ''."""
    size = output.seek(0, os.SEEK_END)
    output.seek(max(0, size - TAIL_CHARS * 4))
    text = output.read().decode("utf-8", errors="replace")[-TAIL_CHARS:].strip()
    if not text:
        return ""
    cut = "..." if size > len(text.encode("utf-8")) + 2 else ""
    return f"; output tail:\n{cut}{text}"
