"""A smolagents ToolCallingAgent as an agent-eval entry point, on our endpoint and tools.

    agent-eval run --agent examples/frameworks/smolagents_agent.py --base-url ... --model ...

smolagents runs its own ReAct loop. This file gives it agent-eval's tools, streams the
run so our step, token and time budgets can stop it, and maps the framework's own run
record to our trajectory records:

- each ``ActionStep`` is a model record, with its ``token_usage`` and tool calls;
- each ``ToolCall`` with its ``ToolOutput`` is a tool record; a tool error is raised
  inside the tool, which smolagents records as the step's ``error`` and shows to the
  model, and is mapped to ``error: true``;
- smolagents answers through a ``final_answer`` tool call. That call is the answer, not
  a tool use, so it gets no tool record and steps count as for ``builtin:minimal``. A
  plain reply without a tool call is taken as the final answer too, as our own agents
  take it, so one scripted model serves every agent;
- the stop record says ``finished``, ``turn_limit`` when smolagents ran out of steps, or
  why the run was stopped.

Needs the ``frameworks`` extra: ``pip install 'smolagents[openai]'``.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from framework_common import SYSTEM, Attempt, Stop, model_record, tool_record

# smolagents ships no type information; these names are Any to a type checker.
from smolagents import OpenAIServerModel, Tool, ToolCallingAgent  # type: ignore[import-untyped]
from smolagents.agents import ToolOutput  # type: ignore[import-untyped]
from smolagents.memory import ActionStep, FinalAnswerStep, ToolCall  # type: ignore[import-untyped]
from smolagents.models import (  # type: ignore[import-untyped]
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
)
from smolagents.monitoring import LogLevel  # type: ignore[import-untyped]
from smolagents.utils import AgentGenerationError, AgentMaxStepsError  # type: ignore[import-untyped]

SCAFFOLD_NAME = "smolagents"
"""The agent's name in reports and trajectory file names."""
FINAL = "final_answer"


class ToolFailed(Exception):
    """A tool's error observation, raised so that smolagents records it as an error."""


class PlainAnswerModel(OpenAIServerModel):  # type: ignore[misc]
    """An OpenAI-compatible model whose plain reply counts as the final answer."""

    def parse_tool_calls(self, message: ChatMessage) -> ChatMessage:
        """Read a tool call from the text; failing that, the text is the answer."""
        try:
            return super().parse_tool_calls(message)
        except Exception:
            answer = ChatMessageToolCallFunction(name=FINAL, arguments={"answer": message.content})
            message.tool_calls = [ChatMessageToolCall(function=answer, id="plain", type="function")]
            return message


def _tool(attempt: Attempt, spec: dict[str, Any]) -> Tool:
    properties = spec["parameters"].get("properties", {})

    class AgentEvalTool(Tool):  # type: ignore[misc]
        name = spec["name"]
        description = spec["description"]
        inputs: ClassVar[dict[str, dict[str, str]]] = {
            key: {
                "type": schema.get("type", "string"),
                "description": schema.get("description", key),
            }
            for key, schema in properties.items()
        }
        output_type = "string"
        skip_forward_signature_validation = True

        def forward(self, **args: Any) -> str:
            seen = attempt.use(self.name, args)
            if seen.error:
                raise ToolFailed(seen.result)
            return seen.result

    return AgentEvalTool()


def run_task(task: str, options: dict[str, Any]) -> dict[str, Any]:
    """Run one attempt with a smolagents ToolCallingAgent and return our result dict."""
    attempt = Attempt.from_options(options)
    cfg = attempt.config
    model = PlainAnswerModel(
        cfg.model,
        api_base=cfg.base_url,
        api_key=cfg.api_key or "not-needed",
        client_kwargs={"timeout": cfg.timeout, "max_retries": 0},
    )
    agent = ToolCallingAgent(
        tools=[_tool(attempt, spec) for spec in attempt.tools()],
        model=model,
        instructions=SYSTEM,
        max_steps=cfg.max_steps,
        verbosity_level=LogLevel.OFF,  # stdout belongs to the harness, not the framework
    )
    records: list[dict[str, Any]] = []
    answer, reason, detail = "", "finished", ""
    pending: list[tuple[ToolCall, float]] = []
    outputs: dict[str, tuple[ToolOutput, float]] = {}
    mark = time.monotonic()
    try:
        for event in agent.run(task, stream=True):
            now = time.monotonic()
            if isinstance(event, ToolCall):
                pending.append((event, now))
            elif isinstance(event, ToolOutput):
                outputs[event.id] = (event, now)
            elif isinstance(event, ActionStep):
                records += _map_step(event, pending, outputs, mark, now)
                pending, outputs, mark = [], {}, now
                if isinstance(event.error, AgentMaxStepsError):
                    reason, detail = "turn_limit", str(event.error)
                elif not event.is_final_answer:
                    attempt.check(records)
            elif isinstance(event, FinalAnswerStep):
                answer = "" if event.output is None else str(event.output)
    except Stop as stop:
        reason, detail = stop.reason, stop.detail
    except AgentGenerationError as exc:
        reason, detail = "model_error", str(exc).splitlines()[-1]
    except Exception as exc:  # the framework's own failure is this attempt's agent_error
        reason, detail = "agent_error", f"{type(exc).__name__}: {exc}"
    return attempt.result(answer, records, reason, detail)


def _map_step(
    step: ActionStep,
    calls: list[tuple[ToolCall, float]],
    outputs: dict[str, tuple[ToolOutput, float]],
    began: float,
    ended: float,
) -> list[dict[str, Any]]:
    """One smolagents step: its model reply, then one record per tool call it made."""
    usage = step.token_usage
    message = step.model_output_message
    asked = [c.function.name for c in (message.tool_calls or [])] if message else []
    first = calls[0][1] if calls else ended
    content = step.model_output if isinstance(step.model_output, str) else None
    records = [
        model_record(
            _model_name(message),
            [name for name in asked if name != FINAL],
            usage.input_tokens if usage else 0,
            usage.output_tokens if usage else 0,
            first - began,
            content or str(step.action_output or ""),
        )
    ]
    for call, called in calls:
        if call.name == FINAL:
            continue
        args = call.arguments if isinstance(call.arguments, dict) else {"input": call.arguments}
        if call.id in outputs:
            output, done = outputs[call.id]
            records.append(tool_record(call.name, args, False, output.observation, done - called))
        else:
            # smolagents records a failed call as the step's error, without an output.
            error = str(step.error) if step.error else "the tool call did not complete"
            records.append(tool_record(call.name, args, True, error, ended - called))
    return records


def _model_name(message: ChatMessage | None) -> str:
    """The model that answered, as the endpoint named it."""
    raw = getattr(message, "raw", None)
    return str(getattr(raw, "model", "") or "")
