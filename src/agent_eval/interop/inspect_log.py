"""Inspect AI logs in and out, through Inspect's own reader, writer and models.

In: each sample × epoch of an ``.eval`` or ``.json`` log is an attempt (sample id → task
id, epoch → attempt); the first scorer's value, taken as Inspect's accuracy takes it
(``value_to_float``), is the verdict: full credit passes. Model and tool events become
the trajectory's model and tool records, a sample limit or error its stop and failure
class. A log agent-eval wrote carries its run and each attempt's row in metadata, and
reads back as that run. Out: one of our runs as an ``EvalLog`` with a sample per attempt.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_eval.errors import ExtraMissingError, ResultsError
from agent_eval.interop.foreign import (
    AttemptDraft,
    ForeignRun,
    attempt_records,
    build_run,
    clip,
    our_head,
    our_row,
    row_document,
    task_identity,
)
from agent_eval.records import FailureClass
from agent_eval.results import AttemptResult, RunHead, RunResults, describe_failure

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample

INSTALL = "pip install -e '.[inspect]' in the agent-eval clone"
OURS = "agent_eval"
"""The scorer of a log agent-eval wrote, and the key of each sample's metadata that
carries the attempt's row (checks, failure class, error), so that the run read back is
the same run."""
OURS_RUN = "agent_eval_run"
"""The key of the log's metadata that carries the run's head."""

LIMIT_STOPS: dict[str, str] = {
    "message": "turn_limit",
    "turn": "turn_limit",
    "token": "token_budget",
    "context": "token_budget",
    "time": "time_budget",
    "working": "time_budget",
    "cost": "cost_budget",
}
"""Inspect's sample limit types and the stop reason of ours each matches; the rest
(operator, custom) stop as agent_error."""


def require_inspect(path: Path | str) -> None:
    """ExtraMissingError with the install advice when Inspect AI is not installed."""
    if importlib.util.find_spec("inspect_ai") is None:
        raise ExtraMissingError(
            f"{path}: an Inspect AI log; reading or writing it needs Inspect AI: {INSTALL}"
        )


def read_inspect_log(path: Path) -> list[ForeignRun]:
    """The run an Inspect AI log holds (one task, one model); ResultsError naming the file
    when Inspect cannot read it."""
    require_inspect(path)
    from inspect_ai.log import read_eval_log, read_eval_log_samples

    try:
        header = read_eval_log(str(path), header_only=True)
        samples = (
            list(read_eval_log_samples(str(path), all_samples_required=False))
            if header.status != "started" or path.suffix == ".eval"
            else []
        )
    except Exception as exc:  # Inspect raises many kinds; each is a file it cannot read
        raise ResultsError(
            f"Inspect AI log {path}: cannot be read by Inspect AI ({_first_line(exc)})"
        ) from None
    scorer = _primary_scorer(header)
    expected = {str(s.id): _target_text(s.target) or None for s in samples}
    ours = (header.eval.metadata or {}).get(OURS_RUN)
    if isinstance(ours, dict):  # a log agent-eval wrote: its run and rows, whole
        head = our_head(f"Inspect AI log {path}: eval.metadata.{OURS_RUN}", ours)
        drafts = [_draft(sample, scorer, _our_row(path, sample)) for sample in samples]
    else:
        head = _head(path, header)
        drafts = [_draft(sample, scorer) for sample in samples]
    if head.suite_hash is None or not isinstance(ours, dict):
        head = head.model_copy(update={"suite_hash": task_identity(expected)})
    return [build_run(path, head, drafts, "inspect", expected)]


def _our_row(path: Path, sample: EvalSample) -> AttemptResult | None:
    document = (sample.metadata or {}).get(OURS)
    if document is None:
        return None
    where = f"Inspect AI log {path}: sample {sample.id} epoch {sample.epoch}: metadata.{OURS}"
    return our_row(where, document)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _primary_scorer(log: EvalLog) -> str | None:
    if log.results and log.results.scores:
        return log.results.scores[0].name
    return None


def _head(path: Path, log: EvalLog) -> RunHead:
    spec = log.eval
    solvers = [step.solver for step in (log.plan.steps if log.plan else [])]
    scaffold = spec.solver or ("+".join(solvers) if solvers else "inspect")
    dataset = spec.dataset.name or spec.dataset.location or "(unnamed)"
    version = (spec.packages or {}).get("inspect_ai")
    stats = log.stats
    return RunHead(
        run_id=spec.run_id or spec.eval_id,
        scaffold=scaffold,
        agent_entry_point=spec.task_file or spec.task_registry_name,
        task_set=spec.task,
        task_set_version=str(spec.task_version),
        model=spec.model,
        base_url=spec.model_base_url,
        date=spec.created[:10],
        started_at=stats.started_at or spec.created,
        wall_seconds=_elapsed(stats.started_at, stats.completed_at),
        harness_version=f"inspect_ai {version}" if version else None,
        notes=f"Inspect AI log {path.name}: task {spec.task}, dataset {dataset} "
        f"({spec.dataset.samples} samples), status {log.status}",
        interrupted=log.status != "success" or None,
        options={"source_format": "inspect", "dataset": dataset},
    )


def _elapsed(start: str | None, end: str | None) -> float | None:
    from datetime import datetime

    if not start or not end:
        return None
    return round((datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds(), 3)


def _target_text(target: str | list[str]) -> str:
    return target if isinstance(target, str) else "\n".join(target)


def _draft(
    sample: EvalSample, scorer: str | None, row: AttemptResult | None = None
) -> AttemptDraft:
    from inspect_ai.scorer import value_to_float

    scores = sample.scores or {}
    name = scorer if scorer in scores else next(iter(scores), None)
    score = scores.get(name) if name else None
    value = score.value if score else None
    credit = value_to_float()(value) if score is not None and value is not None else 0.0
    passed = score is not None and credit >= 1.0 and sample.error is None
    records = _records(sample)
    failure: FailureClass | None = None
    stopped, error = "finished", None
    if row is not None:  # ours: the row says why it stopped
        stopped, error = row.stopped or "", row.error
        records.append({"type": "stop", "reason": stopped, "detail": error})
    elif sample.limit is not None:
        stopped = LIMIT_STOPS.get(sample.limit.type, "agent_error")
        failure = "over_budget" if stopped != "agent_error" else "agent_error"
        error = f"{sample.limit.type} limit {sample.limit.limit:g} exceeded"
        records.append({"type": "stop", "reason": stopped, "detail": error})
    elif sample.error is not None:
        stopped, failure = "agent_error", "agent_error"
        error = _first_line(Exception(sample.error.message))
        records.append({"type": "stop", "reason": stopped, "detail": error})
    else:
        reason = sample.output.stop_reason if sample.output else None
        records.append({"type": "stop", "reason": "finished", "detail": reason})
        if not passed:
            error = f"scorer {name} gave {value!r}" if score is not None else "not scored"
    usage = list((sample.model_usage or {}).values())
    prompt = sum(u.input_tokens for u in usage) if usage else None
    completion = sum(u.output_tokens for u in usage) if usage else None
    total = sum(u.total_tokens for u in usage) if usage else None
    answer = sample.output.completion if sample.output else ""
    return AttemptDraft(
        task_id=row.id if row else str(sample.id),
        attempt=row.attempt if row else sample.epoch,
        passed=passed,
        answer=answer,
        category=str((sample.metadata or {}).get("category", "")),
        records=records,
        prompt_tokens=prompt,
        completion_tokens=completion,
        tokens=total,
        seconds=sample.working_time if sample.working_time is not None else sample.total_time,
        stopped=stopped,
        failure_class=None if passed else failure,
        error=error,
        score={
            "scorer": name,
            "value": value,
            "credit": credit,
            "scored_answer": score.answer if score else None,
            "explanation": score.explanation if score else None,
        },
        task_text=sample.input if isinstance(sample.input, str) else None,
        row=row,
    )


def _records(sample: EvalSample) -> list[dict[str, Any]]:
    """Model replies and tool calls from the sample's events, in order."""
    from inspect_ai.event import ModelEvent, ToolEvent

    records: list[dict[str, Any]] = []
    for event in sample.events:
        if isinstance(event, ModelEvent):
            output = event.output
            message = output.message if output and output.choices else None
            usage = output.usage if output else None
            records.append(
                {
                    "type": "model",
                    "role": event.role or "assistant",
                    "model": event.model,
                    "tool_calls": [call.function for call in (message.tool_calls or [])]
                    if message
                    else [],
                    "prompt_tokens": usage.input_tokens if usage else None,
                    "completion_tokens": usage.output_tokens if usage else None,
                    "seconds": event.working_time,
                    "content": clip(message.text) if message else "",
                    **({"error": clip(event.error)} if event.error else {}),
                }
            )
        elif isinstance(event, ToolEvent):
            records.append(
                {
                    "type": "tool",
                    "tool": event.function,
                    "args": event.arguments,
                    "error": event.error is not None,
                    "result": clip(event.error.message if event.error else event.result),
                    "seconds": event.working_time,
                    "call_id": event.id,
                }
            )
    return records


