"""The script format of the scripted model server, and how a request picks its reply.

A script is one JSON file::

    {
      "models": ["mock"],
      "rules": [
        {"task": "backup", "turn": 0,
         "reply": {"tool_calls": [{"name": "search_documents",
                                   "arguments": {"query": "backup window"}}]}}
      ],
      "replies": [{"content": "I could not find that."}],
      "default": {"content": "I cannot answer that."}
    }

A request's *turn* is the number of assistant messages it already carries, so parallel
conversations each see the same sequence. Rules are tried first, in order; a rule
matches when every condition it gives holds. Otherwise ``replies[turn]`` answers, then
``default``. A reply is exactly one of ``content`` (a final answer), ``json`` (an object
sent verbatim as the content), ``cut`` (text sent verbatim as a reply cut at the token
limit, ``finish_reason`` "length"), ``tool_calls`` or ``fault``, with optional ``usage``.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agent_eval.errors import ConfigError
from agent_eval.records import compiling_pattern

FaultKind = Literal["429", "500", "503", "timeout", "malformed", "no_choices"]
"""Injected failures: status codes, a held connection, a garbled body, an empty reply."""
FAULT_KINDS: tuple[str, ...] = ("429", "500", "503", "timeout", "malformed", "no_choices")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScriptedCall(_Strict):
    """One tool call the scripted model makes."""

    name: str = Field(min_length=1)
    """The tool's name."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The tool's arguments, as a JSON object."""


class Usage(_Strict):
    """Token usage to report instead of the character-based estimate."""

    prompt_tokens: int = Field(ge=0)
    """Input tokens reported for this reply."""
    completion_tokens: int = Field(ge=0)
    """Output tokens reported for this reply."""


class Reply(_Strict):
    """One scripted reply: an answer, a JSON object, tool calls, or an injected fault."""

    content: str | None = None
    """A final answer (rendered as a finish action in JSON-action mode)."""
    json_: dict[str, Any] | None = Field(default=None, alias="json")
    """An object sent verbatim as the content in every mode (router and verifier replies)."""
    cut: str | None = None
    """Text sent verbatim as the content with finish_reason "length", as a server does when
    a reply reaches max_tokens: ``{"action": "search_documents", "args": {"query": "sel``."""
    tool_calls: list[ScriptedCall] | None = Field(default=None, min_length=1)
    """Tool calls (JSON-action mode renders only the first)."""
    fault: FaultKind | None = None
    """Fail this request instead of answering."""
    usage: Usage | None = None
    """Reported usage; by default about one token per four characters."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _exactly_one_kind(self) -> Reply:
        kinds = ("content", "json_", "cut", "tool_calls", "fault")
        given = [k for k in kinds if getattr(self, k) is not None]
        if len(given) != 1:
            names = ", ".join(g.rstrip("_") for g in given) or "none"
            raise ValueError(
                f"a reply needs exactly one of content, json, cut, tool_calls, fault (got {names})"
            )
        return self


class Rule(_Strict):
    """A reply chosen by conditions on the request; every condition given must hold."""

    match: str | None = None
    """Regex searched in the last message's content."""
    task: str | None = None
    """Regex searched in the first user message's content."""
    system: str | None = None
    """Regex searched in the system message's content."""
    model: str | None = None
    """Regex searched in the requested model name."""
    turn: int | None = Field(default=None, ge=0)
    """Only at this turn (number of assistant messages already in the request)."""
    times: int | None = Field(default=None, ge=1)
    """Answer at most this many requests, then step aside: "the first two calls get a
    500" makes an intermittent fault exact."""
    reply: Reply
    """What to answer when the rule matches."""

    @field_validator("match", "task", "system", "model")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        return compiling_pattern(value)

    @model_validator(mode="after")
    def _has_condition(self) -> Rule:
        conditions = ("match", "task", "system", "model", "turn", "times")
        if all(getattr(self, k) is None for k in conditions):
            raise ValueError("a rule needs a condition: match, task, system, model, turn or times")
        return self

    def applies(self, messages: list[dict[str, Any]], model: str, turn: int) -> bool:
        """True when every condition this rule gives holds for the request."""
        if self.turn is not None and self.turn != turn:
            return False
        checks = [
            (self.match, _text(messages[-1]) if messages else ""),
            (self.task, _first(messages, "user")),
            (self.system, _first(messages, "system")),
            (self.model, model),
        ]
        return all(re.search(p, text) for p, text in checks if p is not None)


class Script(_Strict):
    """A whole script: the models it lists, its rules, its ordered replies, a fallback."""

    models: list[str] | None = Field(default=None, min_length=1)
    """Model ids listed by GET /v1/models; a request for another model is refused with
    HTTP 404 naming them, as a real server refuses it. None (no ``models``): every model
    name is answered, and the list is empty, as on a server that lists nothing."""
    rules: list[Rule] = Field(default_factory=list)
    """Tried first, in order."""
    replies: list[Reply] = Field(default_factory=list)
    """replies[turn] answers when no rule matches."""
    default: Reply | None = None
    """Answers when no rule matches and the turn is past the replies."""
    chat_template: bool | None = None
    """Reported at ``GET /health``: whether the scripted model has a chat template, so an
    agent that picks its prompt style from the server can be tested both ways."""
    tool_mode: Literal["native", "json"] | None = None
    """Reported in every ``GET /v1/models`` entry, as the embedded server advises a tool
    mode, so an agent that follows the advice can be tested both ways."""

    def choose(
        self, messages: list[dict[str, Any]], model: str, used: dict[int, int] | None = None
    ) -> tuple[int, Reply | None]:
        """Return the request's turn and its reply (None when the script has none).

        ``used`` counts how many requests each rule has answered, for rules with
        ``times``; the caller keeps it across requests (and serialises access).
        """
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        for number, rule in enumerate(self.rules):
            if rule.applies(messages, model, turn):
                if rule.times is not None:
                    if used is None or used.get(number, 0) >= rule.times:
                        continue
                    used[number] = used.get(number, 0) + 1
                return turn, rule.reply
        if turn < len(self.replies):
            return turn, self.replies[turn]
        return turn, self.default


def load_script(path: str | Path) -> Script:
    """Read and validate a script file; errors name the file, the field and the fix."""
    source = Path(path)
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"mock script {source}: cannot read it ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"mock script {source}: not valid JSON ({exc})") from None
    return parse_script(data, str(source))


def parse_script(data: Any, source: str = "script") -> Script:
    """Validate an already-parsed script; every problem is listed with its field."""
    try:
        return Script.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            where = ".".join(str(p) for p in error["loc"]) or "(top level)"
            message = error["msg"].removeprefix("Value error, ")
            if error["type"] == "extra_forbidden":
                close = difflib.get_close_matches(str(error["loc"][-1]), _KNOWN_FIELDS, n=1)
                message = "unknown field" + (f" (did you mean '{close[0]}'?)" if close else "")
            problems.append(f"{where}: {message}")
        raise ConfigError(f"mock script {source}: " + "; ".join(problems)) from None


_KNOWN_FIELDS = sorted(
    {
        (info.alias or name)
        for model in (Script, Rule, Reply, ScriptedCall, Usage)
        for name, info in model.model_fields.items()
    }
)


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # multi-part content: join the text parts
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _first(messages: list[dict[str, Any]], role: str) -> str:
    return next((_text(m) for m in messages if m.get("role") == role), "")
