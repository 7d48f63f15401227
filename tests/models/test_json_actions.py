"""The JSON-action format: rendering, tolerant parsing and the constraint schema."""

from __future__ import annotations

import pytest

from agent_eval.models.actions import (
    FINISH,
    Action,
    action_schema,
    json_schema_format,
    parse_action,
    render_action,
    render_finish,
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search_documents",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
        },
    },
    {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}},
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '{"action": "read_file", "args": {"path": "a.md"}}',
            Action("read_file", {"path": "a.md"}),
        ),
        (
            '```json\n{"action": "read_file", "args": {"path": "a.md"}}\n```',
            Action("read_file", {"path": "a.md"}),
        ),
        (
            'Sure! {"action": "read_file", "args": {"path": "a.md"}} done',
            Action("read_file", {"path": "a.md"}),
        ),
        (
            '{"tool": "read_file", "arguments": "{\\"path\\": \\"a.md\\"}"}',
            Action("read_file", {"path": "a.md"}),
        ),
        ('{"action": "finish", "answer": "42"}', Action(FINISH, answer="42")),
        ('{"action": "Final_Answer", "args": {"answer": "42"}}', Action(FINISH, answer="42")),
        ('{"answer": "42"}', Action(FINISH, answer="42")),
        ('{"action": "finish", "answer": 42}', Action(FINISH, answer="42")),
        ('{"action": "read_file", "args": [1]}', Action("read_file", {})),
        ("no json here", None),
        ('{"route": "search"}', None),
        ("[1, 2]", None),
        ('{"action": "read_file", "args": {', None),
    ],
)
def test_parse_action(text: str, expected: Action | None) -> None:
    assert parse_action(text) == expected


def test_rendered_actions_parse_back() -> None:
    assert parse_action(render_action("search_documents", {"query": "ü"})) == Action(
        "search_documents", {"query": "ü"}
    )
    assert parse_action(render_finish("done")) == Action(FINISH, answer="done")
    assert parse_action(render_finish("done")).is_finish  # type: ignore[union-attr]


def test_schema_has_one_branch_per_tool_and_finish() -> None:
    schema = action_schema(TOOLS)
    names = [branch["properties"]["action"]["const"] for branch in schema["anyOf"]]
    assert names == ["search_documents", "read_file", FINISH]
    assert schema["anyOf"][0]["properties"]["args"] == TOOLS[0]["function"]["parameters"]
    only_finish = action_schema(TOOLS, allow_tools=False)
    assert only_finish["properties"]["action"] == {"const": FINISH}
    wrapped = json_schema_format("action", only_finish)
    assert wrapped == {
        "type": "json_schema",
        "json_schema": {"name": "action", "schema": only_finish},
    }
