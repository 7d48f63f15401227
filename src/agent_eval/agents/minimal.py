"""``builtin:minimal``: the single-loop agent, one model that decides, calls tools and finishes.

It is the course's minimal scaffold: model -> tool calls -> results -> model ... -> final
answer, within the attempt's step, token and time limits. ``--option tool_mode=json``
switches it to one JSON action per turn for small local models.
"""

from __future__ import annotations

from typing import Any

from agent_eval.agents import prompts
from agent_eval.agents.config import ClientPool, warm_search
from agent_eval.agents.loop import tool_loop
from agent_eval.agents.session import Session
from agent_eval.tools import tool_specs

SCAFFOLD_NAME = "minimal"
"""The agent's name in reports and trajectory file names."""

_clients = ClientPool()


def build(options: dict[str, Any]) -> None:
    """Open the connection to the model endpoint and index the documents, once, before
    the first task."""
    _clients.warm(options)
    warm_search(options)


def run_task(task: str, options: dict[str, Any]) -> dict[str, Any]:
    """Run one attempt at ``task`` and return the entry-point result dict."""
    config = _clients.config(options)
    session = Session(config, _clients.get(config.base_url, config.api_key, config.timeout))
    system = prompts.agent_system(tool_specs(list(config.tools)), config.tool_mode == "json")

    def body() -> str:
        done = tool_loop(session, role="agent", model=config.model, system=system, task=task)
        return done.answer or ""

    return session.run(body)


def close() -> None:
    """Close the endpoint connections after the last task."""
    _clients.close()
