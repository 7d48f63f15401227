"""Run every selected task of a suite, with repeats, and record and score each attempt."""

from __future__ import annotations

import difflib
import json
import os
import platform
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent_eval import __version__
from agent_eval.errors import AgentLoadError, ConfigError
from agent_eval.records import (
    RESULTS_SCHEMA,
    AgentReply,
    AttemptResult,
    Checks,
    FailureClass,
    Task,
)
from agent_eval.run.config import RunConfig
from agent_eval.run.entry import Agent, AgentMisbehaved, coerce_reply, load_agent
from agent_eval.run.outputs import append_labbook, write_json_atomic
from agent_eval.run.secrets import Redactor, public_options
from agent_eval.run.workspace import fresh_workspace, workspace_source
from agent_eval.score.checks import classify, score_attempt, tools_used
from agent_eval.score.summary import per_task, summarise
from agent_eval.suite import LoadedSuite, load_suite
from agent_eval.trace.trajectory import trajectory_name, write_trajectory

OnAttempt = Callable[[AttemptResult], None]


@dataclass
class PreparedRun:
    """A run whose inputs all validated: nothing has executed yet."""

    config: RunConfig
    loaded: LoadedSuite
    tasks: list[Task]
    agent: Agent
    source: Path | None
    workspace_note: str
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    started: datetime = field(default_factory=lambda: datetime.now(UTC))

    @property
    def attempts(self) -> int:
        return len(self.tasks) * self.config.repeats


@dataclass
class RunReport:
    """What a run produced: the results document and its rows."""

    document: dict[str, Any]
    rows: list[AttemptResult]
    interrupted: bool = False

    @property
    def all_passed(self) -> bool:
        return bool(self.rows) and all(row.passed for row in self.rows)


def prepare(config: RunConfig) -> PreparedRun:
    """Load the suite and the agent and check every input before any attempt runs."""
    loaded = load_suite(config.tasks)
    tasks = select_tasks(loaded.suite.tasks, config.only, config.task_ids)
    agent = load_agent(config.agent)
    source, note = workspace_source(loaded, config.workspace)
    return PreparedRun(config, loaded, tasks, agent, source, note)


def select_tasks(tasks: list[Task], only: tuple[str, ...], ids: tuple[str, ...]) -> list[Task]:
    """Tasks kept by --only (categories) and --task-id; an unknown name is an error."""
    for wanted, known, flag in (
        (only, sorted({t.category for t in tasks}), "--only"),
        (ids, [t.id for t in tasks], "--task-id"),
    ):
        for name in wanted:
            if name not in known:
                close = difflib.get_close_matches(name, known, n=1)
                hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(known)}"
                raise ConfigError(f"{flag} {name}: not in this suite ({hint})")
    return [
        t for t in tasks if (not only or t.category in only) and (not ids or t.id in ids)
    ]


def execute(prepared: PreparedRun, on_attempt: OnAttempt | None = None) -> RunReport:
    """Run every attempt in task order, write all outputs, and return the report.

    build() runs once before the first attempt and close() always runs. Ctrl-C stops
    the run; what finished is still written, marked as interrupted.
    """
    config, agent = prepared.config, prepared.agent
    redact = Redactor.for_run(config.api_key, config.options)
    config.trajectory_dir.mkdir(parents=True, exist_ok=True)
    rows: list[AttemptResult] = []
    clock = time.perf_counter()
    interrupted = False
    warnings: list[str] = []
    if agent.build is not None:
        try:
            agent.build(_base_options(prepared))
        except Exception as exc:
            raise AgentLoadError(f"agent {agent.entry_point}: build() failed: {exc!r}") from exc
    try:
        for task in prepared.tasks:
            for attempt in range(1, config.repeats + 1):
                row = run_attempt(prepared, task, attempt, redact)
                rows.append(row)
                if on_attempt is not None:
                    on_attempt(row)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if agent.close is not None:
            try:
                agent.close()
            except Exception as exc:  # close() must never cost the results already earned
                warnings.append(f"agent close() failed: {exc!r}")
    document = results_document(prepared, rows, time.perf_counter() - clock, interrupted)
    document["run"]["warnings"] = warnings
    if config.out is not None:
        write_json_atomic(config.out, document, redact)
    if config.labbook is not None:
        append_labbook(config.labbook, document["run"], redact)
    return RunReport(document, rows, interrupted)


