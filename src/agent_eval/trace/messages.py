"""Chat messages in the shape of the OpenTelemetry GenAI conventions' message schemas.

Agents speak the OpenAI chat format; trajectories and traces keep messages as the GenAI
conventions describe them (``gen_ai.input.messages``, ``gen_ai.output.messages``): a
``role`` and a list of ``parts``, each a ``text``, ``tool_call`` or ``tool_call_response``
part, and on output messages a ``finish_reason``. Trace stores such as Phoenix validate
these payloads against the schemas and drop the whole payload when one field is missing.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

FINISH_REASONS = {"stop": "stop", "length": "length", "content_filter": "content_filter",
                  "tool_calls": "tool_call", "function_call": "tool_call"}  # fmt: skip
"""OpenAI finish reasons and their names under the conventions."""


def from_openai(messages: Sequence[Mapping[str, Any]], limit: int) -> list[dict[str, Any]]:
    """OpenAI-format chat messages as GenAI messages, each text cut to ``limit`` characters."""
    return [_message(message, limit) for message in messages]


def _message(message: Mapping[str, Any], limit: int) -> dict[str, Any]:
    role = str(message.get("role") or "user")
    text = _text(message.get("content"))[:limit]
    if role == "tool":
        part = {"type": "tool_call_response", "id": _id(message.get("tool_call_id")),
                "response": text}  # fmt: skip
        return {"role": "tool", "parts": [part]}
    parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text else []
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        parts.append(tool_call(function.get("name"), function.get("arguments"), call.get("id")))
    return {"role": role, "parts": parts}


def tool_call(name: Any, arguments: Any, call_id: Any = None) -> dict[str, Any]:
    """A ``tool_call`` part; string arguments that hold JSON are parsed."""
    if isinstance(arguments, str):
        with contextlib.suppress(json.JSONDecodeError):
            arguments = json.loads(arguments)
    return {"type": "tool_call", "id": _id(call_id), "name": str(name or ""),
            "arguments": arguments}  # fmt: skip


def output_message(
    content: str, calls: Sequence[dict[str, Any]], finish_reason: str | None
) -> dict[str, Any]:
    """The assistant's reply as one output message, with its ``finish_reason``."""
    parts: list[dict[str, Any]] = [{"type": "text", "content": content}] if content else []
    parts += calls
    reason = FINISH_REASONS.get(finish_reason or "", finish_reason)
    return {"role": "assistant", "parts": parts,
            "finish_reason": reason or ("tool_call" if calls else "stop")}  # fmt: skip


def user_text(text: str) -> dict[str, Any]:
    """One user message holding ``text``."""
    return {"role": "user", "parts": [{"type": "text", "content": text}]}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # multimodal content: keep the text items
        return "".join(str(item.get("text", "")) for item in content if isinstance(item, dict))
    return ""


def _id(value: Any) -> str | None:
    return str(value) if value else None
