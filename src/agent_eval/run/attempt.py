"""One attempt from the parent's side: workspace, worker call, scoring, trajectory."""

from __future__ import annotations

import os
import tempfile
import time
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agent_eval.records import AgentReply, Checks, FailureClass, Task
from agent_eval.redaction import Redactor
from agent_eval.replay import recording_name
from agent_eval.results import RAISED, AttemptResult, Frame
from agent_eval.run.workspace import SLOT_LOGS, fresh_workspace, move_logs, slot_logs
from agent_eval.sandbox import Sandbox
from agent_eval.score import (
    Changes,
    attempt_cost,
    changes,
    check_state,
    classify,
    copied_share,
    document_runs,
    judge_citations,
    read_cited,
    score_attempt,
    still_copy,
    tools_used,
    unjudged,
    workspace_diff,
)
from agent_eval.score import workspace_snapshot as snapshot
from agent_eval.trajectory import (
    Meta,
    ScoreRecord,
    StopRecord,
    trajectory_name,
    trajectory_text,
    write_new_file,
)

if TYPE_CHECKING:  # a run that neither records nor replays never loads the proxy
    from agent_eval.replay import ModelProxy, Traffic


@dataclass(frozen=True)
class AttemptPlan:
    """Everything one attempt needs that is the same for the whole run."""

    base_options: dict[str, Any]
    source: Path | None
    trajectory_dir: Path
    results_dir: Path
    stamp: str
    scaffold: str
    model: str
    meta: Meta
    """What every attempt's meta line says of the run."""
    redact: Redactor
    timeout_per_task: float | None
    seed: int | None
    suite_dir: Path
    """Where the suite file is: state checks' `with_files` are relative to it."""
    suite_tools: list[str] | None
    """Extra tools the suite grants (write_file...), unless a task says otherwise."""
    prices: dict[str, float | None]
    """The user's prices per million tokens (all None when none was given)."""
    max_cost: float | None
    """--max-cost-per-task: the cost budget of one attempt."""
    proxy: ModelProxy | None = None
    """The model proxy of --record, --replay or --cache: each try gets its own URL."""

    @cached_property
    def document_runs(self) -> frozenset[int]:
        """The documents' word runs, for every attempt's copied share; read once."""
        return document_runs(self.source)

    sandbox: Sandbox | None = None
    """The kernel sandbox the run's attempts and state checks run in, if any."""
    attempt_logs_mb: int | None = None
    """With a sandbox: each attempt's logs move to the trajectory folder as it ends, at
    most this many MB of them, so that no attempt finds what an earlier one wrote there;
    None keeps them for the run (``--isolation worker``, where attempts share a process,
    and a Ray node's slots)."""

    @property
    def start_options(self) -> dict[str, Any]:
        """The options workers start with. A sandbox relays one endpoint into itself: the
        model, or the proxy in front of it (--record, --replay, --cache) that every
        attempt's own URL names."""
        if self.sandbox is None or self.proxy is None:
            return self.base_options
        return {**self.base_options, "base_url": self.proxy.root_url}

    @cached_property
    def trajectory_ref(self) -> Path:
        """How rows name the trajectory folder: relative to the results file's folder when
        inside it, absolute otherwise. Resolved once, not once per attempt."""
        folder, base = self.trajectory_dir.resolve(), self.results_dir.resolve()
        return folder.relative_to(base) if folder.is_relative_to(base) else folder


def hard_timeout(budget: float | None) -> float | None:
    """When the harness kills an attempt: the budget plus a little grace, so an agent that
    honours options['limits'] can stop by itself and keep its trajectory."""
    return None if budget is None else budget + min(2.0, 0.1 * budget)


@dataclass(frozen=True)
class Scored:
    """One scored try of an attempt, with its files' text: the caller decides when and
    under which name they are written (a retried try is kept as `.tryN`)."""

    row: AttemptResult
    infra: dict[str, Any] | None
    """The agent's account of a model endpoint failure, for retries."""
    name: str
    trajectory: str
    """The trajectory file's text, redacted."""
    diff: str
    """The workspace diff, redacted; empty when nothing changed."""
    recording: str = ""
    """The try's recorded model calls, redacted; empty when not recorded."""

    def save(self, folder: Path, tag: str = "") -> None:
        """Write the trajectory (and diff) into ``folder``, its name tagged before `.jsonl`."""
        stem = self.name.removesuffix(".jsonl") + tag
        write_new_file(folder, stem + ".jsonl", self.trajectory)
        if self.diff:
            write_new_file(folder, stem + ".diff", self.diff)
        if self.recording:
            write_new_file(folder, recording_name(self.name, tag), self.recording)


