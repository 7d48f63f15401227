"""The shipped agents, by the name `--agent builtin:NAME` uses."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_eval.lazy import lazy_getattr

# The face's names that live in its modules, imported on first use (__getattr__).
if TYPE_CHECKING:
    from agent_eval.agents.baselines import BASELINES
    from agent_eval.agents.config import tool_mode_note
    from agent_eval.agents.entry import (
        Agent,
        AgentFacts,
        AgentMisbehaved,
        agent_frames,
        anchored,
        coerce_reply,
        load_agent,
    )
    from agent_eval.agents.outage import describe as describe_outage
    from agent_eval.agents.outage import find_outage


__all__ = [
    "BASELINES",
    "BUILTIN_AGENTS",
    "MODEL_AGENTS",
    "Agent",
    "AgentFacts",
    "AgentMisbehaved",
    "agent_frames",
    "anchored",
    "coerce_reply",
    "describe_outage",
    "find_outage",
    "load_agent",
    "tool_mode_note",
]


BUILTIN_AGENTS: dict[str, str] = {
    "minimal": "agent_eval.agents.minimal",
    "multi-agent": "agent_eval.agents.multi_agent",
    "retrieve-read": "agent_eval.agents.retrieve_read",
    "empty": "agent_eval.agents.baselines:empty",
    "echo": "agent_eval.agents.baselines:echo",
    "dump-documents": "agent_eval.agents.baselines:dump_documents",
    "top-passage": "agent_eval.agents.baselines:top_passage",
    "cannot-find": "agent_eval.agents.baselines:cannot_find",
    "instructions": "agent_eval.agents.baselines:instructions",
}
"""Name -> `module` or `module:object`; each target satisfies the entry-point contract."""
MODEL_AGENTS = frozenset({"minimal", "multi-agent", "retrieve-read"})
"""The shipped agents that call the model endpoint; the baselines never do."""


_LAZY = {
    "Agent": "agent_eval.agents.entry:Agent",
    "AgentFacts": "agent_eval.agents.entry:AgentFacts",
    "AgentMisbehaved": "agent_eval.agents.entry:AgentMisbehaved",
    "BASELINES": "agent_eval.agents.baselines:BASELINES",
    "agent_frames": "agent_eval.agents.entry:agent_frames",
    "anchored": "agent_eval.agents.entry:anchored",
    "coerce_reply": "agent_eval.agents.entry:coerce_reply",
    "describe_outage": "agent_eval.agents.outage:describe",
    "find_outage": "agent_eval.agents.outage:find_outage",
    "load_agent": "agent_eval.agents.entry:load_agent",
    "tool_mode_note": "agent_eval.agents.config:tool_mode_note",
}
"""Public name -> where it lives: ``module:attribute``, or a module."""
__getattr__ = lazy_getattr(__name__, _LAZY)
