"""Plan one attempt's span tree from its trajectory (read by ``agent_eval.trajectory``),
without OpenTelemetry.

The plan is plain data: names, kinds, attributes and nanosecond times reconstructed
from the trajectory. Keeping it apart from the SDK lets the mapping be read and tested
on its own, and keeps the otel extra optional for everything but the export itself.

Times: records carry durations (``seconds``), not clock times, so each span starts where
the previous one ended, counted from the meta line's ``started``. A record that carries
``t`` (seconds from ``started`` to the record's start) is placed there instead.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from agent_eval.errors import ResultsError
from agent_eval.trace import genai, messages
from agent_eval.trajectory import Trajectory

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
    """One span to create: what it is, when it ran, what it carries and what it holds."""

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
    children: tuple[PlannedSpan, ...] = field(default=())
    """Its child spans, in order."""
    ok: bool = False
    """True to set the status OK (a finished attempt); False leaves it unset."""


@dataclass(frozen=True)
class AttemptPlan:
    """The span tree of one attempt."""

    key: str
    """``{run_id}:{task_id}:r{attempt}``: the conversation id."""
    seed: str
    """What the trace and span ids derive from: the key and the scaffold."""
    root: PlannedSpan
    """The ``invoke_agent`` span; its children are role, model, tool and route spans."""
    score: Mapping[str, Any] = field(default_factory=dict)
    """The trajectory's score record: verdict and checks, for annotations."""

    @property
    def children(self) -> tuple[PlannedSpan, ...]:
        """The root's direct children."""
        return self.root.children


def attempt_id(seed: str, number: int, size: int) -> int:
    """The trace id (``number`` 0, 16 bytes) or the ``number``-th span id (8 bytes).

    Spans are numbered in the order they are created, the root first, so replaying an
    attempt sends the same ids and backends that upsert by id keep one trace.
    """
    text = f"trace:{seed}" if number == 0 else f"span:{seed}:{number}"
    # an all-zero id is invalid in OpenTelemetry; a hash is never zero in practice
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:size], "big") or 1


def root_span_id(plan: AttemptPlan) -> str:
    """The root span's id as 16 hex digits, as trace stores show it."""
    return f"{attempt_id(plan.seed, 1, 8):016x}"


