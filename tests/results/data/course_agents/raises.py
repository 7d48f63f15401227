"""A deterministic agent whose entry point raises on every task: the harnesses must turn
each attempt into a failure with the exception's type and message, and carry on."""

from __future__ import annotations

from typing import Any

SCAFFOLD_NAME = "raises"


def run_task(task: str, options: dict[str, Any]) -> dict[str, Any]:
    raise ValueError(f"no answer for {task.split()[0].lower()!r} questions")
