"""The ``run_command`` tool: run one read-only command in the workspace.

There is no shell. The command is split with :mod:`shlex` (or given as a list), checked
against :mod:`agent_eval.tools.command_policy`, and started directly with the workspace as
its folder, nothing on stdin, a minimal environment (so no API key or other secret from
the harness's environment can leak) and a timeout. Pipes, redirections, globs and ``$``
expansions are therefore plain characters, never features.
"""

from __future__ import annotations

import shlex
import shutil
import tempfile
from typing import Any

from agent_eval.processes import run_in_group
from agent_eval.tools.base import (
    MAX_RESULT_CHARS,
    Observation,
    ToolArgumentError,
    ToolContext,
    refuse,
)
from agent_eval.tools.command_policy import ALLOWED_COMMANDS, check_command
from agent_eval.tools.paths import workspace_root

NAME = "run_command"
DESCRIPTION = (
    "Run one read-only command in your workspace and return its output. "
    f"Allowed commands: {', '.join(ALLOWED_COMMANDS)}. There is no shell, so pipes, "
    "redirections and wildcards do not work. Paths must stay inside the workspace. "
    "Example: 'grep -n 8090 service-runbook.md'."
)
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {
            "type": "string",
            "description": "The command line, for example 'ls -l' or 'grep -ri backup .'.",
        }
    },
    "required": ["command"],
    "additionalProperties": False,
}

TIMEOUT_SECONDS = 5.0
"""Long enough for any listed command on a workspace of documents; short enough that a
command reading a pipe that never closes cannot stall an attempt."""

SAFE_PATH = "/usr/bin:/bin"
"""The only PATH the command sees: system tools, nothing from the user's own folders."""

# Read a little more than is shown, so truncation can be reported without holding a
# command's entire output in memory.
_READ_BYTES = MAX_RESULT_CHARS * 4


def minimal_environment() -> dict[str, str]:
    """The whole environment a command runs with; nothing is inherited from the harness."""
    return {"PATH": SAFE_PATH, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}


def parse_command(value: object) -> list[str]:
    """Turn the ``command`` argument, a string or a list of strings, into an argv list."""
    if isinstance(value, str):
        try:
            return shlex.split(value)
        except ValueError as exc:
            raise ToolArgumentError(f"cannot split the command: {exc}") from exc
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    raise ToolArgumentError("argument 'command' must be a string or a list of strings")


def run(ctx: ToolContext, args: dict[str, Any]) -> Observation:
    """Run ``args["command"]`` under the allow-list and return its output."""
    if "command" not in args:
        return refuse("run_command: missing required argument 'command'")
    try:
        argv = parse_command(args["command"])
    except ToolArgumentError as exc:
        return refuse(f"run_command: {exc}")
    return run_argv(ctx, argv)


def run_argv(
    ctx: ToolContext, argv: list[str], *, timeout_seconds: float = TIMEOUT_SECONDS
) -> Observation:
    """Check and run an already split command; the tool's core, with its timeout exposed."""
    try:
        check_command(argv, ctx.workspace)
        root = workspace_root(ctx.workspace)
    except ToolArgumentError as exc:
        return refuse(f"run_command: {exc}")
    program = shutil.which(argv[0], path=SAFE_PATH)
    if program is None:
        return refuse(f"run_command: {argv[0]!r} is not installed on this machine")
    with tempfile.TemporaryFile() as output:
        code = run_in_group(
            [program, *argv[1:]],
            cwd=root,
            env=minimal_environment(),
            timeout=timeout_seconds,
            output=output,
        )
        if code is None:
            return refuse(
                f"run_command: {shlex.join(argv)!r} did not finish within "
                f"{timeout_seconds:g} seconds and was stopped"
            )
        total = output.tell()
        output.seek(0)
        data = output.read(_READ_BYTES)
    return _observe(argv, code, data.decode("utf-8", errors="replace"), total)


def _observe(argv: list[str], code: int, text: str, total_bytes: int) -> Observation:
    """Shape a finished command's output into what the agent sees."""
    if len(text) > MAX_RESULT_CHARS or total_bytes > _READ_BYTES:
        text = f"{text[:MAX_RESULT_CHARS]}\n[... truncated: the output was {total_bytes} bytes]"
    # grep exits 1 when nothing matched: an answer, not a failure.
    if argv[0] == "grep" and code == 1:
        return Observation(text or "no matches")
    if code != 0:
        return Observation(f"{text}\n[exit code {code}]".lstrip("\n"), error=True)
    return Observation(text or "(no output)")
