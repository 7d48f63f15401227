"""The reference agents' options and model connections, parsed and opened once.

``AgentConfig`` turns the entry-point options (docs/protocol.md) into checked values, and
``ClientPool`` shares one thread-safe chat client per endpoint between attempts.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agent_eval.errors import ConfigError
from agent_eval.models import ChatClient
from agent_eval.tools import READ_TOOLS, WRITE_TOOLS

DEFAULT_MAX_STEPS = 24
"""A cap for attempts that set no step limit, so a looping model still stops."""
REPLY_TOKENS = 384
"""The most tokens a reply may generate unless ``--option reply_tokens=N`` says otherwise:
room for one tool call or JSON action, or a short answer, and no more, so a small model
that rambles stops in seconds rather than minutes."""
ROLE_REPLY_TOKENS = {"router": 96, "answerer": 256, "verifier": 320}
"""Roles whose replies are shorter by design: a route and a reason; an answer; a verdict
with the answer. ``--option reply_tokens_ROLE=N`` sets one role's cap."""
ROLES = ("agent", "router", "researcher", "answerer", "verifier")
DEFAULT_TIMEOUT = 120.0
"""Seconds one model request may take unless ``--option request_timeout=S`` says otherwise."""


@dataclass(frozen=True)
class AgentConfig:
    """The options of one attempt, parsed and checked once."""

    base_url: str
    """The OpenAI-compatible endpoint."""
    api_key: str | None = field(repr=False)
    """Sent to the endpoint, never recorded (and kept out of repr and tracebacks)."""
    model: str
    """The model of every role but the router."""
    router_model: str
    """The router's model; the main model when none is given."""
    tool_mode: str
    """``native`` (OpenAI tool calls) or ``json`` (one JSON action per turn); without a
    ``tool_mode`` option, what the endpoint advises for the model (ClientPool.config)."""
    workspace: Path
    """The attempt's fresh workspace."""
    index: Path | None
    """A saved search index, if given."""
    tools: tuple[str, ...]
    """The tools this attempt may use."""
    max_steps: int
    """Steps allowed: model replies plus tool results."""
    max_tokens: int | None
    """Tokens allowed, prompt and completion."""
    max_seconds: float | None
    """Seconds allowed."""
    max_cost: float | None
    """Cost allowed at ``prices``; checked before every model call."""
    prices: dict[str, float | None]
    """The user's prices per million tokens, when the harness was given any."""
    temperature: float | None
    """Sampling temperature; the server's default when None."""
    reply_tokens: int
    """The most tokens one reply may generate (``--option reply_tokens=N``)."""
    role_reply_tokens: dict[str, int]
    """Caps of roles that differ from ``reply_tokens``."""
    timeout: float
    """Seconds one model request may take."""
    seed: int | None = None
    """The sampling seed sent with every model request of this attempt (see attempt_seed)."""

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> AgentConfig:
        """Parse the entry-point options; a bad value is a ConfigError naming the option."""
        limits = options.get("limits") or {}
        mode = str(options.get("tool_mode", "native"))
        if mode not in ("native", "json"):
            raise ConfigError(f"option tool_mode={mode!r}: use tool_mode=native or tool_mode=json")
        for key in ("base_url", "model", "workspace"):
            if not options.get(key):
                raise ConfigError(f"the reference agents need the option '{key}'")
        extra = tuple(str(t) for t in options.get("tools") or ())
        unknown = [t for t in extra if t not in (*READ_TOOLS, *WRITE_TOOLS)]
        if unknown:
            known = ", ".join((*READ_TOOLS, *WRITE_TOOLS))
            raise ConfigError(f"option tools: unknown tool(s) {', '.join(unknown)}; known: {known}")
        index = options.get("index")
        model = str(options["model"])
        return cls(
            base_url=str(options["base_url"]),
            api_key=options.get("api_key") or None,
            model=model,
            router_model=str(options.get("router_model") or model),
            tool_mode=mode,
            workspace=Path(str(options["workspace"])),
            index=Path(str(index)) if index else None,
            tools=tuple(dict.fromkeys((*READ_TOOLS, *extra))),
            max_steps=int(limits.get("max_steps") or DEFAULT_MAX_STEPS),
            max_tokens=_number(options, limits, "max_tokens", int),
            max_seconds=_number(options, limits, "max_seconds", float),
            max_cost=_number(options, limits, "max_cost", float),
            prices=_prices(options.get("prices")),
            temperature=_number(options, {}, "temperature", float),
            reply_tokens=_reply_cap(options, "reply_tokens") or REPLY_TOKENS,
            role_reply_tokens=_role_caps(options),
            timeout=_number(options, {}, "request_timeout", float) or DEFAULT_TIMEOUT,
            seed=attempt_seed(
                _number(options, {}, "seed", int), options.get("task_id"), options.get("attempt")
            ),
        )

    def reply_cap(self, role: str) -> int:
        """The most tokens one reply of ``role`` may generate."""
        return self.role_reply_tokens.get(role, self.reply_tokens)


def _role_caps(options: dict[str, Any]) -> dict[str, int]:
    """Per-role caps: the defaults unless reply_tokens is given, then reply_tokens_ROLE."""
    caps = {} if _reply_cap(options, "reply_tokens") else dict(ROLE_REPLY_TOKENS)
    for role in ROLES:
        own = _reply_cap(options, f"reply_tokens_{role}")
        if own:
            caps[role] = own
    return caps


