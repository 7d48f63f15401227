"""The ``edit_file`` tool: replace one exact piece of text in a workspace file.

The replacement must match exactly once. Refusing an absent or ambiguous match, instead
of guessing, keeps an agent's edit precise and makes a sloppy one visible in the
trajectory as an error the agent can correct.
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

NAME = "edit_file"
DESCRIPTION = (
    "Edit a text file in your workspace by replacing one exact piece of text. "
    "'old' must appear exactly once in the file; include enough surrounding text to make "
    "it unique. 'new' replaces it (an empty 'new' deletes it)."
)
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "Path of the file to edit, relative to the workspace.",
        },
        "old": {
            "type": "string",
            "description": "The exact text to replace; it must occur exactly once.",
        },
        "new": {"type": "string", "description": "The text to put in its place."},
    },
    "required": ["path", "old", "new"],
    "additionalProperties": False,
}


def run(ctx: ToolContext, args: dict[str, Any]) -> Observation:
    """Replace the single occurrence of ``args["old"]`` with ``args["new"]``."""
    try:
        raw = string_arg(args, "path")
        old = string_arg(args, "old", allow_empty=True)
        new = string_arg(args, "new", allow_empty=True)
        path = resolve_inside(ctx.workspace, raw)
    except ToolArgumentError as exc:
        return refuse(f"edit_file: {exc}")
    if not old:
        return refuse("edit_file: 'old' is empty; give the exact text to replace")
    name = relative_name(ctx.workspace, path)
    if not path.is_file():
        what = "a folder" if path.is_dir() else "not a file in the workspace"
        return refuse(f"edit_file: {name!r} is {what}; use write_file to create a file")
    try:
        # newline="" keeps CRLF files byte-identical outside the edited span.
        with path.open(encoding="utf-8", newline="") as handle:
            text = handle.read()
    except UnicodeDecodeError:
        return refuse(f"edit_file: {name!r} is not UTF-8 text")
    except OSError as exc:
        return refuse(f"edit_file: cannot read {name!r}: {exc.strerror}")
    count = text.count(old)
    if count == 0:
        return refuse(
            f"edit_file: the text given as 'old' does not occur in {name}; "
            "read the file and copy the exact text, including spaces and line breaks"
        )
    if count > 1:
        return refuse(
            f"edit_file: the text given as 'old' occurs {count} times in {name}; "
            "include more surrounding text so that it matches exactly once"
        )
    try:
        with path.open("w", encoding="utf-8", newline="") as handle:
            handle.write(text.replace(old, new, 1))
    except OSError as exc:
        return refuse(f"edit_file: cannot write {name!r}: {exc.strerror}")
    return ok(f"edited {name}: replaced 1 occurrence ({len(old)} -> {len(new)} characters)")