@dataclass(frozen=True)
class Outcome:
    """What one attempt produced, as the worker that ran it (or a stand-in) reports it,
    before it is scored."""

    reply: AgentReply | None
    """The validated reply, or None when the attempt failed."""
    error: str | None = None
    """Why there is no reply, in one line."""
    failure: str | None = None
    """agent_error, over_budget or infra_error when there is no reply."""
    infra: dict[str, Any] | None = None
    """The agent's account of a model endpoint failure, for retries."""
    traceback: list[dict[str, Any]] | None = None
    """Where run_task raised: its frames in the agent's own files (agent_frames)."""


class RunsAgent(Protocol):
    """What runs the agent for one attempt: a worker process, or a stand-in for one lost."""

    @property
    def folder(self) -> Path | None:
        """The slot's scratch folder, where its attempts' workspaces are made (None: any)."""

    def run(self, task: str, options: dict[str, Any], timeout: float | None) -> Outcome: ...


def run_attempt(plan: AttemptPlan, worker: RunsAgent, task: Task, attempt: int) -> Scored:
    """Run and score one try of one attempt."""
    budget = task.max_seconds or plan.timeout_per_task
    mounts = plan.sandbox.mounts_in_tmp if plan.sandbox is not None else ()
    with fresh_workspace(plan.source, worker.folder, mounts) as workspace:
        made = os.stat(workspace)
        granted = task.tools if task.tools is not None else plan.suite_tools
        before = snapshot(workspace) if task.expect_state or granted else None
        options = {
            **plan.base_options,
            "workspace": str(workspace),
            "task_id": task.id,
            "attempt": attempt,
            "limits": {
                "max_steps": task.max_steps,
                "max_tokens": task.max_tokens,
                "max_seconds": budget,
                "max_cost": plan.max_cost,
            },
        }
        slot = worker.folder if plan.sandbox is not None else None
        if slot is not None:
            options["log_dir"] = str(slot / SLOT_LOGS)  # the trajectories are hidden
        if granted:
            options["tools"] = list(granted)
        if plan.seed is not None:
            options["seed"] = plan.seed
        started = datetime.now(UTC)
        clock = time.perf_counter()
        with plan.proxy.session(task.id, attempt) if plan.proxy else nullcontext() as session:
            if session is not None:  # the agent talks to the model through the proxy
                options["base_url"] = session.url
            outcome = worker.run(task.task, options, hard_timeout(budget))
            traffic = session.close() if session is not None else None
        seconds = time.perf_counter() - clock
        if slot is not None and plan.attempt_logs_mb is not None:
            # the attempt's processes are gone: its logs are all written
            move_logs(slot_logs(slot), plan.trajectory_dir, plan.redact,
                      plan.attempt_logs_mb << 20)  # fmt: skip
        # The agent has returned or been killed: judge a still copy of the world it left,
        # beside the slot, out of reach of whatever it may have left running.
        state, diff, touched = [], "", None
        if before is not None:
            run_scratch = worker.folder.parent if worker.folder is not None else None
            with tempfile.TemporaryDirectory(prefix="agent-eval-judged-", dir=run_scratch) as still:
                judged = Path(still) / "workspace"
                refused = still_copy(workspace, judged, (made.st_dev, made.st_ino))
                if refused is not None:
                    state = unjudged(task.expect_state, refused)
                else:
                    after = snapshot(judged)  # one reading of the copy, for all three
                    state = check_state(task.expect_state, before, judged, plan.suite_dir,
                                        after=after, sandbox=plan.sandbox,
                                        scratch=run_scratch)  # fmt: skip
                    diff = workspace_diff(plan.source, judged, after)
                    touched = _touched(changes(before, after))
    failure: FailureClass
    if outcome.reply is None:
        failure = "over_budget" if outcome.failure == "over_budget" else "agent_error"
        stopped = _course_stop(outcome.error) or outcome.failure or "agent_error"
        if outcome.failure == "infra_error":  # its HTTP client raised an outage
            failure, stopped = "infra_error", "model_error"
        reply = AgentReply(answer="", steps=0, tokens=0, stopped=stopped)
        uncited = judge_citations(task.expect_citations, [], {})
        checks = score_attempt(task, "", 0, [], 0, seconds, state, citations=uncited)
        error = outcome.error
    else:
        reply = AgentReply.model_validate(outcome.reply)
        used = tools_used(reply.trajectory)
        cost = attempt_cost(reply.tokens, reply.prompt_tokens, reply.completion_tokens, plan.prices)
        cited = judge_citations(task.expect_citations, reply.citations,
                                read_cited(plan.source, reply.citations))  # fmt: skip
        checks = score_attempt(task, reply.answer, reply.steps, used, reply.tokens, seconds, state,
                               cost=cost, max_cost=plan.max_cost, citations=cited)  # fmt: skip
        failure = classify(checks, reply.stopped)
        error = _stop_detail(reply) if failure == "infra_error" else None
    if outcome.traceback is not None:  # the agent raised: its own stop record says where
        stop = StopRecord(type="stop", reason="agent_error", detail=error,
                          traceback=outcome.traceback)  # fmt: skip
        reply.trajectory.append(dict(stop))
    diverged = traffic.divergence(outcome.failure) if traffic is not None else None
    if diverged is not None:  # a replay whose agent asked what its recording did not
        reply = reply.model_copy(update={"stopped": "replay_mismatch"})
        failure, error = "replay_mismatch", f"replay_mismatch: {diverged}"
    name = trajectory_name(plan.stamp, plan.scaffold, plan.model, task.id, attempt)
    meta: Meta = {**plan.meta, "task_id": task.id, "attempt": attempt, "task": task.task,
                  "started": started.isoformat()}  # fmt: skip
    # The course records the agent's own seconds when it gives them; the limits above
    # were judged on the harness's clock, which the row keeps as harness_seconds.
    measured = round(seconds, 3)
    reported = measured if reply.seconds is None else round(reply.seconds, 3)
    score = _score_line(checks, failure, reply, reported, error)
    text = trajectory_text(meta, reply.trajectory, score)
    row = AttemptResult(
        id=task.id,
        category=task.category,
        attempt=attempt,
        answer=reply.answer,
        steps=reply.steps,
        tokens=reply.tokens,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        seconds=reported,
        stopped=reply.stopped,
        checks=checks,
        trajectory_file=str(plan.trajectory_ref / name),
        failure_class=failure,
        error=error,
        roles=reply.roles,
        changed_files=touched,
        citations=reply.citations or None,
        group=task.group,
        traceback=None if outcome.traceback is None else [Frame(**f) for f in outcome.traceback],
        recording_file=_recording_ref(plan, name, traffic),
        copied_share=copied_share(reply.answer, task.task, plan.document_runs),
        harness_seconds=measured,
    )
    recording = plan.redact(traffic.text) if traffic is not None and row.recording_file else ""
    return Scored(row, outcome.infra, name, plan.redact(text), plan.redact(diff) if diff else "",
                  recording)  # fmt: skip


