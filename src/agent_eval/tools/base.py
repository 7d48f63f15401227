"""The two records every tool shares: what a tool is given and what it gives back.

They live apart from the tool registry in ``tools/__init__.py`` so that each tool module
can import them without importing its siblings.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_RESULT_CHARS = 8000
"""The most characters of a result that an agent sees; enough for a document, small
enough that one tool call cannot flood a small model's context."""


@dataclass(frozen=True)
class Observation:
    """What a tool call returns to the agent, success or refusal alike."""

    result: str
    """The text the agent sees, already truncated to a sane size."""
    error: bool = False
    """True for a refusal or failure; tools report these, they never raise them."""


@dataclass(frozen=True)
class ToolContext:
    """Where a tool call runs: one attempt's workspace and, optionally, a saved index."""

    workspace: Path
    """The attempt's fresh workspace folder; no tool reads or writes outside it."""
    index_path: Path | None = None
    """A BM25 index built by ``agent-eval index``; search_documents uses it when given."""


def truncate(text: str, limit: int = MAX_RESULT_CHARS) -> str:
    """Cut ``text`` to ``limit`` characters and say how much was left off."""
    if len(text) <= limit:
        return text
    dropped = len(text) - limit
    return f"{text[:limit]}\n[... truncated: {dropped} more characters]"


def ok(text: str) -> Observation:
    """A successful observation, truncated."""
    return Observation(truncate(text))


def refuse(message: str) -> Observation:
    """A refusal or failure the agent sees as an observation with ``error=True``."""
    return Observation(truncate(message), error=True)


def string_arg(args: dict[str, Any], name: str, *, allow_empty: bool = False) -> str:
    """Return the string argument ``name``, or raise ToolArgumentError saying what is wrong.

    Tool modules turn the exception into a refusal, so a model that sends a number or
    leaves an argument out learns exactly which argument to fix.
    """
    if name not in args:
        raise ToolArgumentError(f"missing required argument '{name}'")
    value = args[name]
    if not isinstance(value, str):
        raise ToolArgumentError(f"argument '{name}' must be a string, not {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise ToolArgumentError(f"argument '{name}' must not be empty")
    return value


class ToolArgumentError(ValueError):
    """A tool's arguments are missing, of the wrong type or refused by policy.

    Raised inside tool modules only; every ``run`` converts it into a refusal.
    """