def plan_attempt(
    trajectory: Trajectory,
    run: Mapping[str, Any] | None = None,
    content: bool = False,
    answer: str | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> AttemptPlan:
    """The span tree of one trajectory.

    ``run`` is the results file's ``run`` block (engine, lab); ``content`` adds the task,
    the messages, tool results and the answer (``answer`` when the score line has none).
    A trajectory whose model records name more than one role gets one ``invoke_agent
    {role}`` span per stretch of a role's work, holding its model and tool spans.
    ``defaults`` stand in for meta keys the file lacks.
    """
    source = trajectory.name
    if trajectory.meta is None:
        raise ResultsError(f"trajectory {source}: the first line is not a meta line")
    # ``defaults`` fill what a meta line lacks (a course trajectory has no start or run id).
    meta: Mapping[str, Any] = {**(defaults or {}), **trajectory.meta}
    origin = _start_ns(meta.get("started"), source)
    run = run or {}
    key = f"{meta.get('run_id', '')}:{meta.get('task_id', '')}:r{meta.get('attempt', 0)}"
    chat = _Chats(str(run.get("engine") or genai.DEFAULT_PROVIDER), content, meta)
    records: Sequence[Mapping[str, Any]] = trajectory.records
    steps = [r for r in records if r.get("type") in ("model", "tool", "route")]
    roles = {str(r.get("role") or "agent") for r in steps if r.get("type") == "model"}
    tree = _Tree(len(roles) > 1)
    score: Mapping[str, Any] = {}
    stop: Mapping[str, Any] = {}
    cursor = 0.0
    for index, record in enumerate(records):
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
            following = records[index + 1 :]
            tree.add(chat.span(record, following, start_ns, end_ns), record.get("role") or "agent")
        elif kind == "tool":
            tree.add(_tool_span(record, content, start_ns, end_ns), record.get("role"))
        else:
            tree.add(_route_span(record, start_ns), None)
    end_ns = origin + round(max(_number(score.get("seconds"), 0.0), cursor) * NS)
    if content and answer is not None and not score.get("answer"):
        score = {**score, "answer": answer}
    root = _root_span(meta, run, key, score, stop, content, origin, end_ns, tree.spans())
    seed = f"{key}:{meta.get('scaffold', '')}"
    return AttemptPlan(key=key, seed=seed, root=root, score=score)


class _Tree:
    """The root's children: spans in order, grouped by role when there are several."""

    def __init__(self, by_role: bool) -> None:
        self.by_role = by_role
        self.items: list[PlannedSpan | tuple[str, list[PlannedSpan]]] = []
        self.role = "agent"

    def add(self, span: PlannedSpan, role: Any) -> None:
        # a tool call belongs to the role whose model call asked for it
        if span.attributes.get(genai.OPERATION_NAME) == genai.OP_CHAT or role:
            self.role = str(role or self.role)
        if not self.by_role or span.name == genai.ROUTE_SPAN:
            self.items.append(span)
            return
        last = self.items[-1] if self.items else None
        if isinstance(last, tuple) and last[0] == self.role:
            last[1].append(span)
        else:
            self.items.append((self.role, [span]))

    def spans(self) -> tuple[PlannedSpan, ...]:
        return tuple(i if isinstance(i, PlannedSpan) else _role_span(*i) for i in self.items)


def _role_span(role: str, spans: list[PlannedSpan]) -> PlannedSpan:
    chats = [s.attributes for s in spans if s.client]
    attributes: dict[str, AttrValue] = {
        genai.OPERATION_NAME: genai.OP_INVOKE_AGENT,
        genai.AGENT_NAME: role,
        genai.ROLE: role,
        genai.SPAN_KIND: genai.KIND_AGENT,
    }
    for key in (genai.USAGE_INPUT_TOKENS, genai.USAGE_OUTPUT_TOKENS):
        attributes[key] = sum(int(_number(a.get(key), 0)) for a in chats)
    start, end = min(s.start_ns for s in spans), max(s.end_ns for s in spans)
    return PlannedSpan(f"invoke_agent {role}", False, start, end, attributes,
                       children=tuple(spans))  # fmt: skip


def _root_span(
    meta: Mapping[str, Any],
    run: Mapping[str, Any],
    key: str,
    score: Mapping[str, Any],
    stop: Mapping[str, Any],
    content: bool,
    start_ns: int,
    end_ns: int,
    children: tuple[PlannedSpan, ...],
) -> PlannedSpan:
    scaffold = str(meta.get("scaffold", "agent"))
    name = f"invoke_agent {scaffold}"
    attributes: dict[str, AttrValue] = {
        genai.OPERATION_NAME: genai.OP_INVOKE_AGENT,
        genai.SPAN_KIND: genai.KIND_AGENT,
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
    for key_name, value in (
        (genai.ENGINE, run.get("engine")),
        (genai.ENGINE_VERSION, run.get("engine_version")),
        (genai.LAB, run.get("lab")),
    ):
        if value:
            attributes[key_name] = str(value)
    if stop:
        attributes[genai.STOP_REASON] = str(stop.get("reason", ""))
    if content and meta.get("task"):
        task = str(meta["task"])
        attributes[genai.INPUT_MESSAGES] = _json([messages.user_text(task)])
        attributes.update({genai.INPUT_VALUE: task, genai.INPUT_MIME: genai.TEXT})
    if content and isinstance(score.get("answer"), str):
        answer = score["answer"]
        reply = messages.output_message(answer, [], "stop")
        attributes[genai.OUTPUT_MESSAGES] = _json([reply])
        attributes.update({genai.OUTPUT_VALUE: answer, genai.OUTPUT_MIME: genai.TEXT})
    if not score:
        return PlannedSpan(name, False, start_ns, end_ns, attributes, children=children)
    passed = bool(score.get("passed"))
    verdict = verdict_of(score)
    attributes.update({genai.VERDICT: verdict, genai.PASSED: passed})
    for key_name, value in (
        (genai.STEPS, score.get("steps")),
        (genai.TOKENS, score.get("tokens")),
    ):
        if isinstance(value, int):
            attributes[key_name] = value
    event: dict[str, AttrValue] = {
        genai.EVALUATION_NAME: genai.EVALUATION,
        genai.EVALUATION_SCORE_VALUE: 1.0 if passed else 0.0,
        genai.EVALUATION_SCORE_LABEL: verdict,
    }
    explanation = explain(score)
    if explanation:
        event[genai.EVALUATION_EXPLANATION] = explanation
    # an agent crash or a dead model is an error of the operation; a wrong answer is not
    error = None
    if verdict in ("agent_error", "infra_error"):
        attributes[genai.ERROR_TYPE] = verdict
        detail = score.get("error") or stop.get("detail") or ""
        error = f"{verdict}: {detail}"[:MAX_STATUS] if detail else verdict
    events = (PlannedEvent(genai.EVALUATION_EVENT, end_ns, event),)
    return PlannedSpan(name, False, start_ns, end_ns, attributes, error, events, children,
                       ok=error is None)  # fmt: skip


MAX_STATUS = 500
"""How much of an error's reason the root's status message keeps."""


def verdict_of(score: Mapping[str, Any]) -> str:
    """``passed``, or the failure class of an attempt that failed."""
    return "passed" if score.get("passed") else str(score.get("failure_class") or "failed")


def explain(score: Mapping[str, Any]) -> str:
    """Which checks failed, by name only: their values quote the suite's expected answers."""
    failed = [name for name, ok in check_outcomes(score.get("checks")).items() if not ok]
    return "failed checks: " + ", ".join(failed) if failed else ""


def check_outcomes(checks: Any) -> dict[str, bool]:
    """Each check's outcome: a true flag, or an empty list of misses, is a pass."""
    if not isinstance(checks, Mapping):
        return {}
    outcomes = {}
    for name, value in checks.items():
        if name in ("passed", "tools_used") or not isinstance(value, bool | list):
            continue
        outcomes[str(name)] = value is True or value == []
    return outcomes


class _Chats:
    """Builds chat spans, keeping each role's conversation to rebuild its messages."""

    def __init__(self, provider: str, content: bool, meta: Mapping[str, Any]) -> None:
        self.provider, self.content = provider, content
        self.task = str(meta.get("task") or "")
        self.history: dict[str, list[Any]] = {}

    def span(
        self,
        record: Mapping[str, Any],
        following: Sequence[Mapping[str, Any]],
        start_ns: int,
        end_ns: int,
    ) -> PlannedSpan:
        model = str(record.get("model") or "unknown")
        calls = [str(name) for name in record.get("tool_calls") or ()]
        attributes: dict[str, AttrValue] = {
            genai.OPERATION_NAME: genai.OP_CHAT,
            genai.SPAN_KIND: genai.KIND_LLM,
            genai.PROVIDER_NAME: self.provider,
            genai.REQUEST_MODEL: model,
            genai.RESPONSE_MODEL: model,
            genai.USAGE_INPUT_TOKENS: int(_number(record.get("prompt_tokens"), 0)),
            genai.USAGE_OUTPUT_TOKENS: int(_number(record.get("completion_tokens"), 0)),
            genai.ROLE: str(record.get("role") or ""),
        }
        if calls:
            attributes[genai.TOOL_CALLS] = calls
        inputs = self._inputs(record)
        if self.content:
            parts = _requested(calls, following)
            reply = messages.output_message(
                str(record.get("content") or ""), parts, record.get("finish_reason")
            )
            if inputs:  # input.value too: what a trace store shows as the span's input
                attributes[genai.INPUT_MESSAGES] = _json(inputs)
                attributes.update({genai.INPUT_VALUE: attributes[genai.INPUT_MESSAGES],
                                   genai.INPUT_MIME: genai.JSON})  # fmt: skip
            attributes[genai.OUTPUT_MESSAGES] = _json([reply])
            attributes.update({genai.OUTPUT_VALUE: str(record.get("content") or ""),
                               genai.OUTPUT_MIME: genai.TEXT})  # fmt: skip
        return PlannedSpan(f"chat {model}", True, start_ns, end_ns, attributes)

    def _inputs(self, record: Mapping[str, Any]) -> list[Any]:
        """The messages the role sent: recorded ones, else the task for its first call."""
        role = str(record.get("role") or "agent")
        sent = record.get("input")
        before = self.history.get(role)
        if isinstance(sent, list):
            kept = int(_number(record.get("input_from"), 0))
            now = (before or [])[:kept] + sent
        else:
            now = before if before is not None else [messages.user_text(self.task)]
        self.history[role] = now
        return now


def _requested(calls: list[str], following: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Tool-call parts, with the arguments and call ids of the tool records that carried
    them out."""
    pending = [r for r in _until_next_model(following) if r.get("type") == "tool"]
    parts = []
    for name in calls:
        done: Mapping[str, Any] = next((r for r in pending if r.get("tool") == name), {})
        if done:
            pending.remove(done)
        parts.append(messages.tool_call(name, done.get("args"), done.get("call_id")))
    return parts


def _until_next_model(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    taken = []
    for record in records:
        if record.get("type") == "model":
            break
        taken.append(record)
    return taken


def _tool_span(record: Mapping[str, Any], content: bool, start_ns: int, end_ns: int) -> PlannedSpan:
    tool = str(record.get("tool") or "unknown")
    arguments = _json(record.get("args") or {})
    attributes: dict[str, AttrValue] = {
        genai.OPERATION_NAME: genai.OP_EXECUTE_TOOL,
        genai.SPAN_KIND: genai.KIND_TOOL,
        genai.TOOL_NAME: tool,
        genai.TOOL_TYPE: "function",
        genai.TOOL_CALL_ARGUMENTS: arguments,
        genai.INPUT_VALUE: arguments,
        genai.INPUT_MIME: genai.JSON,
    }
    if record.get("call_id"):
        attributes[genai.TOOL_CALL_ID] = str(record["call_id"])
    if record.get("role"):
        attributes[genai.ROLE] = str(record["role"])
    error = genai.TOOL_ERROR if record.get("error") else None
    if error:
        attributes[genai.ERROR_TYPE] = error
    if content:
        result = _json(record.get("result") or "")
        attributes.update({genai.TOOL_CALL_RESULT: result, genai.OUTPUT_VALUE: result,
                           genai.OUTPUT_MIME: genai.JSON})  # fmt: skip
    return PlannedSpan(f"execute_tool {tool}", False, start_ns, end_ns, attributes, error)


def _route_span(record: Mapping[str, Any], at_ns: int) -> PlannedSpan:
    attributes: dict[str, AttrValue] = {
        genai.OPERATION_NAME: genai.ROUTE_SPAN,
        genai.SPAN_KIND: genai.KIND_CHAIN,
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


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