# -- out ---------------------------------------------------------------------------


def write_inspect_log(run: RunResults, out: Path) -> int:
    """Write ``run`` as an Inspect AI log (``.eval`` or ``.json`` by the suffix of
    ``out``), through Inspect's own models and writer; the number of samples written."""
    require_inspect(out)
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalError,
        EvalLog,
        EvalMetric,
        EvalResults,
        EvalSample,
        EvalScore,
        EvalSpec,
        EvalStats,
        write_eval_log,
    )
    from inspect_ai.model import ModelOutput, ModelUsage
    from inspect_ai.scorer import CORRECT, INCORRECT, Score

    head = run.run
    task_ids = list(dict.fromkeys(row.id for row in run.rows))
    samples = []
    for row in run.rows:
        records = attempt_records(run, row)
        task = _task_of(records) or row.id
        messages, events = _conversation(records, task, head.model)
        usage = ModelUsage(
            input_tokens=row.prompt_tokens or 0,
            output_tokens=row.completion_tokens or 0,
            total_tokens=row.tokens,
        )
        samples.append(
            EvalSample(
                id=row.id,
                epoch=row.attempt,
                input=task,
                target="",
                messages=messages,
                events=events,
                output=ModelOutput.from_content(head.model, row.answer),
                scores={
                    OURS: Score(
                        value=CORRECT if row.passed else INCORRECT,
                        answer=row.answer,
                        explanation=row.failure,
                    )
                },
                metadata={
                    "category": row.category,
                    "failure_class": row.failure_class,
                    "steps": row.steps,
                    "stopped": row.stopped,
                    OURS: row_document(row),
                },
                model_usage={head.model: usage},
                total_time=row.seconds,
                working_time=row.seconds,
                # What stopped the attempt before an answer could be judged (the agent, or
                # the model endpoint) is what Inspect records as a sample's error.
                error=EvalError(
                    message=describe_failure(row, numbered=False), traceback="", traceback_ansi=""
                )
                if row.failure_class in ("agent_error", "infra_error")
                else None,
            )
        )
    passed = sum(row.passed for row in run.rows)
    accuracy = passed / len(run.rows) if run.rows else 0.0
    created = head.started_at or (f"{head.date}T00:00:00+00:00" if head.date else None)
    log = EvalLog(
        status="success" if not head.interrupted else "cancelled",
        eval=EvalSpec(
            run_id=head.run_id,
            eval_id=head.run_id,
            created=created or "1970-01-01T00:00:00+00:00",
            task=head.task_set,
            task_version=head.task_set_version,
            task_id=head.suite_hash or head.task_set,
            solver=head.scaffold,
            dataset=EvalDataset(name=head.task_set, samples=len(task_ids), sample_ids=task_ids),
            model=head.model,
            config=EvalConfig(epochs=max((row.attempt for row in run.rows), default=1)),
            metadata={OURS_RUN: head.model_dump(mode="json", exclude_none=True)},
        ),
        results=EvalResults(
            total_samples=len(run.rows),
            completed_samples=len(run.rows),
            scores=[
                EvalScore(
                    name=OURS,
                    scorer=OURS,
                    metrics={"accuracy": EvalMetric(name="accuracy", value=accuracy)},
                )
            ],
        ),
        stats=EvalStats(started_at=created or "", completed_at=created or ""),
        samples=samples,
    )
    write_eval_log(log, str(out), format="json" if out.suffix == ".json" else "eval")
    return len(samples)


