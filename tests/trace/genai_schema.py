"""The required structure of the GenAI conventions' input- and output-message JSON schemas.

Written out from the OpenTelemetry semantic conventions (gen-ai-input-messages.json and
gen-ai-output-messages.json): an array of messages, each with a string ``role`` and a
``parts`` array; output messages also require ``finish_reason``. A part is a ``text`` part
(``content`` a string), a ``tool_call`` part (``name`` a string, ``id`` a string or null)
or a ``tool_call_response`` part (a ``response``, ``id`` a string or null).
"""

from __future__ import annotations

import json
from typing import Any


def schema_problems(payload: str, output: bool) -> list[str]:
    """Why a ``gen_ai.*.messages`` value breaks the schema; empty when it validates."""
    try:
        messages = json.loads(payload)
    except json.JSONDecodeError as exc:
        return [f"not JSON: {exc}"]
    if not isinstance(messages, list):
        return ["not an array of messages"]
    problems = []
    for number, message in enumerate(messages):
        where = f"message {number}"
        if not isinstance(message, dict):
            problems.append(f"{where}: not an object")
            continue
        if not isinstance(message.get("role"), str):
            problems.append(f"{where}: role is not a string")
        if output and not isinstance(message.get("finish_reason"), str):
            problems.append(f"{where}: finish_reason is required")
        parts = message.get("parts")
        if not isinstance(parts, list):
            problems.append(f"{where}: parts is not an array")
            continue
        problems += [f"{where} part {i}: {p}" for i, part in enumerate(parts)
                     for p in _part_problems(part)]  # fmt: skip
    return problems


def _part_problems(part: Any) -> list[str]:
    if not isinstance(part, dict):
        return ["not an object"]
    kind = part.get("type")
    if kind == "text":
        return [] if isinstance(part.get("content"), str) else ["text content is not a string"]
    if part.get("id") is not None and not isinstance(part.get("id"), str):
        return ["id is neither a string nor null"]
    if kind == "tool_call":
        return [] if isinstance(part.get("name"), str) else ["tool_call name is not a string"]
    if kind == "tool_call_response":
        return [] if "response" in part else ["tool_call_response has no response"]
    return [f"unknown part type {kind!r}"]
