"""The shipped agents, by the name `--agent builtin:NAME` uses."""

from __future__ import annotations

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