def _reply_cap(options: dict[str, Any], key: str) -> int | None:
    value: int | None = _number(options, {}, key, int)
    if value is not None and value < 1:
        raise ConfigError(f"option {key}={value}: give 1 or more tokens per reply")
    return value


def attempt_seed(seed: int | None, task_id: Any, attempt: Any) -> int | None:
    """The model's sampling seed for one attempt, from the run's ``--seed``, task and attempt.

    Each attempt gets its own seed, so sampled repeats of one task can differ, and the same
    run seed gives the same seeds again, so a run can be reproduced. Without a run seed the
    server picks (None). 31 bits: servers that read the seed as a signed int accept it.
    """
    if seed is None:
        return None
    digest = hashlib.sha256(f"{seed}/{task_id}/{attempt}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def _number(options: dict[str, Any], limits: dict[str, Any], key: str, kind: type[Any]) -> Any:
    value = limits.get(key) if key in limits else options.get(key)
    if value is None or value == "":
        return None
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise ConfigError(f"option {key}={value!r}: expected a number") from None


def _prices(value: Any) -> dict[str, float | None]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"option prices={value!r}: expected per_million or input/output prices")
    try:
        return {str(k): None if v is None else float(v) for k, v in value.items()}
    except (TypeError, ValueError):
        raise ConfigError(f"option prices={value!r}: expected numbers") from None


TOOL_MODE_AGENTS = ("agent_eval.agents.minimal", "agent_eval.agents.multi_agent")
"""The modules of the reference agents that take a tool mode (retrieve-read calls no tool)."""


def tool_mode_note(
    run_task_module: str | None,
    options: dict[str, Any],
    base_url: str,
    api_key: str | None,
    model: str,
) -> str | None:
    """The run header's line when a reference agent (run_task defined in
    ``run_task_module``) will use JSON actions because the endpoint advises them for
    ``model`` and no ``tool_mode`` option was given; else None."""
    if options.get("tool_mode") or run_task_module not in TOOL_MODE_AGENTS:
        return None
    with ChatClient(base_url, api_key, timeout=10.0) as client:
        if client.advised_tool_mode(model) != "json":
            return None
    return (
        f"tool mode: JSON actions, as the endpoint advises for {model} (too small for native "
        "tool calls); --option tool_mode=native overrides"
    )


class ClientPool:
    """One shared, thread-safe client per endpoint, so concurrent attempts reuse connections."""

    def __init__(self) -> None:
        self._clients: dict[tuple[str, str | None, float], ChatClient] = {}
        self._advice: dict[tuple[str, str], str | None] = {}
        """(endpoint, model) -> the tool mode its /v1/models entry advises, once asked."""
        self._lock = threading.Lock()

    def config(self, options: dict[str, Any]) -> AgentConfig:
        """The attempt's options parsed; with no ``tool_mode`` option, the tool mode the
        endpoint advises for the model (the embedded server advises ``json`` for a model
        too small for native tool calls), else ``native``."""
        config = AgentConfig.from_options(options)
        if options.get("tool_mode"):
            return config
        client = self.get(config.base_url, config.api_key, config.timeout)
        advised = self._advised(client, config.model)
        return replace(config, tool_mode=advised) if advised else config

    def _advised(self, client: ChatClient, model: str) -> str | None:
        key = (client.base_url, model)
        with self._lock:
            if key in self._advice:
                return self._advice[key]
        advised = client.advised_tool_mode(model)  # outside the lock: a request
        with self._lock:
            self._advice[key] = advised
        return advised

    def get(self, base_url: str, api_key: str | None, timeout: float) -> ChatClient:
        """Return the client for this endpoint, creating it on first use."""
        key = (base_url, api_key, timeout)
        with self._lock:
            if key not in self._clients:
                self._clients[key] = ChatClient(base_url, api_key, timeout)
            return self._clients[key]

    def warm(self, options: dict[str, Any]) -> ChatClient | None:
        """Open the client that attempts with these options will use (an entry point's build);
        None when the options name no endpoint."""
        if not options.get("base_url"):
            return None
        timeout = _number(options, {}, "request_timeout", float) or DEFAULT_TIMEOUT
        client = self.get(str(options["base_url"]), options.get("api_key") or None, timeout)
        if options.get("model") and not options.get("tool_mode"):
            self._advised(client, str(options["model"]))  # asked once, before any copy
        return client

    def close(self) -> None:
        """Close every client; a later attempt opens new ones."""
        with self._lock:
            for client in self._clients.values():
                client.close()
            self._clients.clear()
            self._advice.clear()


def warm_search(options: dict[str, Any]) -> None:
    """Index the documents once, in build(): each attempt runs in a copy of the state
    build() left, so it finds the index there instead of building its own."""
    from agent_eval.tools import load_index, workspace_index

    try:
        if options.get("index"):
            load_index(Path(str(options["index"])))
        elif options.get("workspace"):
            workspace_index(Path(str(options["workspace"])))
    except Exception:  # only an optimisation: a bad index is the search tool's to report
        return
