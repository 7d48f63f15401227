"""Plan one attempt's span tree from its trajectory records, without OpenTelemetry.

The plan is plain data: names, kinds, attributes and nanosecond times reconstructed
from the trajectory. Keeping it apart from the SDK lets the mapping be read and tested
on its own, and keeps the otel extra optional for everything but the export itself.

Times: records carry durations (``seconds``), not clock times, so each span starts where
the previous one ended, counted from the meta line's ``started``. A record that carries
``t`` (seconds from ``started`` to the record's start) is placed there instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from agent_eval.errors import ResultsError
from agent_eval.trace import genai

AttrValue = str | bool | int | float | list[str]
NS = 1_000_000_000
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class PlannedEvent:
    """A span event at a point in time."""

    name: str
    """The event name."""
    at_ns: int
    """When it happened, nanoseconds since the Unix epoch."""
    attributes: dict[str, AttrValue]
    """Its attributes."""


@dataclass(frozen=True)
class PlannedSpan:
    """One span to create: what it is, when it ran and what it carries."""

    name: str
    """The span name, such as ``chat local/chat``."""
    client: bool
    """True for a CLIENT span (a model call), False for INTERNAL."""
    start_ns: int
    """Start, nanoseconds since the Unix epoch."""
    end_ns: int
    """End, nanoseconds since the Unix epoch."""
    attributes: dict[str, AttrValue]
    """The span's attributes."""
    error: str | None = None
    """When set, the span's status is ERROR with this description."""
    events: tuple[PlannedEvent, ...] = field(default=())
    """Events on the span."""


@dataclass(frozen=True)
class AttemptPlan:
    """The span tree of one attempt: a root and its direct children, in order."""

    key: str
    """``{run_id}:{task_id}:r{attempt}``: the conversation id."""
    seed: str
    """What the trace and span ids derive from: the key and the scaffold."""
    root: PlannedSpan
    """The ``invoke_agent`` span."""
    children: tuple[PlannedSpan, ...]
    """Model, tool and route spans, each a child of the root."""


def plan_attempt(
    records: Sequence[Mapping[str, Any]],
    source: str,
    run: Mapping[str, Any] | None = None,
    content: bool = False,
) -> AttemptPlan:
    """The span tree of one trajectory; ``source`` names the file in error messages.

    ``run`` is the results file's ``run`` block (engine, lab); ``content`` adds model
    content, tool results and the task text as JSON strings.
    """
    if not records or not isinstance(records[0].get("meta"), Mapping):
        raise ResultsError(f"trajectory {source}: the first line is not a meta line")
    meta: Mapping[str, Any] = records[0]["meta"]
    origin = _start_ns(meta.get("started"), source)
    run = run or {}
    key = f"{meta.get('run_id', '')}:{meta.get('task_id', '')}:r{meta.get('attempt', 0)}"
    provider = str(run.get("engine") or genai.DEFAULT_PROVIDER)
    children: list[PlannedSpan] = []
    score: Mapping[str, Any] = {}
    stop: Mapping[str, Any] = {}
    cursor = 0.0
    for record in records[1:]:
        kind = record.get("type")
        if kind == "score":
            score = record
            continue
        if kind == "stop":
            stop = record
            continue
        if kind not in ("model", "tool", "route"):
            continue
        begin = _number(record.get("t"), cursor)
        end = begin + (0.0 if kind == "route" else max(_number(record.get("seconds"), 0.0), 0.0))
        cursor = max(cursor, end)
        start_ns, end_ns = origin + round(begin * NS), origin + round(end * NS)
        if kind == "model":
            children.append(_chat_span(record, provider, content, start_ns, end_ns))
        elif kind == "tool":
            children.append(_tool_span(record, content, start_ns, end_ns))
        else:
            children.append(_route_span(record, start_ns))
    end_ns = origin + round(max(_number(score.get("seconds"), 0.0), cursor) * NS)
    root = _root_span(meta, run, key, score, stop, content, origin, end_ns)
    seed = f"{key}:{meta.get('scaffold', '')}"
    return AttemptPlan(key=key, seed=seed, root=root, children=tuple(children))


