"""One configuration measured from start to end, as `run`, each cell of a sweep and each
scaffold of the demo measure it: prepare, count a look at held-out tasks, tell the
console, run every attempt, and say whether the test split has been looked at too often.
What is printed is the console's (cli/); what is run is this module's."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from agent_eval.run import (
    AttemptObserver,
    PreparedRun,
    RunConfig,
    RunReport,
    build_settings,
    execute,
    prepare,
    starting,
)


@dataclass(frozen=True)
class OneRun:
    """A finished (or interrupted) run and what it found."""

    prepared: PreparedRun
    report: RunReport
    test_looks: list[str] | None = None
    """When a finished run evaluated test-split tasks: the warnings that the split has
    been looked at too often (none when it has not); else None."""

    @property
    def config(self) -> RunConfig:
        """The settings it ran with: the default --out and labbook filled in."""
        return self.prepared.config


class RunConsole(Protocol):
    """What a workflow tells as it measures one configuration; cli/ prints it."""

    def opening(self, prepared: PreparedRun) -> AbstractContextManager[AttemptObserver]:
        """Say what is about to run; entering gives what hears each attempt, and leaving
        closes what it opened (a progress bar, an export), however the run ended."""

    def closing(self, done: OneRun) -> None:
        """Say how the run went."""


def run_one(
    config: RunConfig | Mapping[str, Any],
    console: RunConsole,
    on_notice: Callable[[str], None] | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> OneRun:
    """Measure ``config``: prepare → count held-out looks → open the console → execute →
    close it → check the test split's looks. Input errors surface before any attempt.
    ``config`` is the run's settings, or the names and values build_settings takes."""
    if not isinstance(config, RunConfig):
        config = build_settings(config)
    prepared = prepare(config)
    record_held_out(prepared)
    # the first worker starts (and builds) while the console opens
    with starting(prepared, on_notice) as started, console.opening(prepared) as observer:
        report = execute(prepared, observer, on_notice, on_warning, started)
    done = OneRun(prepared, report, _test_looks(prepared, report))
    console.closing(done)
    return done


def record_held_out(prepared: PreparedRun) -> RunConfig:
    """The run's config, with the default labbook when it evaluates test-split tasks and
    names none: every look at held-out tasks is counted, asked for or not."""
    if "test" in prepared.splits and prepared.config.labbook is None:
        prepared.config = replace(prepared.config, labbook=default_labbook())
    return prepared.config


def default_labbook() -> Path:
    """Where test-split runs are recorded without --labbook: $AGENT_EVAL_LABBOOK, else
    agent-eval/labbook.jsonl in the user's data folder ($XDG_DATA_HOME or ~/.local/share)."""
    named = os.environ.get("AGENT_EVAL_LABBOOK")
    if named:
        return Path(named)
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "agent-eval" / "labbook.jsonl"


def _test_looks(prepared: PreparedRun, report: RunReport) -> list[str] | None:
    """The labbook's warnings for a finished run of test-split tasks, else None."""
    config = prepared.config
    if "test" not in prepared.splits or config.labbook is None or report.interrupted:
        return None
    # Imported here: the labbook's reader brings the statistics (scipy) and the other
    # harnesses' formats, which a run that evaluates no test task never needs.
    from agent_eval.report import overlooked, read_history

    suite = prepared.loaded.suite
    return overlooked(read_history(config.labbook), config.max_test_looks,
                      (suite.name, suite.version))  # fmt: skip
