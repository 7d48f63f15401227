"""Degenerate baseline agents: they never think, so any task they pass can be gamed.

`agent-eval audit` runs them through the real runner. Each is a tiny entry point usable
as `--agent builtin:NAME`, and each writes the trajectory a real agent would, so the
same checks apply to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_eval.agents import prompts
from agent_eval.tools import READ_TOOLS, ToolContext, run_tool, tool_specs
from agent_eval.trajectory import ToolRecord

DOCUMENT_SUFFIXES = (".md", ".txt", ".rst", ".csv", ".json")


@dataclass(frozen=True)
class Baseline:
    """An entry point that answers by a fixed rule."""

    SCAFFOLD_NAME: str
    why: str
    """What passing with this baseline says about a task's checks."""

    def run_task(self, task: str, options: dict[str, Any]) -> dict[str, Any]:
        answer, trajectory = self.answer(task, options)
        return {"answer": answer, "steps": len(trajectory), "tokens": 0, "trajectory": trajectory}

    def answer(self, task: str, options: dict[str, Any]) -> tuple[str, list[ToolRecord]]:
        rule = self.SCAFFOLD_NAME
        if rule == "empty":
            return "", []
        if rule == "echo":
            return task, []
        if rule == "cannot-find":
            return "I cannot find that in the documents.", []
        if rule == "instructions":
            return reference_instructions(), []
        workspace = Path(options["workspace"])
        if rule == "dump-documents":
            files = sorted(
                p for p in workspace.rglob("*") if p.is_file() and p.suffix in DOCUMENT_SUFFIXES
            )
            text = "\n\n".join(p.read_text(encoding="utf-8", errors="replace") for p in files)
            return text, []
        index = options.get("index")
        ctx = ToolContext(workspace, Path(index) if index else None)
        args = {"query": task}
        seen = run_tool("search_documents", ctx, args)
        record = ToolRecord(
            type="tool", tool="search_documents", args=args, error=seen.error, result=seen.result
        )
        return seen.result, [record]


empty = Baseline("empty", "an empty answer passes: the checks only forbid strings")
echo = Baseline("echo", "repeating the question passes: the expected strings are in the task")
dump_documents = Baseline(
    "dump-documents", "pasting every document passes: nothing forbids a wall of text"
)
top_passage = Baseline(
    "top-passage", "the first search hit passes: retrieval alone answers it, no reading needed"
)
cannot_find = Baseline("cannot-find", "a blanket refusal passes: the checks reward saying nothing")
instructions = Baseline(
    "instructions",
    "the reference agents' own instructions pass: a model that copies its prompt scores",
)

BASELINES = (empty, echo, dump_documents, top_passage, cannot_find, instructions)
"""Every baseline, in the order the audit runs them."""


def reference_instructions() -> str:
    """Every instruction the reference agents give their models, in both tool modes."""
    tools = tool_specs(list(READ_TOOLS))
    texts = [prompts.agent_system(tools, json_mode=True), prompts.router_system()]
    texts += [prompts.researcher_system(route, tools, json_mode=True) for route in prompts.ROUTES]
    texts += [prompts.answerer_system(json_mode=True), prompts.verifier_system()]
    return "\n\n".join([*texts, prompts.FINAL_TURN, prompts.BAD_ACTION])
