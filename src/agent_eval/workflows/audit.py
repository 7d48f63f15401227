"""Audit a suite: run degenerate baselines through the real runner and list the tasks
they pass. A task that an agent can pass without thinking has checks that can be gamed.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_eval.agents import BASELINES
from agent_eval.run import build_settings, execute, prepare


@dataclass(frozen=True)
class Audit:
    """Which tasks each baseline passed, and the union of them."""

    suite: str
    version: str
    tasks: int
    passed: dict[str, list[str]]
    why: dict[str, str]

    @property
    def gameable(self) -> list[str]:
        found = {task for ids in self.passed.values() for task in ids}
        return sorted(found)

    def as_json(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "version": self.version,
            "baselines": {n: {"passed": ids, "why": self.why[n]} for n, ids in self.passed.items()},
            "gameable": self.gameable,
        }

    def lines(self) -> list[str]:
        out = [
            f"audit {self.suite} {self.version}: {len(self.passed)} baselines, {self.tasks} tasks"
        ]
        for name, ids in self.passed.items():
            out.append(
                f"  {name:<15} passes {len(ids)} task(s){': ' if ids else ''}{', '.join(ids)}"
            )
            if ids:
                out.append(f"  {'':<15} why: {self.why[name]}")
        if self.gameable:
            out.append(f"gameable: {len(self.gameable)} task(s) a baseline passes: "
                       + ", ".join(self.gameable))  # fmt: skip
        else:
            out.append("gameable: none; no baseline passes any task")
        return out


def audit(suite: str, workspace: Path | None = None, allow_empty: bool = False) -> Audit:
    """Run every baseline once on every task of ``suite`` and collect what passed."""
    passed: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="agent-eval-audit-") as scratch:
        for baseline in BASELINES:
            settings = {
                "agent": f"builtin:{baseline.SCAFFOLD_NAME}",
                "tasks": suite,
                "workspace": workspace,
                "allow_empty_workspace": allow_empty,
                "trajectory_dir": Path(scratch) / baseline.SCAFFOLD_NAME,
                "max_infra_retries": 0,
            }
            config = build_settings(settings, "audit: ")
            prepared = prepare(config)
            rows = execute(prepared).rows
            passed[baseline.SCAFFOLD_NAME] = [row.id for row in rows if row.passed]
    loaded = prepared.loaded
    return Audit(
        loaded.suite.name,
        loaded.suite.version,
        len(prepared.tasks),
        passed,
        {b.SCAFFOLD_NAME: b.why for b in BASELINES},
    )
