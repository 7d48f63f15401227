"""A run whose inputs all validated: what the driver and the executors share."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from agent_eval.agents import AgentFacts
from agent_eval.records import Task
from agent_eval.results import Order, SandboxUsed
from agent_eval.run.earlier_runs import EarlierRecords
from agent_eval.run.settings import RunConfig
from agent_eval.sandbox import Sandbox
from agent_eval.suite import LoadedSuite

if TYPE_CHECKING:  # imported by the runner only when a run records or replays
    from agent_eval.replay import ModelProxy


@dataclass
class PreparedRun:
    """A run whose inputs all validated: nothing has executed yet."""

    config: RunConfig
    loaded: LoadedSuite
    tasks: list[Task]
    source: Path | None
    workspace_note: str
    agent: AgentFacts = field(init=False)
    """The agent, as a process of its own loaded it (run/agent_facts.py): none of its
    code runs in the process that scores it. Set once the run's sandbox is known."""
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    journal_path: Path | None = None
    reopen: Path | None = None
    """A finished run's results file that gets more repeats: its journal is written again."""
    earlier_wall: float = 0.0
    """Wall seconds of the run's earlier invocations, when they are known."""
    proxy: ModelProxy | None = None
    """The model proxy of --record, --replay or --cache (its recordings read already)."""
    sandbox: Sandbox | None = None
    """The kernel sandbox attempts and checks run in; None when they run unconfined."""
    sandbox_used: SandboxUsed | None = None
    """How the results record the sandbox (and why there is none)."""
    earlier_records: EarlierRecords = field(default_factory=EarlierRecords)
    """The records of earlier runs the sandbox hides in the folders it shows."""

    @property
    def stamp(self) -> str:
        """The run's start to the second, the first part of the names of its files."""
        return self.started.strftime("%Y%m%dT%H%M%S")

    @cached_property
    def order(self) -> Order:
        """Every attempt of the run, attempt-major: the order of every output."""
        return Order(tuple(t.id for t in self.tasks), self.config.repeats)

    @property
    def attempts(self) -> int:
        return len(self.tasks) * self.config.repeats

    @property
    def splits(self) -> list[str]:
        """The splits the selected tasks belong to (dev, test), sorted; empty when none."""
        found = {self.loaded.suite.split_of(task) for task in self.tasks}
        return sorted(split for split in found if split)