def _task_of(records: list[dict[str, Any]]) -> str | None:
    meta = records[0].get("meta") if records else None
    task = meta.get("task") if isinstance(meta, dict) else None
    return task if isinstance(task, str) and task else None


def _conversation(
    records: list[dict[str, Any]], task: str, model: str
) -> tuple[list[Any], list[Any]]:
    """Inspect messages and events from our records: the task as the user's message, a
    model event and assistant message per reply, a tool event and tool message per call."""
    from inspect_ai.event import ModelEvent, ToolEvent
    from inspect_ai.model import (
        ChatMessageAssistant,
        ChatMessageTool,
        ChatMessageUser,
        GenerateConfig,
        ModelOutput,
        ModelUsage,
    )
    from inspect_ai.tool import ToolCall

    messages: list[Any] = [ChatMessageUser(content=task)]
    events: list[Any] = []
    replies = [i for i, r in enumerate(records) if r.get("type") == "model"]
    for position, record in enumerate(records):
        if record.get("type") != "model":
            continue
        # The tool records up to the next reply are this reply's calls.
        following = next((i for i in replies if i > position), len(records))
        tools = [r for r in records[position + 1 : following] if r.get("type") == "tool"]
        calls = [
            ToolCall(
                id=str(t.get("call_id") or f"call_{position}_{n}"),
                function=str(t.get("tool")),
                arguments=_arguments(t.get("args")),
            )
            for n, t in enumerate(tools)
        ]
        reply = ChatMessageAssistant(
            content=str(record.get("content") or ""), tool_calls=calls or None, model=model
        )
        output = ModelOutput.from_message(reply)
        output.usage = ModelUsage(
            input_tokens=int(record.get("prompt_tokens") or 0),
            output_tokens=int(record.get("completion_tokens") or 0),
            total_tokens=int(record.get("prompt_tokens") or 0)
            + int(record.get("completion_tokens") or 0),
        )
        events.append(
            ModelEvent(
                model=str(record.get("model") or model),
                input=list(messages),
                tools=[],
                tool_choice="auto",
                config=GenerateConfig(),
                output=output,
                working_time=record.get("seconds"),
            )
        )
        messages.append(reply)
        for call, tool in zip(calls, tools, strict=True):
            result = str(tool.get("result") or "")
            events.append(
                ToolEvent(
                    id=call.id,
                    function=call.function,
                    arguments=call.arguments,
                    result=result,
                    working_time=tool.get("seconds"),
                )
            )
            messages.append(
                ChatMessageTool(content=result, tool_call_id=call.id, function=call.function)
            )
    return messages, events


def _arguments(args: Any) -> dict[str, Any]:
    return args if isinstance(args, dict) else {"value": args}