def run_attempt(prepared: PreparedRun, task: Task, attempt: int, redact: Redactor) -> AttemptResult:
    """One attempt in a fresh workspace: call the agent, score, write its trajectory."""
    config, agent = prepared.config, prepared.agent
    reply: AgentReply | None = None
    error: str | None = None
    failure: FailureClass
    with fresh_workspace(prepared.source) as workspace:
        options = {
            **_base_options(prepared),
            "workspace": str(workspace),
            "task_id": task.id,
            "attempt": attempt,
            "limits": {
                "max_steps": task.max_steps,
                "max_tokens": task.max_tokens,
                "max_seconds": task.max_seconds or config.timeout_per_task,
            },
        }
        started = datetime.now(UTC)
        clock = time.perf_counter()
        try:
            reply = coerce_reply(agent.run_task(task.task, options))
        except AgentMisbehaved as exc:
            error = str(exc)
        except (Exception, SystemExit) as exc:  # an agent's crash is its failure, not ours
            error = f"run_task raised {type(exc).__name__}: {exc}"
        seconds = time.perf_counter() - clock
    if reply is None:
        checks = score_attempt(task, "", 0, [], 0, seconds)
        reply = AgentReply(answer="", steps=0, tokens=0, stopped="agent_error")
        failure = "agent_error"
    else:
        used = tools_used(reply.trajectory)
        checks = score_attempt(task, reply.answer, reply.steps, used, reply.tokens, seconds)
        failure = classify(checks, reply.stopped)
        if failure == "infra_error":
            error = _stop_detail(reply)
    name = trajectory_name(
        prepared.started.strftime("%Y%m%dT%H%M%S"), agent.scaffold, config.model, task.id, attempt
    )
    meta = {
        "scaffold": agent.scaffold,
        "model": config.model,
        "router_model": config.router_model,
        "task_id": task.id,
        "attempt": attempt,
        "task": task.task,
        "suite": prepared.loaded.suite.name,
        "suite_version": prepared.loaded.suite.version,
        "suite_hash": prepared.loaded.hash,
        "run_id": prepared.run_id,
        "started": started.isoformat(),
    }
    score = _score_line(checks, failure, reply, seconds, error)
    path = write_trajectory(config.trajectory_dir, name, meta, reply.trajectory, score, redact)
    return AttemptResult(
        task_id=task.id,
        category=task.category,
        attempt=attempt,
        passed=checks.passed,
        failure_class=failure,
        answer=reply.answer,
        steps=reply.steps,
        tokens=reply.tokens,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        seconds=round(seconds, 3),
        stopped=reply.stopped,
        error=error,
        checks=checks,
        roles=reply.roles,
        trajectory_file=_relative(path, config.out),
    )


def results_document(
    prepared: PreparedRun, rows: list[AttemptResult], wall: float, interrupted: bool
) -> dict[str, Any]:
    """The results file: `run` (with the summary), `per_task` and `results`."""
    config, loaded = prepared.config, prepared.loaded
    run = {
        "lab": config.lab,
        "run_id": prepared.run_id,
        "scaffold": prepared.agent.scaffold,
        "agent_entry_point": config.agent,
        "task_set": loaded.suite.name,
        "task_set_version": loaded.suite.version,
        "suite_hash": loaded.hash,
        "model": config.model,
        "router_model": config.router_model,
        "quant": config.quant,
        "engine": config.engine,
        "engine_version": config.engine_version,
        "base_url": config.base_url,
        "repeats": config.repeats,
        "host": platform.node(),
        "date": prepared.started.isoformat(),
        "wall_seconds": round(wall, 3),
        "notes": config.notes,
        "harness_version": __version__,
        "concurrency": 1,
        "limits": {"timeout_per_task": config.timeout_per_task},
        "prices": config.prices.as_dict(),
        "options": public_options(config.options),
        "interrupted": interrupted,
        "summary": summarise(rows, config.prices.as_dict()),
    }
    return {
        "schema": RESULTS_SCHEMA,
        "run": run,
        "per_task": per_task(rows),
        "results": [row.model_dump(mode="json") for row in rows],
    }


def _base_options(prepared: PreparedRun) -> dict[str, Any]:
    """The course's option keys plus every --option; per-attempt keys are added later."""
    config = prepared.config
    return {
        "base_url": config.base_url,
        "model": config.model,
        "router_model": config.router_model,
        "api_key": config.api_key,
        "workspace": str(prepared.source) if prepared.source else None,
        "index": str(config.index) if config.index else None,
        **config.options,
    }


def _score_line(
    checks: Checks, failure: str, reply: AgentReply, seconds: float, error: str | None
) -> dict[str, Any]:
    return {
        "passed": checks.passed,
        "failure_class": failure,
        "checks": checks.model_dump(mode="json"),
        "steps": reply.steps,
        "tokens": reply.tokens,
        "seconds": round(seconds, 3),
        "stopped": reply.stopped,
        "error": error,
    }


def _stop_detail(reply: AgentReply) -> str:
    """The agent's own account of a model_error stop, from its last stop record."""
    for record in reversed(reply.trajectory):
        if record.get("type") == "stop":
            return f"model_error: {record.get('detail') or 'no detail'}"
    return "model_error"


def _relative(path: Path, out: Path | None) -> str:
    base = out.resolve().parent if out is not None else Path.cwd()
    try:
        return os.path.relpath(path.resolve(), base)
    except ValueError:  # another drive on Windows
        return str(path.resolve())


def dumps(document: dict[str, Any]) -> str:
    """The results document as the text written to --out."""
    return json.dumps(document, indent=2, ensure_ascii=False)
