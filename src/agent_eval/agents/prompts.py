"""The reference agents' prompts: generic, short, and written for small local models too.

Nothing here knows any suite's questions or documents. The worked example is about an
invented building, so it teaches the shape of a turn without leaking an answer. Each
multi-agent role's prompt opens with "You are the ROLE.", a stable mark that scripted
model replies can match (a mock script rule with ``"system": "^You are the verifier"``).
"""

from __future__ import annotations

import json
from typing import Any

from agent_eval.models import FINISH

NOT_STATED = "This is not stated in the documents."
"""The honest answer when the documents do not contain one. Refusal checks look for
wordings like "not stated", "cannot" or "does not say", and this sentence is one they
accept; "the documents do not say" (plural, so "do" not "does") is one they miss."""
REST_NOT_STATED = "Anything more is not stated in the documents."
"""Appended to a revised answer that keeps some facts, so that the gap is said plainly."""

HONESTY = (
    "Answer only from what the tools return. If the documents do not contain the answer, "
    f'answer with exactly: "{NOT_STATED}"'
)

ROUTES = {
    "search": "the answer is a fact stated somewhere in the documents' text",
    "files": "the task is about the workspace's files themselves: listing, reading a named "
    "file, counting or changing files",
}
"""Route name -> when the router should pick it."""
DEFAULT_ROUTE = "search"

_ROUTE_HINTS = {
    "search": "Start by searching the documents with a short query.",
    "files": "Start with the file tools: list the workspace or read the file the task names.",
}

_EXAMPLE = [
    "Task: What colour is the staff entrance door?",
    '{"action": "search_documents", "args": {"query": "staff entrance door colour"}}',
    "Result of search_documents: ... The staff entrance has a green door ...",
    '{"action": "finish", "answer": "The staff entrance door is green."}',
]


def tool_lines(tools: list[dict[str, Any]]) -> str:
    """List tools as ``name(arg, ...): description`` lines, for the JSON-action prompt."""
    lines = []
    for spec in tools:
        function = spec["function"]
        params = ", ".join(function.get("parameters", {}).get("properties", {}))
        lines.append(f"- {function['name']}({params}): {function.get('description', '')}")
    return "\n".join(lines)


def json_action_rules(tools: list[dict[str, Any]]) -> str:
    """The JSON-action instructions: the two shapes, the tools and a worked example."""
    names = {spec["function"]["name"] for spec in tools}
    example = "\n".join(_EXAMPLE) if "search_documents" in names else ""
    return (
        "Reply with exactly one JSON object and nothing else.\n"
        'To use a tool: {"action": "<tool name>", "args": {...}}\n'
        f'To answer: {{"action": "{FINISH}", "answer": "<your answer>"}}\n'
        f"Tools:\n{tool_lines(tools)}\n" + (f"\nExample:\n{example}\n" if example else "")
    )


def agent_system(tools: list[dict[str, Any]], json_mode: bool) -> str:
    """The single-loop agent's system prompt."""
    base = (
        "You complete tasks about a folder of documents. Use the tools to find the facts "
        "you need, then give a short final answer that states them. " + HONESTY + " "
        "Never repeat a tool call with the same arguments."
    )
    return base + ("\n\n" + json_action_rules(tools) if json_mode else "")


def router_system() -> str:
    """The router's system prompt: pick a route and say why, as JSON."""
    routes = "\n".join(f'- "{name}": {when}' for name, when in ROUTES.items())
    return (
        "You are the router. You route a task to the right kind of research. The routes are:\n"
        f"{routes}\n"
        'Reply with one JSON object: {"route": "<route>", "reason": "<one short sentence>"}'
    )


def researcher_system(route: str, tools: list[dict[str, Any]], json_mode: bool) -> str:
    """The researcher's system prompt: gather evidence, then finish with notes."""
    base = (
        "You are the researcher. Use the tools to gather the evidence a task needs. "
        f"{_ROUTE_HINTS.get(route, '')} When you have enough, finish with short notes that "
        "quote the facts you found and where. If you find nothing relevant, finish and say so."
    )
    return base + ("\n\n" + json_action_rules(tools) if json_mode else "")


def answerer_system(json_mode: bool) -> str:
    """The answerer's system prompt: answer from the evidence alone."""
    shape = '\nReply with one JSON object: {"answer": "<your answer>"}' if json_mode else ""
    return (
        "You are the answerer. You write the final answer to a task, using only the "
        "evidence given. Be short and state the facts the task asks for. If the evidence "
        f'does not contain the answer, answer with exactly: "{NOT_STATED}"' + shape
    )


def verifier_system() -> str:
    """The verifier's system prompt: keep supported answers, replace unsupported claims."""
    return (
        "You are the verifier. You check an answer against the evidence. If every claim in "
        "the answer is supported by the evidence, reply with supported true and the answer "
        "unchanged. If a claim is not supported, reply with supported false and an answer "
        f'that keeps only supported facts and says "{REST_NOT_STATED}" for the rest, or '
        f'"{NOT_STATED}" when no fact is supported.\n'
        'Reply with one JSON object: {"supported": true, "answer": "<answer>"}'
    )


def task_message(task: str) -> str:
    """The first user message of every role."""
    return f"Task: {task}"


def observation_message(name: str, text: str, error: bool) -> str:
    """A tool result, as a JSON-action-mode user message."""
    label = "Error from" if error else "Result of"
    return f"{label} {name}: {text}\n\nReply with the next JSON action."


def args_text(args: dict[str, Any]) -> str:
    """Arguments as compact JSON, for evidence headings."""
    return json.dumps(args, ensure_ascii=False, sort_keys=True)


FINAL_TURN = "You have no tool calls left. Give your final answer now."
BAD_ACTION = (
    "Your reply was not one JSON action. Reply with one JSON object, for example "
    f'{{"action": "{FINISH}", "answer": "..."}}.'
)