def _recording_ref(plan: AttemptPlan, name: str, traffic: Traffic | None) -> str | None:
    """How the row names the try's recording, when one is kept."""
    if traffic is None or plan.proxy is None or not plan.proxy.keep:
        return None
    return str(plan.trajectory_ref / recording_name(name))


def _score_line(
    checks: Checks, failure: str, reply: AgentReply, seconds: float, error: str | None
) -> ScoreRecord:
    return ScoreRecord(
        type="score",
        passed=checks.passed,
        failure_class=failure,
        answer=reply.answer,
        checks=checks.model_dump(mode="json"),
        steps=reply.steps,
        tokens=reply.tokens,
        seconds=seconds,
        stopped=reply.stopped,
        error=error,
    )


_RAISED = "run_task raised "
"""How the worker's one-line error begins when run_task raised (run/executors/agent_host.py)."""


def _course_stop(error: str | None) -> str | None:
    """The course's ``stopped`` for an entry point that raised, ``entry point raised
    {Type}: {message}``; None for any other failure, which keeps its own reason."""
    if error is None or not error.startswith(_RAISED):
        return None
    return RAISED + error.removeprefix(_RAISED)


def _stop_detail(reply: AgentReply) -> str:
    """The agent's own account of a model_error stop, from its last stop record."""
    for record in reversed(reply.trajectory):
        if record.get("type") == "stop":
            return f"model_error: {record.get('detail') or 'no detail'}"
    return "model_error"


def _touched(found: Changes) -> list[str]:
    marked = [(p, "A") for p in found.added] + [(p, "D") for p in found.removed]
    marked += [(p, "M") for p in found.changed]
    return [f"{mark} {path}" for path, mark in sorted(marked)]
