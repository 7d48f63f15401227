"""A deterministic agent for the course-compatibility fixtures and the differential test.

It needs no model: each task of course-suite.json gets a fixed reply. It passes some
tasks, answers one wrongly, over-steps one, calls tools repeatedly (an empty tool name
and model replies included), and answers one task rightly on its first call only, so
that its attempts differ. It counts its calls per task, so a harness must run its
attempts in one process, in order. ``--option fix=1`` makes it answer one more task
rightly, for a second run to compare with.
"""

from __future__ import annotations

from typing import Any

SCAFFOLD_NAME = "steady"

CALLS: dict[str, int] = {}


def _model(tokens: int) -> dict[str, Any]:
    return {"type": "model", "role": "assistant", "prompt_tokens": tokens, "completion_tokens": 9}


def _tool(name: str) -> dict[str, Any]:
    return {"type": "tool", "tool": name, "args": {}, "error": False, "result": "..."}


def run_task(task: str, options: dict[str, Any]) -> dict[str, Any]:
    calls = CALLS[task] = CALLS.get(task, 0) + 1
    if "gateway" in task:
        return {
            "answer": "The gateway listens on port 4000.",
            "steps": 2,
            "tokens": 120,
            "prompt_tokens": 100,
            "completion_tokens": 20,
            "stopped": "finished",
            "trajectory": [_model(100), _tool("search_documents")],
        }
    if "backups run" in task:  # no stop reason, no token split: the course records ""/null
        day = "Sunday" if options.get("fix") else "Saturday"  # --option fix=1: the better run
        return {
            "answer": f"The backups run on {day} night.",
            "steps": 3,
            "tokens": 340,
            "trajectory": [_model(150), _tool("search_documents"), _model(190)],
        }
    if "machines" in task:
        return {
            "answer": "There are 3 machines.",
            "steps": 9,
            "tokens": 905,
            "stopped": "finished",
            "trajectory": [_tool("search_documents")] * 4 + [_tool("read_file")] * 4,
        }
    if "reviewed" in task:
        trajectory = [
            _model(80),
            _tool("search_documents"),
            _tool("search_documents"),
            _tool("read_file"),
            _tool(""),
            _tool("search_documents"),
            _model(60),
        ]
        return {
            "answer": "It is reviewed next on 2026-09-01.",
            "steps": 7 + calls,
            "tokens": 610 + 10 * calls,
            "prompt_tokens": 500,
            "completion_tokens": 110,
            "stopped": "finished",
            "trajectory": trajectory,
        }
    if "window" in task:
        answer = "It lasts two hours." if calls == 1 else "It lasts three hours."
        return {
            "answer": answer,
            "steps": 1,
            "tokens": 50 + calls,
            "stopped": "finished",
            "trajectory": [_model(40)],
        }
    return {
        "answer": "runbook.md and inventory.md",
        "steps": 2,
        "tokens": 77,
        "stopped": "finished",
        "trajectory": [_tool("read_file"), _tool("read_file")],
    }
