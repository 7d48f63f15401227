"""`agent-eval replay`: one recorded attempt again, in this process, from its recording.

The agent runs in the calling thread, not in a worker process, so a debugger's
breakpoints and the agent's print statements work; each model call it makes is answered
from the attempt's own recording and shown as it passes. No time budget is enforced
(a breakpoint may hold the attempt as long as it likes), and the harness writes no
results, journal, trajectory or recording.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_eval.agents import (
    Agent,
    AgentMisbehaved,
    coerce_reply,
    describe_outage,
    find_outage,
    load_agent,
)
from agent_eval.errors import ConfigError
from agent_eval.redaction import REDACTED, Redactor
from agent_eval.replay import ModelProxy, OnCall, ReplaySource, read_recording, recorded_suite
from agent_eval.results import AttemptResult, iter_rows, read_head
from agent_eval.run.attempt import Outcome, run_attempt
from agent_eval.run.runner import attempt_plan, prepare
from agent_eval.run.settings import DEFAULT_BASE_URL, RunConfig


@dataclass
class InProcess:
    """Runs the agent's run_task in this thread, as a worker process would run it."""

    agent: Agent
    folder: Path | None = None
    """Workspaces are made anywhere: nothing here is sandboxed."""

    def run(self, task: str, options: dict[str, Any], timeout: float | None) -> Outcome:
        try:
            raw = self.agent.run_task(task, options)
        except Exception as exc:  # the agent's failure, as a worker reports it
            outage = find_outage(exc)
            if outage is not None:
                return Outcome(None, describe_outage(exc, outage), "infra_error", outage.as_infra())
            return Outcome(None, f"run_task raised {type(exc).__name__}: {exc}", "agent_error")
        try:
            reply = coerce_reply(raw)
        except AgentMisbehaved as exc:
            return Outcome(None, str(exc), "agent_error")
        infra = raw.get("infra_error") if isinstance(raw.get("infra_error"), dict) else None
        return Outcome(reply, infra=infra)


def replay_attempt(
    results: Path,
    task_id: str,
    attempt: int,
    on_call: OnCall,
    agent: str | None = None,
    tasks: str | None = None,
) -> AttemptResult:
    """Replay attempt ``attempt`` of task ``task_id`` of the run in ``results`` (its last
    try); ``agent`` and ``tasks`` default to the recorded run's."""
    head = read_head(results).run
    row = next((r for r in iter_rows(results) if (r.id, r.attempt) == (task_id, attempt)), None)
    if row is None:
        raise ConfigError(
            f"{results}: no attempt {attempt} of task {task_id}; see the run's rows with "
            f"`agent-eval report {results}`"
        )
    if not row.recording_file:
        raise ConfigError(
            f"{results}: task {task_id} attempt {attempt} was not recorded; run it again "
            "with `agent-eval run --record ...`"
        )
    path = Path(row.recording_file)
    path = path if path.is_absolute() else results.parent / path
    try:
        _, calls = read_recording(path)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{results}: cannot read the recording {path}: {exc}") from None
    options = {k: str(v) for k, v in (head.options or {}).items() if v != REDACTED}
    config = RunConfig(
        agent=agent or head.agent_entry_point or "",
        tasks=tasks or recorded_suite(results, head.suite_hash),
        task_ids=(task_id,),
        repeats=attempt,
        model=head.model,
        router_model=head.router_model,
        base_url=head.base_url or DEFAULT_BASE_URL,
        options=options,
        seed=head.seed,
    )
    prepared = prepare(config)
    source = ReplaySource(str(results), {(task_id, attempt): (tuple(calls),)})
    proxy = ModelProxy(config.base_url, Redactor([]), keep=False, replay=source,
                       on_call=on_call)  # fmt: skip
    plan = attempt_plan(prepared, proxy)
    loaded = load_agent(config.agent)  # here, for the debugger: this replay writes no verdict
    try:
        if loaded.build is not None:
            loaded.build(dict(plan.base_options))
        return run_attempt(plan, InProcess(loaded), prepared.tasks[0], attempt).row
    finally:
        proxy.close()
        if loaded.close is not None:
            loaded.close()
