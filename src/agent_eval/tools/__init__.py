"""Workspace tools: what an agent can do, each a function of (workspace, arguments).

One module per tool, each exposing ``NAME``, ``DESCRIPTION``, ``PARAMETERS`` (a JSON
schema) and ``run(ctx, args) -> Observation``. This module is the registry the agents
use: :func:`tool_specs` describes tools to a model, :func:`run_tool` executes a call.
A tool never raises for anything an agent can do wrong: an unknown tool, bad arguments,
a path outside the workspace or a failing command all come back as an Observation with
``error=True``, which the trajectory records and the agent can react to.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from agent_eval.lazy import lazy_getattr
from agent_eval.tools import (
    edit_file,
    query_database,
    read_file,
    run_command,
    search_documents,
    write_file,
)
from agent_eval.tools.base import Observation, ToolContext, truncate
from agent_eval.tools.bm25_index import bm25s_library

# The face's names that live in its modules, imported on first use (__getattr__).
if TYPE_CHECKING:
    from agent_eval.tools.search_documents import (
        build_index,
        load_index,
        split_passages,
        workspace_index,
    )


__all__ = [
    "READ_TOOLS",
    "WRITE_TOOLS",
    "Observation",
    "ToolContext",
    "bm25s_library",
    "build_index",
    "load_index",
    "run_tool",
    "split_passages",
    "tool_specs",
    "workspace_index",
]

READ_TOOLS: tuple[str, ...] = ("search_documents", "read_file", "run_command")
"""Tools every agent gets: they look at the workspace and change nothing."""
WRITE_TOOLS: tuple[str, ...] = ("write_file", "edit_file", "query_database")
"""Tools an agent gets only when its suite or task allows them: they change the workspace."""

_MODULES: dict[str, ModuleType] = {
    module.NAME: module
    for module in (
        search_documents,
        read_file,
        run_command,
        write_file,
        edit_file,
        query_database,
    )
}


def _unknown(name: str) -> str:
    known = ", ".join(_MODULES)
    return f"unknown tool {name!r}; the tools are: {known}"


def tool_specs(names: Sequence[str]) -> list[dict[str, Any]]:
    """OpenAI ``tools`` entries for ``names``, in the order given.

    Raises ValueError for an unknown name: that is a programming mistake in the agent,
    not something a model did, so it should fail loudly.
    """
    specs: list[dict[str, Any]] = []
    for name in names:
        module = _MODULES.get(name)
        if module is None:
            raise ValueError(_unknown(name))
        specs.append(
            {
                "type": "function",
                "function": {
                    "name": module.NAME,
                    "description": module.DESCRIPTION,
                    "parameters": module.PARAMETERS,
                },
            }
        )
    return specs


def _check_arguments(name: str, schema: dict[str, Any], args: object) -> str | None:
    """Say what is wrong with ``args`` at the level of the schema, or None if nothing.

    Only presence and unknown keys are checked here; each tool checks its own types, so a
    tool called directly is exactly as strict as one called through the registry.
    """
    if not isinstance(args, dict):
        return f"{name}: arguments must be a JSON object, not {type(args).__name__}"
    missing = [key for key in schema.get("required", []) if key not in args]
    if missing:
        return f"{name}: missing required argument(s): {', '.join(missing)}"
    known = set(schema.get("properties", {}))
    extra = sorted(str(key) for key in args if key not in known)
    if extra:
        expected = ", ".join(sorted(known))
        return f"{name}: unknown argument(s): {', '.join(extra)} (expected: {expected})"
    return None


def run_tool(name: str, ctx: ToolContext, args: dict[str, Any]) -> Observation:
    """Run the tool ``name`` with ``args`` in ``ctx``; every failure is an observation."""
    module = _MODULES.get(name)
    if module is None:
        return Observation(_unknown(name), error=True)
    problem = _check_arguments(name, module.PARAMETERS, args)
    if problem is not None:
        return Observation(truncate(problem), error=True)
    runner: Callable[[ToolContext, dict[str, Any]], Observation] = module.run
    try:
        return runner(ctx, args)
    except OSError as exc:
        # The workspace itself vanished or became unreadable mid-attempt; the agent
        # should see that as a failed call, and the run should go on.
        return Observation(truncate(f"{name}: the workspace could not be used: {exc}"), error=True)
    except Exception as exc:
        # This is the boundary between tools and agents: a tool bug must cost one call,
        # recorded as an error in the trajectory, never the whole attempt.
        message = f"{name}: internal error: {type(exc).__name__}: {exc}"
        return Observation(truncate(message), error=True)


_LAZY = {
    "build_index": "agent_eval.tools.search_documents:build_index",
    "load_index": "agent_eval.tools.search_documents:load_index",
    "split_passages": "agent_eval.tools.search_documents:split_passages",
    "workspace_index": "agent_eval.tools.search_documents:workspace_index",
}
"""Public name -> where it lives: ``module:attribute``, or a module."""
__getattr__ = lazy_getattr(__name__, _LAZY)
