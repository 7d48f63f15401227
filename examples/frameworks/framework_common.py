"""What both framework adapters share: our tools, our budgets and our trajectory records.

A framework runs its own loop; an adapter hands it agent-eval's tools (so every agent
is measured with the same tools, confined to the same workspace) and afterwards maps
the framework's own run record to agent-eval's trajectory records (docs/protocol.md).
Steps and tokens are counted from the mapped records, exactly as the reference agents
count them: one step per model reply and one per tool result.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from agent_eval.agents.config import AgentConfig
from agent_eval.agents.session import RECORD_CHARS
from agent_eval.tools import Observation, ToolContext, run_tool, tool_specs

SYSTEM = (
    "You answer questions about the documents in a workspace. Use the tools to find the "
    "evidence, then give the answer. Answer only from what the tools return; if the "
    "documents do not contain the answer, answer with exactly: "
    '"This is not stated in the documents."'
)
"""One instruction for every framework, so only the loop differs between them."""


class Stop(Exception):
    """Ends a framework's run early with one of our stop reasons."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass
class Attempt:
    """One attempt's options, tools and clock, as a framework adapter uses them."""

    config: AgentConfig
    """The parsed entry-point options (the reference agents' parser)."""
    started: float = field(default_factory=time.monotonic)
    """When the attempt began, for the time budget."""

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> Attempt:
        """Parse the options the harness passes to run_task."""
        return cls(AgentConfig.from_options(options))

    def tools(self) -> list[dict[str, Any]]:
        """The OpenAI function specs of this attempt's tools: name, description, schema."""
        return [spec["function"] for spec in tool_specs(list(self.config.tools))]

    def use(self, name: str, args: dict[str, Any]) -> Observation:
        """Run one of our tools in the attempt's workspace; failures are observations."""
        return run_tool(name, ToolContext(self.config.workspace, self.config.index), args)

    def check(self, trajectory: list[dict[str, Any]]) -> None:
        """Raise Stop when the mapped records so far have spent a budget."""
        cfg = self.config
        steps, tokens = counts(trajectory)
        if steps >= cfg.max_steps:
            raise Stop("turn_limit", f"{steps} of {cfg.max_steps} steps used")
        if cfg.max_tokens is not None and tokens >= cfg.max_tokens:
            raise Stop("token_budget", f"{tokens} of {cfg.max_tokens} tokens used")
        elapsed = time.monotonic() - self.started
        if cfg.max_seconds is not None and elapsed >= cfg.max_seconds:
            raise Stop("time_budget", f"{elapsed:.1f} of {cfg.max_seconds:g} seconds used")

    def result(
        self, answer: str, trajectory: list[dict[str, Any]], reason: str, detail: str = ""
    ) -> dict[str, Any]:
        """The entry-point result dict, with the stop record appended."""
        records = [*trajectory, {"type": "stop", "reason": reason, "detail": detail}]
        steps, _ = counts(records)
        prompt = sum(r.get("prompt_tokens", 0) for r in records if r["type"] == "model")
        completion = sum(r.get("completion_tokens", 0) for r in records if r["type"] == "model")
        return {
            "answer": answer,
            "steps": steps,
            "tokens": prompt + completion,
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "seconds": round(time.monotonic() - self.started, 3),
            "stopped": reason,
            "trajectory": records,
        }


def counts(trajectory: list[dict[str, Any]]) -> tuple[int, int]:
    """(steps, tokens) of mapped records: one step per model reply and per tool result."""
    models = [r for r in trajectory if r["type"] == "model"]
    steps = len(models) + sum(1 for r in trajectory if r["type"] == "tool")
    tokens = sum(r.get("prompt_tokens", 0) + r.get("completion_tokens", 0) for r in models)
    return steps, tokens


def model_record(
    model: str, calls: list[str], prompt: int, completion: int, seconds: float, content: str
) -> dict[str, Any]:
    """A model reply record (never with a ``tool`` key: the tool check reads that key)."""
    return {
        "type": "model",
        "role": "agent",
        "model": model,
        "tool_calls": calls,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "seconds": round(max(seconds, 0.0), 3),
        "content": content[:RECORD_CHARS],
    }


def tool_record(
    name: str, args: dict[str, Any], error: bool, result: str, seconds: float
) -> dict[str, Any]:
    """A tool call record."""
    return {
        "type": "tool",
        "tool": name,
        "args": args,
        "error": error,
        "result": result[:RECORD_CHARS],
        "seconds": round(max(seconds, 0.0), 3),
    }
