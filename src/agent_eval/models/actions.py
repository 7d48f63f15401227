"""The JSON-action format: one JSON object per model turn, for models without tool calls.

Small local models follow a single, rigid shape far better than OpenAI tool calls, so in
JSON-action mode every assistant turn is exactly one object::

    {"action": "search_documents", "args": {"query": "backup schedule"}}
    {"action": "finish", "answer": "The backups run on Sundays."}

The scripted model server renders its replies in this shape and the reference agents
parse it, so both sides share the definitions below. ``response_format`` asks a server
that supports JSON-schema constraints to emit nothing else.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

FINISH = "finish"
"""The action that ends the loop; its ``answer`` is the final answer."""

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
# Small models name the same keys in several ways; accepting the common spellings keeps a
# correct intention from being thrown away over a synonym.
_NAME_KEYS = ("action", "tool", "name", "function")
_ARGS_KEYS = ("args", "arguments", "parameters", "input")
_FINISH_NAMES = frozenset({FINISH, "final", "final_answer", "answer", "respond"})


@dataclass(frozen=True)
class Action:
    """One parsed JSON action: a tool to call with its arguments, or a final answer."""

    name: str
    """The tool name, or ``finish``."""
    args: dict[str, Any] = field(default_factory=dict)
    """The tool's arguments; empty for ``finish``."""
    answer: str | None = None
    """The final answer when ``name`` is ``finish``."""

    @property
    def is_finish(self) -> bool:
        """True when this action ends the loop with an answer."""
        return self.name == FINISH


def render_action(name: str, args: dict[str, Any]) -> str:
    """Return a tool call as the JSON-action text a model would send."""
    return json.dumps({"action": name, "args": args}, ensure_ascii=False)


def render_finish(answer: str) -> str:
    """Return a final answer as the JSON-action text a model would send."""
    return json.dumps({"action": FINISH, "answer": answer}, ensure_ascii=False)


def find_json_object(text: str) -> dict[str, Any] | None:
    """Return the first JSON object in ``text``, tolerating code fences and prose around it."""
    candidates = [text.strip(), *(m.group(1).strip() for m in _FENCE.finditer(text))]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    return None


def is_whole_object(text: str) -> bool:
    """True when the whole text is one JSON object. A reply cut at its token limit may hold
    a complete inner object (``"args": {...}``) that ``find_json_object`` would accept."""
    try:
        return isinstance(json.loads(text), dict)
    except json.JSONDecodeError:
        return False


def parse_action(text: str) -> Action | None:
    """Parse one JSON action from a model's reply, or return None when there is none."""
    obj = find_json_object(text)
    if obj is None:
        return None
    name = next((obj[k] for k in _NAME_KEYS if isinstance(obj.get(k), str)), None)
    raw_args: Any = next((obj[k] for k in _ARGS_KEYS if k in obj), {})
    if isinstance(raw_args, str):
        try:
            raw_args = json.loads(raw_args)
        except json.JSONDecodeError:
            raw_args = {}
    args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
    if name is None:
        # {"answer": "..."} alone is an unambiguous final answer.
        if isinstance(obj.get("answer"), str):
            return Action(FINISH, answer=obj["answer"])
        return None
    if name.strip().lower() in _FINISH_NAMES:
        answer = obj.get("answer", args.get("answer", obj.get("content", "")))
        return Action(FINISH, answer=answer if isinstance(answer, str) else json.dumps(answer))
    return Action(name.strip(), args=args)


def action_schema(tools: list[dict[str, Any]], *, allow_tools: bool = True) -> dict[str, Any]:
    """Return the JSON schema of one action, given OpenAI tool specs.

    Each tool becomes its own branch with that tool's own parameter schema, so a
    grammar-constrained model cannot pair one tool's name with another's arguments.
    With ``allow_tools`` false only ``finish`` is allowed, which forces an answer.
    """
    finish = {
        "type": "object",
        "properties": {"action": {"const": FINISH}, "answer": {"type": "string"}},
        "required": ["action", "answer"],
        "additionalProperties": False,
    }
    branches: list[dict[str, Any]] = []
    if allow_tools:
        for spec in tools:
            function = spec["function"]
            branches.append(
                {
                    "type": "object",
                    "properties": {
                        "action": {"const": function["name"]},
                        "args": function.get("parameters", {"type": "object"}),
                    },
                    "required": ["action", "args"],
                    "additionalProperties": False,
                }
            )
    branches.append(finish)
    return branches[0] if len(branches) == 1 else {"anyOf": branches}


def json_schema_format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Wrap a schema as an OpenAI ``response_format`` JSON-schema constraint."""
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}
