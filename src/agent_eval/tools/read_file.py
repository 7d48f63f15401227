"""The ``read_file`` tool: show one text file from the workspace.

It reads only regular files that resolve inside the workspace. A folder, a named pipe
(which would block forever) or a binary file is refused with a message that tells the
agent what to do instead.
"""

from __future__ import annotations

import stat
from typing import Any

from agent_eval.tools.base import (
    MAX_RESULT_CHARS,
    Observation,
    ToolArgumentError,
    ToolContext,
    ok,
    refuse,
    string_arg,
    truncate,
)
from agent_eval.tools.paths import relative_name, resolve_inside

NAME = "read_file"
DESCRIPTION = (
    "Read a text file from your workspace and return its contents. "
    "Give the path relative to the workspace, for example 'service-runbook.md'."
)
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "Path of the file, relative to the workspace.",
        }
    },
    "required": ["path"],
    "additionalProperties": False,
}

# Read a little more than is shown so that truncation can say how much was cut, without
# ever pulling a large file wholly into memory.
_READ_BYTES = MAX_RESULT_CHARS * 4 + 1


def run(ctx: ToolContext, args: dict[str, Any]) -> Observation:
    """Return the text of the file named by ``args["path"]``, truncated."""
    try:
        raw = string_arg(args, "path")
        path = resolve_inside(ctx.workspace, raw)
    except ToolArgumentError as exc:
        return refuse(f"read_file: {exc}")
    try:
        info = path.stat()
    except FileNotFoundError:
        return refuse(f"read_file: no file {raw!r} in the workspace; list it with ls first")
    except OSError as exc:
        return refuse(f"read_file: cannot open {raw!r}: {exc.strerror}")
    if stat.S_ISDIR(info.st_mode):
        return refuse(f"read_file: {raw!r} is a folder; list it with run_command 'ls {raw}'")
    if not stat.S_ISREG(info.st_mode):
        return refuse(f"read_file: {raw!r} is not a regular file")
    try:
        with path.open("rb") as handle:
            data = handle.read(_READ_BYTES)
    except OSError as exc:
        return refuse(f"read_file: cannot read {raw!r}: {exc.strerror}")
    if b"\x00" in data:
        return refuse(f"read_file: {relative_name(ctx.workspace, path)} is a binary file")
    text = data.decode("utf-8", errors="replace")
    if info.st_size > len(data):
        # The file is larger than what was read; report its full size, not the read size.
        shown = text[:MAX_RESULT_CHARS]
        return Observation(f"{shown}\n[... truncated: the file is {info.st_size} bytes]")
    if not text:
        return ok(f"{relative_name(ctx.workspace, path)} is empty")
    return Observation(truncate(text))