def _root_span(
    meta: Mapping[str, Any],
    run: Mapping[str, Any],
    key: str,
    score: Mapping[str, Any],
    stop: Mapping[str, Any],
    content: bool,
    start_ns: int,
    end_ns: int,
) -> PlannedSpan:
    scaffold = str(meta.get("scaffold", "agent"))
    attributes: dict[str, AttrValue] = {
        genai.OPERATION_NAME: genai.OP_INVOKE_AGENT,
        genai.AGENT_NAME: scaffold,
        genai.CONVERSATION_ID: key,
        genai.REQUEST_MODEL: str(meta.get("model", "")),
        genai.RUN_ID: str(meta.get("run_id", "")),
        genai.SUITE_NAME: str(meta.get("suite", "")),
        genai.SUITE_VERSION: str(meta.get("suite_version", "")),
        genai.SUITE_HASH: str(meta.get("suite_hash", "")),
        genai.TASK_ID: str(meta.get("task_id", "")),
        genai.ATTEMPT: int(meta.get("attempt", 0)),
    }
    for name, value in (
        (genai.ENGINE, run.get("engine")),
        (genai.ENGINE_VERSION, run.get("engine_version")),
        (genai.LAB, run.get("lab")),
    ):
        if value:
            attributes[name] = str(value)
    if stop:
        attributes[genai.STOP_REASON] = str(stop.get("reason", ""))
    if content and meta.get("task"):
        message = {"role": "user", "parts": [{"type": "text", "content": meta["task"]}]}
        attributes[genai.INPUT_MESSAGES] = _json([message])
    if not score:
        return PlannedSpan(f"invoke_agent {scaffold}", False, start_ns, end_ns, attributes)
    passed = bool(score.get("passed"))
    verdict = "passed" if passed else str(score.get("failure_class") or "failed")
    attributes.update({genai.VERDICT: verdict, genai.PASSED: passed})
    for name, value in ((genai.STEPS, score.get("steps")), (genai.TOKENS, score.get("tokens"))):
        if isinstance(value, int):
            attributes[name] = value
    event: dict[str, AttrValue] = {
        genai.EVALUATION_NAME: genai.EVALUATION,
        genai.EVALUATION_SCORE_VALUE: 1.0 if passed else 0.0,
        genai.EVALUATION_SCORE_LABEL: verdict,
    }
    failed = _failed_checks(score.get("checks"))
    if failed:
        # names only: the checks' values quote the suite's expected answers
        event[genai.EVALUATION_EXPLANATION] = "failed checks: " + ", ".join(failed)
    # an agent crash or a dead model is an error of the operation; a wrong answer is not
    error = verdict if verdict in ("agent_error", "infra_error") else None
    if error:
        attributes[genai.ERROR_TYPE] = error
    events = (PlannedEvent(genai.EVALUATION_EVENT, end_ns, event),)
    return PlannedSpan(
        f"invoke_agent {scaffold}", False, start_ns, end_ns, attributes, error, events
    )


def _chat_span(
    record: Mapping[str, Any], provider: str, content: bool, start_ns: int, end_ns: int
) -> PlannedSpan:
    model = str(record.get("model") or "unknown")
    calls = [str(name) for name in record.get("tool_calls") or ()]
    attributes: dict[str, AttrValue] = {
        genai.OPERATION_NAME: genai.OP_CHAT,
        genai.PROVIDER_NAME: provider,
        genai.REQUEST_MODEL: model,
        genai.RESPONSE_MODEL: model,
        genai.USAGE_INPUT_TOKENS: int(_number(record.get("prompt_tokens"), 0)),
        genai.USAGE_OUTPUT_TOKENS: int(_number(record.get("completion_tokens"), 0)),
        genai.ROLE: str(record.get("role") or ""),
    }
    if calls:
        attributes[genai.TOOL_CALLS] = calls
    if content:
        parts: list[dict[str, Any]] = [{"type": "text", "content": record.get("content") or ""}]
        parts += [{"type": "tool_call", "name": name} for name in calls]
        attributes[genai.OUTPUT_MESSAGES] = _json([{"role": "assistant", "parts": parts}])
    return PlannedSpan(f"chat {model}", True, start_ns, end_ns, attributes)


def _tool_span(record: Mapping[str, Any], content: bool, start_ns: int, end_ns: int) -> PlannedSpan:
    tool = str(record.get("tool") or "unknown")
    attributes: dict[str, AttrValue] = {
        genai.OPERATION_NAME: genai.OP_EXECUTE_TOOL,
        genai.TOOL_NAME: tool,
        genai.TOOL_TYPE: "function",
        genai.TOOL_CALL_ARGUMENTS: _json(record.get("args") or {}),
    }
    error = genai.TOOL_ERROR if record.get("error") else None
    if error:
        attributes[genai.ERROR_TYPE] = error
    if content:
        attributes[genai.TOOL_CALL_RESULT] = _json(record.get("result") or "")
    return PlannedSpan(f"execute_tool {tool}", False, start_ns, end_ns, attributes, error)


def _route_span(record: Mapping[str, Any], at_ns: int) -> PlannedSpan:
    attributes: dict[str, AttrValue] = {
        genai.ROUTE: str(record.get("route") or ""),
        genai.ROUTE_REASON: str(record.get("reason") or ""),
    }
    return PlannedSpan(genai.ROUTE_SPAN, False, at_ns, at_ns, attributes)


def _start_ns(value: Any, source: str) -> int:
    try:
        started = datetime.fromisoformat(str(value))
    except ValueError:
        raise ResultsError(
            f"trajectory {source}: meta.started {value!r} is not an ISO-8601 time"
        ) from None
    if started.tzinfo is None:
        started = started.replace(tzinfo=UTC)
    # integer arithmetic: a float of epoch nanoseconds would lose the microseconds
    return (started - EPOCH) // timedelta(microseconds=1) * 1000


def _number(value: Any, default: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    return float(value)


def _failed_checks(checks: Any) -> list[str]:
    if not isinstance(checks, Mapping):
        return []
    failed = []
    for name, value in checks.items():
        if name in ("passed", "tools_used"):
            continue
        if value is False or (isinstance(value, list) and value):
            failed.append(str(name))
    return failed


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
