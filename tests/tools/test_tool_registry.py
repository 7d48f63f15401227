"""The tool registry: specs for the model, and argument errors as observations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_eval.tools import READ_TOOLS, WRITE_TOOLS, ToolContext, run_tool, tool_specs


def test_specs_are_openai_function_tools() -> None:
    specs = tool_specs([*READ_TOOLS, *WRITE_TOOLS])
    assert [s["function"]["name"] for s in specs] == [*READ_TOOLS, *WRITE_TOOLS]
    for spec in specs:
        assert spec["type"] == "function"
        assert set(spec["function"]) == {"name", "description", "parameters"}
        parameters = spec["function"]["parameters"]
        assert parameters["type"] == "object"
        assert set(parameters["required"]) <= set(parameters["properties"])
        assert spec["function"]["description"]


def test_an_unknown_tool_name_in_specs_fails_loudly() -> None:
    with pytest.raises(ValueError, match="unknown tool 'rm'"):
        tool_specs(["rm"])


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("delete_everything", {}, "unknown tool 'delete_everything'"),
        ("read_file", {}, "missing required argument(s): path"),
        ("read_file", {"path": "notes.md", "mode": "w"}, "unknown argument(s): mode"),
        ("read_file", {"path": 3}, "must be a string, not int"),
        ("read_file", ["notes.md"], "must be a JSON object"),
        ("search_documents", {"query": "   "}, "must not be empty"),
        ("run_command", {"command": {"argv": "ls"}}, "string or a list of strings"),
        ("write_file", {"path": "a.md"}, "missing required argument(s): content"),
        ("edit_file", {"path": "a.md", "old": "x", "new": None}, "must be a string"),
    ],
)
def test_bad_calls_are_error_observations(
    workspace: Path, name: str, args: Any, message: str
) -> None:
    seen = run_tool(name, ToolContext(workspace), args)
    assert seen.error
    assert message in seen.result


def test_a_vanished_workspace_is_an_error_observation(tmp_path: Path) -> None:
    ctx = ToolContext(tmp_path / "gone")
    for name, args in [
        ("read_file", {"path": "a.md"}),
        ("run_command", {"command": "ls"}),
        ("search_documents", {"query": "backup"}),
        ("write_file", {"path": "a.md", "content": "x"}),
        ("edit_file", {"path": "a.md", "old": "x", "new": "y"}),
    ]:
        seen = run_tool(name, ctx, args)
        assert seen.error, name
        assert "does not exist" in seen.result
