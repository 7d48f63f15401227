"""The ``write_file`` tool: create or overwrite one text file in the workspace.

Offered to agents only by suites that allow writing. Missing parent folders are created,
always inside the workspace, and the content is written exactly as given (no newline
translation), so that a state check comparing bytes sees what the agent sent.
"""

from __future__ import annotations

from typing import Any

from agent_eval.tools.base import (
    Observation,
    ToolArgumentError,
    ToolContext,
    ok,
    refuse,
    string_arg,
)
from agent_eval.tools.paths import relative_name, resolve_inside

NAME = "write_file"
DESCRIPTION = (
    "Create or overwrite a text file in your workspace with the given content. "
    "Missing folders on the path are created. The path is relative to the workspace."
)
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "Path of the file to write, relative to the workspace.",
        },
        "content": {
            "type": "string",
            "description": "The complete new content of the file.",
        },
    },
    "required": ["path", "content"],
    "additionalProperties": False,
}

MAX_CONTENT_CHARS = 1_000_000
"""A ceiling on one write, so that a runaway agent cannot fill the disk in a few calls."""


def run(ctx: ToolContext, args: dict[str, Any]) -> Observation:
    """Write ``args["content"]`` to ``args["path"]`` and report how much was written."""
    try:
        raw = string_arg(args, "path")
        content = string_arg(args, "content", allow_empty=True)
        path = resolve_inside(ctx.workspace, raw)
    except ToolArgumentError as exc:
        return refuse(f"write_file: {exc}")
    if len(content) > MAX_CONTENT_CHARS:
        return refuse(
            f"write_file: content is {len(content)} characters; the limit is {MAX_CONTENT_CHARS}"
        )
    name = relative_name(ctx.workspace, path)
    if path.is_dir():
        return refuse(f"write_file: {name!r} is a folder; give a file path")
    if path.exists() and not path.is_file():
        return refuse(f"write_file: {name!r} exists and is not a regular file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        existed = path.exists()
        with path.open("w", encoding="utf-8", newline="") as handle:
            handle.write(content)
    except OSError as exc:
        return refuse(f"write_file: cannot write {name!r}: {exc.strerror}")
    verb = "overwrote" if existed else "created"
    return ok(f"{verb} {name} ({len(content)} characters)")
