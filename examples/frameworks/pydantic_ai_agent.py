"""A pydantic-ai agent as an agent-eval entry point, on our endpoint and our tools.

    agent-eval run --agent examples/frameworks/pydantic_ai_agent.py --base-url ... --model ...

pydantic-ai runs its own loop. This file gives it agent-eval's tools, drives the run node
by node so our step, token and time budgets can stop it, and maps its message history
(the framework's own run record) to our trajectory records:

- each ``ModelResponse`` is a model record, with its ``usage`` and its tool calls;
- each ``ToolReturnPart`` is a tool record; a tool error is raised as ``ModelRetry``,
  which pydantic-ai records as a return whose ``outcome`` is ``retried``, and is mapped
  to ``error: true``;
- the stop record says ``finished``, or why the run was stopped.

Needs the ``frameworks`` extra: ``pip install 'pydantic-ai-slim[openai]'``.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from framework_common import SYSTEM, Attempt, Stop, model_record, tool_record
from pydantic_ai import Agent, ModelRetry, Tool
from pydantic_ai.exceptions import ModelAPIError, UnexpectedModelBehavior, UsageLimitExceeded
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.usage import UsageLimits

SCAFFOLD_NAME = "pydantic-ai"
"""The agent's name in reports and trajectory file names."""


def run_task(task: str, options: dict[str, Any]) -> dict[str, Any]:
    """Run one attempt with a pydantic-ai Agent and return our result dict."""
    attempt = Attempt.from_options(options)
    return asyncio.run(_run(attempt, task))


def _tool(attempt: Attempt, spec: dict[str, Any]) -> Tool[None]:
    name = spec["name"]

    def call(**args: Any) -> str:
        seen = attempt.use(name, args)
        if seen.error:
            # pydantic-ai's way to hand a failure back to the model, and to record it.
            raise ModelRetry(seen.result)
        return seen.result

    return Tool.from_schema(call, name, spec["description"], spec["parameters"])


async def _run(attempt: Attempt, task: str) -> dict[str, Any]:
    cfg = attempt.config
    provider = OpenAIProvider(base_url=cfg.base_url, api_key=cfg.api_key or "not-needed")
    agent = Agent(
        OpenAIChatModel(cfg.model, provider=provider),
        instructions=SYSTEM,
        tools=[_tool(attempt, spec) for spec in attempt.tools()],
        retries=cfg.max_steps,  # a tool error is an observation, not the end of the run
        model_settings={"timeout": cfg.timeout, "max_tokens": cfg.reply_tokens},
    )
    limits = UsageLimits(request_limit=cfg.max_steps, total_tokens_limit=cfg.max_tokens)
    messages: list[ModelMessage] = []
    answer, reason, detail = "", "finished", ""
    try:
        async with agent.iter(task, usage_limits=limits) as run:
            async for node in run:
                messages = run.all_messages()
                if Agent.is_model_request_node(node) and node.request not in messages:
                    # The tool results are in the request about to be sent: they count now.
                    messages = [*messages, node.request]
                attempt.check(to_trajectory(messages))
            messages = run.all_messages()
            if run.result is not None:
                answer = str(run.result.output)
    except Stop as stop:
        reason, detail = stop.reason, stop.detail
    except UsageLimitExceeded as exc:
        reason = "token_budget" if "token" in str(exc) else "turn_limit"
        detail = str(exc)
    except ModelAPIError as exc:
        reason, detail = "model_error", str(exc)
    except UnexpectedModelBehavior as exc:
        reason, detail = "agent_error", str(exc)
    return attempt.result(answer, to_trajectory(messages), reason, detail)


def to_trajectory(messages: list[ModelMessage]) -> list[dict[str, Any]]:
    """Map pydantic-ai's message history to our model and tool records, in order."""
    records: list[dict[str, Any]] = []
    calls: dict[str, ToolCallPart] = {}
    asked: datetime | None = None
    answered: datetime | None = None
    for message in messages:
        if isinstance(message, ModelRequest):
            asked = message.timestamp
            for part in message.parts:
                if isinstance(part, ToolReturnPart | RetryPromptPart) and part.tool_name:
                    call = calls.get(part.tool_call_id)
                    args = call.args_as_dict() if call is not None else {}
                    error = isinstance(part, RetryPromptPart) or part.outcome != "success"
                    text = part.model_response() if isinstance(part, RetryPromptPart) else None
                    result = text if text is not None else str(part.content)
                    began = answered or part.timestamp
                    seconds = (part.timestamp - began).total_seconds()
                    records.append(tool_record(part.tool_name, args, error, result, seconds))
        elif isinstance(message, ModelResponse):
            tool_calls = [p for p in message.parts if isinstance(p, ToolCallPart)]
            calls.update({p.tool_call_id: p for p in tool_calls})
            text = "".join(p.content for p in message.parts if isinstance(p, TextPart))
            seconds = (message.timestamp - asked).total_seconds() if asked else 0.0
            answered = message.timestamp
            records.append(
                model_record(
                    message.model_name or "",
                    [p.tool_name for p in tool_calls],
                    message.usage.input_tokens,
                    message.usage.output_tokens,
                    seconds,
                    text,
                )
            )
    return records
