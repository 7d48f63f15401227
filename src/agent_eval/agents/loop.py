"""The tool loop both reference agents run: model, tool calls, results, ... final answer.

One function serves the single-loop agent and the multi-agent researcher, in native
tool-call mode and in JSON-action mode. The mode only changes how a turn is asked for
and read; budgets, repeated-call detection and records are the same.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agent_eval.agents import prompts
from agent_eval.agents.session import Session, Stop
from agent_eval.models import (
    ChatReply,
    action_schema,
    is_whole_object,
    json_schema_format,
    parse_action,
)
from agent_eval.tools import tool_specs

REPEAT_LIMIT = 3
"""The same tool with the same arguments this many times ends the attempt."""
# A reply needs room for one tool result and one more reply after it; with fewer steps
# left the loop asks for the final answer instead.
_ROOM_FOR_A_TOOL = 3


@dataclass(frozen=True)
class Call:
    """One tool call the model asked for, in either mode."""

    id: str
    """The call id a native tool result quotes back."""
    name: str
    """The tool the model asked for."""
    args: dict[str, Any]
    """Its arguments."""
    refusal: str | None = None
    """Set when the call cannot run as sent (its arguments are not a JSON object)."""


@dataclass
class LoopResult:
    """How a tool loop ended: its answer (None when it ran out of steps) and what it saw."""

    answer: str | None
    """The loop's final answer, or None when its share of steps ran out."""
    observations: list[tuple[str, dict[str, Any], str]] = field(default_factory=list)
    """(tool, args, result) of every successful tool call, in order."""


def tool_loop(
    session: Session,
    *,
    role: str,
    model: str,
    system: str,
    task: str,
    step_cap: int | None = None,
) -> LoopResult:
    """Run the loop until a final answer; raise Stop on a limit.

    With ``step_cap`` (a share of the attempt's steps) running out of steps returns
    ``LoopResult(None, ...)`` instead of stopping, so a caller can go on without it.
    """
    json_mode = session.config.tool_mode == "json"
    tools = tool_specs(list(session.config.tools))
    cap = session.steps + step_cap if step_cap is not None else session.config.max_steps
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": prompts.task_message(task)},
    ]
    result = LoopResult(answer=None)
    seen: dict[str, int] = {}
    warned = False
    while True:
        left = cap - session.steps
        if left < 1:
            return _exhausted(session, step_cap, result)
        final = left < _ROOM_FOR_A_TOOL
        if final and not warned:
            messages.append({"role": "user", "content": prompts.FINAL_TURN})
            warned = True
        if json_mode:
            fmt = json_schema_format("action", action_schema(tools, allow_tools=not final))
            reply = session.ask(
                role, model, messages, response_format=fmt, requested=_json_tools, complete=_whole
            )
            content = reply.content or ""
            messages.append({"role": "assistant", "content": content})
            action = parse_action(content)
            if action is None:
                messages.append({"role": "user", "content": prompts.BAD_ACTION})
                continue
            if action.is_finish:
                result.answer = action.answer or ""
                return result
            calls = [Call(f"json_{session.steps}", action.name, action.args)]
        else:
            reply = session.ask(role, model, messages, tools=tools)
            if not reply.tool_calls:
                result.answer = reply.content or ""
                return result
            messages.append(_assistant_with_calls(reply))
            calls = [
                _native_call(c.id, c.name, c.arguments, c.raw_arguments) for c in reply.tool_calls
            ]
        if session.steps + len(calls) + 1 > cap:
            return _exhausted(session, step_cap, result)
        for call in calls:
            key = f"{call.name} {json.dumps(call.args, sort_keys=True)}"
            seen[key] = seen.get(key, 0) + 1
            if seen[key] >= REPEAT_LIMIT:
                raise Stop("repeated_call", f"{call.name} called {REPEAT_LIMIT} times with {key}")
            session.check_budget(steps_needed=0)
            native_id = None if json_mode else call.id  # a JSON action's id is our own
            observed = session.use_tool(call.name, call.args, call.refusal, native_id)
            text = observed.result
            if seen[key] > 1:
                text += "\n(You already made this exact call; try something else or finish.)"
            if not observed.error:
                result.observations.append((call.name, call.args, observed.result))
            if json_mode:
                text = prompts.observation_message(call.name, text, observed.error)
                messages.append({"role": "user", "content": text})
            else:
                messages.append({"role": "tool", "tool_call_id": call.id, "content": text})


def _exhausted(session: Session, step_cap: int | None, result: LoopResult) -> LoopResult:
    if step_cap is None:
        raise Stop("turn_limit", f"{session.steps} of {session.config.max_steps} steps used")
    return result


def _whole(reply: ChatReply) -> bool:
    """A JSON action is whole, even when its last token met the reply limit, when the
    whole reply is that action."""
    content = reply.content or ""
    return is_whole_object(content) and parse_action(content) is not None


def _json_tools(reply: ChatReply) -> list[str]:
    action = parse_action(reply.content or "")
    return [] if action is None or action.is_finish else [action.name]


def _native_call(call_id: str, name: str, args: dict[str, Any], raw: str) -> Call:
    if args or raw.strip() in ("", "{}"):
        return Call(call_id, name, args)
    return Call(call_id, name, {}, f"the arguments are not a JSON object: {raw[:200]!r}")


def _assistant_with_calls(reply: ChatReply) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": reply.content,
        "tool_calls": [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.raw_arguments or "{}"},
            }
            for c in reply.tool_calls
        ],
    }
