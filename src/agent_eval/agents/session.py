"""What every reference agent shares for one attempt: options, budgets and the trajectory.

A ``Session`` is the single place where a model call or a tool call is counted against
the attempt's limits and written as a trajectory record, so the agents themselves only
decide what to ask next.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from agent_eval.agents import prompts
from agent_eval.agents.citing import Sources
from agent_eval.agents.config import AgentConfig
from agent_eval.agents.echo import echoed_words
from agent_eval.errors import ConfigError, ModelEndpointError
from agent_eval.models import ChatClient, ChatReply
from agent_eval.score import attempt_cost
from agent_eval.tools import Observation, ToolContext, run_tool
from agent_eval.trace import from_openai
from agent_eval.trajectory import ModelRecord, Record, StopRecord, ToolRecord

RECORD_CHARS = 2000
"""How much model content or tool result a trajectory record keeps."""


class Stop(Exception):
    """Raised inside an agent to end the attempt with a stop reason."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class Session:
    """One attempt's counters, budgets and trajectory."""

    def __init__(self, config: AgentConfig, client: ChatClient, *, per_role: bool = False) -> None:
        self.config = config
        self.client = client
        self.context = ToolContext(config.workspace, config.index)
        self.per_role = per_role
        self.steps = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.roles: dict[str, int] = {}
        self.trajectory: list[Record] = []
        self.sources = Sources()
        """What searches and reads showed, so the answer can cite the lines it rests on."""
        self.notes: list[str] = []
        """Remarks for the stop record's detail (a fallback taken, a role skipped)."""
        self.instructions: dict[str, None] = dict.fromkeys((prompts.FINAL_TURN, prompts.BAD_ACTION))
        """Every instruction text sent to a model, so an answer that copies them is caught."""
        self._started = time.monotonic()
        self._sent: dict[str, list[dict[str, Any]]] = {}
        """The messages each role sent last, so a record keeps only what is new."""

    @property
    def tokens(self) -> int:
        """Tokens used so far."""
        return self.prompt_tokens + self.completion_tokens

    @property
    def cost(self) -> float | None:
        """Cost so far at the user's prices; None when none was given."""
        return attempt_cost(self.tokens, self.prompt_tokens, self.completion_tokens,
                            self.config.prices)  # fmt: skip

    @property
    def steps_left(self) -> int:
        """Steps still allowed."""
        return self.config.max_steps - self.steps

    def check_budget(self, steps_needed: int = 1) -> None:
        """Raise Stop when the next ``steps_needed`` steps would break a limit."""
        cfg = self.config
        if self.steps + steps_needed > cfg.max_steps:
            raise Stop("turn_limit", f"{self.steps} of {cfg.max_steps} steps used")
        if cfg.max_tokens is not None and self.tokens >= cfg.max_tokens:
            raise Stop("token_budget", f"{self.tokens} of {cfg.max_tokens} tokens used")
        cost = self.cost
        if cfg.max_cost is not None and cost is not None and cost >= cfg.max_cost:
            raise Stop("cost_budget", f"{cost:.6g} of {cfg.max_cost:g} cost used")
        elapsed = time.monotonic() - self._started
        if cfg.max_seconds is not None and elapsed >= cfg.max_seconds:
            raise Stop("time_budget", f"{elapsed:.1f} of {cfg.max_seconds:g} seconds used")

    def ask(
        self,
        role: str,
        model: str,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        requested: Callable[[ChatReply], list[str]] | None = None,
        complete: Callable[[ChatReply], bool] | None = None,
    ) -> ChatReply:
        """Call the model within budget, count the step and tokens, and record the reply.

        A reply the endpoint cut at its token limit (``finish_reason`` "length") ends the
        attempt with the stop reason ``reply_cut``, unless ``complete`` says that what came
        back is still whole (a JSON object the grammar closed on the last token).
        """
        self.check_budget()
        self.instructions.update(
            (str(m["content"]), None) for m in messages if m.get("role") == "system"
        )
        reply = self.client.chat(
            model,
            messages,
            tools=tools,
            response_format=response_format,
            temperature=self.config.temperature,
            max_tokens=self.config.reply_cap(role),
            seed=self.config.seed,
        )
        names = requested(reply) if requested else [c.name for c in reply.tool_calls]
        self._record(role, messages, reply, names)
        if reply.finish_reason == "length" and not (complete is not None and complete(reply)):
            raise self._cut(role, reply)
        return reply

    def complete(
        self,
        role: str,
        model: str,
        prompt: str,
        *,
        instructions: str,
        stop: list[str] | None = None,
    ) -> ChatReply:
        """Like ``ask``, but as a plain text completion of ``prompt`` (for base models), whose
        ``instructions`` part an answer must not copy; a reply cut at the reply limit ends
        the attempt with ``reply_cut`` too."""
        self.check_budget()
        self.instructions[instructions] = None
        reply = self.client.complete(
            model,
            prompt,
            stop=stop,
            temperature=self.config.temperature,
            max_tokens=self.config.reply_cap(role),
            seed=self.config.seed,
        )
        self._record(role, [{"role": "user", "content": prompt}], reply, [])
        if reply.finish_reason == "length":
            raise self._cut(role, reply)
        return reply

    def _cut(self, role: str, reply: ChatReply) -> Stop:
        return Stop(
            "reply_cut",
            f"the {role}'s reply was cut at the {self.config.reply_cap(role)}-token reply "
            f"limit (finish_reason length) before it was complete: "
            f"{(reply.content or '')[-120:]!r}; raise --option reply_tokens=N, or use a "
            "model that keeps to shorter replies",
        )

    def _record(
        self, role: str, messages: list[dict[str, Any]], reply: ChatReply, names: list[str]
    ) -> None:
        used = reply.prompt_tokens + reply.completion_tokens
        self.steps += 1
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        self.roles[role] = self.roles.get(role, 0) + used
        kept = _shared_prefix(self._sent.get(role, []), messages)
        self._sent[role] = list(messages)
        self.trajectory.append(
            ModelRecord(
                type="model",
                role=role,
                model=reply.model,
                tool_calls=names,
                prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens,
                seconds=round(reply.seconds, 3),
                content=(reply.content or "")[:RECORD_CHARS],
                finish_reason=reply.finish_reason,
                # the role's messages after the first `input_from` it sent last time
                input_from=kept,
                input=from_openai(messages[kept:], RECORD_CHARS),
            )
        )

    def use_tool(
        self,
        name: str,
        args: dict[str, Any],
        refusal: str | None = None,
        call_id: str | None = None,
    ) -> Observation:
        """Run one tool (or record a refusal decided by the agent), count the step, record it.
        ``call_id`` is the id of the model's request for it, which its result quotes back."""
        started = time.monotonic()
        if refusal is not None:
            seen = Observation(refusal, error=True)
        elif name not in self.config.tools:
            seen = Observation(
                f"unknown tool '{name}'; the tools are: {', '.join(self.config.tools)}", error=True
            )
        else:
            seen = run_tool(name, self.context, args)
            if not seen.error:
                self.sources.add_observation(name, args, seen.result)
        self.steps += 1
        record = ToolRecord(
            type="tool",
            tool=name,
            args=args,
            error=seen.error,
            result=seen.result[:RECORD_CHARS],
            seconds=round(time.monotonic() - started, 3),
        )
        if call_id is not None:
            record["call_id"] = call_id
        self.trajectory.append(record)
        return seen

    def run(self, body: Callable[[], str]) -> dict[str, Any]:
        """Run an agent body and return the entry-point dict, whatever way it ends."""
        answer, reason, infra = "", "finished", None
        try:
            answer = body()
            copied = echoed_words(answer, self.instructions)
            if copied:
                answer, reason = "", "echoed_instructions"
                self.notes.insert(
                    0,
                    f"the answer copied {copied} words of the agent's own instructions; "
                    "it was not submitted",
                )
        except Stop as stop:
            reason = stop.reason
            self.notes.insert(0, stop.detail)
        except ModelEndpointError as exc:
            reason = "model_error"
            self.notes.insert(0, f"{exc.kind}: {exc}")
            infra = {"kind": exc.kind, "retry_after": exc.retry_after}
        except ConfigError:
            raise  # the user's to fix, not this attempt's failure
        except Exception as exc:
            reason = "agent_error"
            self.notes.insert(0, f"{type(exc).__name__}: {exc}")
        detail = "; ".join(n for n in self.notes if n)
        self.trajectory.append(StopRecord(type="stop", reason=reason, detail=detail))
        result: dict[str, Any] = {
            "answer": answer,
            "steps": self.steps,
            "tokens": self.tokens,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "seconds": round(time.monotonic() - self._started, 3),
            "stopped": reason,
            "trajectory": self.trajectory,
        }
        if self.per_role:
            result["roles"] = dict(self.roles)
        citations = self.sources.cite(answer) if answer else []
        if citations:
            result["citations"] = citations
        if infra is not None:
            result["infra_error"] = infra
        return result


def _shared_prefix(before: list[dict[str, Any]], now: list[dict[str, Any]]) -> int:
    """How many leading messages ``now`` shares with ``before``."""
    count = 0
    for old, new in zip(before, now, strict=False):
        if old != new:
            break
        count += 1
    return count
