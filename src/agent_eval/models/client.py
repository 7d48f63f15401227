"""A small synchronous client for OpenAI-compatible chat and text completions.

It does one thing: send a request and return the reply with its token usage, or
raise an error that says whose fault the failure is. Infrastructure failures (down,
slow, rate-limited, 5xx, garbled) are ``ModelEndpointError`` so the harness can count
them as infra errors, never as wrong answers. A 4xx other than 429 is a configuration
mistake (wrong key, model or URL) and is a ``ConfigError`` that says how to fix it.
"""

from __future__ import annotations

import email.utils
import json
import os
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any

from agent_eval.errors import ConfigError, ModelEndpointError
from agent_eval.models.http import (
    EndpointTimeout,
    EndpointUnreachable,
    HttpReply,
    Pool,
    open_pool,
)


@dataclass(frozen=True)
class ToolCall:
    """One native tool call requested by the model."""

    id: str
    """The call id the tool result must quote back."""
    name: str
    """The tool's name."""
    arguments: dict[str, Any]
    """Parsed arguments; empty when ``raw_arguments`` is not a JSON object."""
    raw_arguments: str
    """The arguments exactly as sent, so a malformed call can be shown to the model."""


@dataclass(frozen=True)
class ChatReply:
    """One assistant reply with the usage and timing the harness measures."""

    content: str | None
    """The text of the reply, if any."""
    tool_calls: list[ToolCall]
    """Native tool calls, in order; empty for a plain answer."""
    prompt_tokens: int
    """Input tokens reported by the endpoint (0 when it reports none)."""
    completion_tokens: int
    """Output tokens reported by the endpoint (0 when it reports none)."""
    seconds: float
    """Wall time of the request."""
    finish_reason: str | None
    """Why generation stopped, as the endpoint says (stop, tool_calls, length...)."""
    model: str
    """The model that answered, as the endpoint names it."""


_LIVE: weakref.WeakSet[ChatClient] = weakref.WeakSet()
"""Every client of this process, so that a fork renews their pools as it starts: a copy
of a built worker made ahead of its attempt does it while it waits, not during it."""


def _renew_pools() -> None:
    for client in list(_LIVE):
        client._lock = threading.Lock()  # one another thread held at the fork stays held
        client._renew()


os.register_at_fork(after_in_child=_renew_pools)

_FIXES = {
    401: "check --api-key (or OPENAI_API_KEY)",
    403: "check that the API key may use this model",
    404: "check --base-url (it usually ends in /v1) and --model (GET /v1/models lists them)",
}


class ChatClient:
    """A thread-safe chat-completions client for one endpoint; the key is sent, never shown."""

    def __init__(self, base_url: str, api_key: str | None = None, timeout: float = 120.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # Kept only to scrub it from error text an endpoint might echo back.
        self._secret = api_key or None
        self._pool = open_pool(self.base_url, self._headers, timeout)
        self._pid = os.getpid()
        self._lock = threading.Lock()
        _LIVE.add(self)

    def _renew(self) -> None:
        """In a fork: this process's own pool (see _session)."""
        self._pool, self._pid = self._pool.renewed(), os.getpid()

    def _session(self) -> Pool:
        """This process's connections. A fork (an attempt's copy of a built worker) opens
        its own rather than use the parent's sockets: on a shared socket, a copy killed
        mid-request leaves its reply to be read by the next copy as the answer to its own
        request. A fork made by os.fork renewed it as it started (_renew_pools); this
        check covers one that ran no Python fork hooks."""
        if self._pid != os.getpid():
            with self._lock:
                if self._pid != os.getpid():
                    self._renew()
        return self._pool

    def __repr__(self) -> str:
        return f"ChatClient(base_url={self.base_url!r}, timeout={self.timeout})"

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the connection pool."""
        self._pool.close()

    @property
    def is_closed(self) -> bool:
        """True once :meth:`close` has run; a closed client sends nothing."""
        return self._pool.is_closed

    def chat(
        self,
        model: str,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> ChatReply:
        """Send one chat request and return the reply; raise on any failure."""
        response, seconds = self._post(
            "/chat/completions",
            model=model,
            messages=messages,
            tools=tools,
            response_format=response_format,
            temperature=temperature,
            max_tokens=max_tokens,
            seed=seed,
        )
        return self._parse(response, model, seconds)

    def complete(
        self,
        model: str,
        prompt: str,
        *,
        stop: list[str] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> ChatReply:
        """Send one plain text completion (``/completions``): the model continues ``prompt``.

        Base models without a chat template read a document better than a chat turn.
        """
        response, seconds = self._post(
            "/completions",
            model=model,
            prompt=prompt,
            stop=stop,
            temperature=temperature,
            max_tokens=max_tokens,
            seed=seed,
        )
        return self._parse_text(response, model, seconds)

    def health(self) -> dict[str, Any]:
        """The server's ``/health`` self-description, or ``{}`` when it gives none.

        Only agent-eval's own servers describe the model there; any other server's
        silence is not an error.
        """
        root = self.base_url.removesuffix("/v1")
        try:
            response = self._session().request(
                "GET", f"{root}/health", timeout=min(self.timeout, 10.0)
            )
            data = response.json() if response.status_code == 200 else {}
        except (EndpointTimeout, EndpointUnreachable, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def advised_tool_mode(self, model: str) -> str | None:
        """The tool mode the endpoint's ``/v1/models`` entry for ``model`` advises
        (``native`` or ``json``), or None when it advises none, as most servers do.

        The embedded server advises ``json`` for a model too small for native tool calls.
        """
        try:
            response = self._session().request(
                "GET", f"{self.base_url}/models", timeout=min(self.timeout, 10.0)
            )
            data = response.json() if response.status_code == 200 else {}
        except (EndpointTimeout, EndpointUnreachable, ValueError):
            return None
        entries = data.get("data") if isinstance(data, dict) else None
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict) and entry.get("id") == model:
                mode = entry.get("tool_mode")
                return mode if mode in ("native", "json") else None
        return None

    def listed_models(self, timeout: float = 5.0) -> list[str] | None:
        """The model ids ``GET /models`` lists, or None when the endpoint lists none (no
        such route, an empty list, or a reply that is not a list of models).

        Raises ModelEndpointError when nothing answers at all, and ConfigError when the
        endpoint refuses the key (HTTP 401 or 403), with the server's own message.
        """
        url = f"{self.base_url}/models"
        try:
            response = self._session().request("GET", url, timeout=min(self.timeout, timeout))
        except EndpointTimeout:
            raise ModelEndpointError(
                f"model endpoint {self.base_url} did not answer within {timeout:g}s", "timeout"
            ) from None
        except EndpointUnreachable as exc:
            raise ModelEndpointError(
                f"cannot reach model endpoint {self.base_url} ({self._scrub(str(exc))})",
                "connection",
            ) from None
        if response.status_code in (401, 403):
            self._raise_for_status(response)
        if response.status_code != 200:
            return None
        try:
            data = response.json().get("data")
            listed = [str(entry["id"]) for entry in data]
        except (ValueError, AttributeError, KeyError, TypeError):
            return None
        return listed or None

    def _post(self, path: str, **fields: Any) -> tuple[HttpReply, float]:
        """POST the fields that are set (None means "the server's default") as JSON."""
        body = {k: v for k, v in fields.items() if v is not None}
        url = f"{self.base_url}{path}"
        started = time.perf_counter()
        try:
            response = self._session().request("POST", url, body)
        except EndpointTimeout:
            raise ModelEndpointError(
                f"model endpoint {self.base_url} did not answer within {self.timeout:g}s",
                "timeout",
            ) from None
        except EndpointUnreachable as exc:
            raise ModelEndpointError(
                f"cannot reach model endpoint {self.base_url} ({self._scrub(str(exc))}); "
                "is the server running?",
                "connection",
            ) from None
        seconds = time.perf_counter() - started
        self._raise_for_status(response)
        return response, seconds

    def _raise_for_status(self, response: HttpReply) -> None:
        status = response.status_code
        if status < 400:
            return
        detail = self._scrub(_error_text(response))
        where = f"model endpoint {self.base_url}"
        if status == 429:
            raise ModelEndpointError(
                f"{where} is rate-limiting requests (HTTP 429): {detail}",
                "rate_limit",
                _retry_after(response.headers.get("retry-after")),
            )
        if status >= 500:
            raise ModelEndpointError(f"{where} failed (HTTP {status}): {detail}", "server")
        fix = _FIXES.get(status, "check --model, --base-url and --option tool_mode=json")
        raise ConfigError(f"{where} refused the request (HTTP {status}): {detail}; {fix}")

    def _parse(self, response: HttpReply, model: str, seconds: float) -> ChatReply:
        where = f"model endpoint {self.base_url}"
        try:
            data = response.json()
            choice = data["choices"][0]
            message = choice["message"]
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, IndexError, TypeError):
            snippet = self._scrub(response.text[:200])
            raise ModelEndpointError(
                f"{where} sent a reply that is not a chat completion: {snippet!r}", "bad_reply"
            ) from None
        if not isinstance(message, dict):
            raise ModelEndpointError(f"{where} sent a choice without a message", "bad_reply")
        usage = data.get("usage") or {}
        content = message.get("content")
        return ChatReply(
            content=content if isinstance(content, str) else None,
            tool_calls=[_tool_call(i, c) for i, c in enumerate(message.get("tool_calls") or [])],
            prompt_tokens=_count(usage.get("prompt_tokens")),
            completion_tokens=_count(usage.get("completion_tokens")),
            seconds=seconds,
            finish_reason=choice.get("finish_reason"),
            model=str(data.get("model") or model),
        )

    def _parse_text(self, response: HttpReply, model: str, seconds: float) -> ChatReply:
        try:
            data = response.json()
            choice = data["choices"][0]
            text = choice["text"]
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, IndexError, TypeError):
            snippet = self._scrub(response.text[:200])
            raise ModelEndpointError(
                f"model endpoint {self.base_url} sent a reply that is not a text completion: "
                f"{snippet!r}",
                "bad_reply",
            ) from None
        usage = data.get("usage") or {}
        return ChatReply(
            content=text if isinstance(text, str) else None,
            tool_calls=[],
            prompt_tokens=_count(usage.get("prompt_tokens")),
            completion_tokens=_count(usage.get("completion_tokens")),
            seconds=seconds,
            finish_reason=choice.get("finish_reason"),
            model=str(data.get("model") or model),
        )

    def _scrub(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret else text


def _tool_call(index: int, raw: Any) -> ToolCall:
    function = raw.get("function", {}) if isinstance(raw, dict) else {}
    arguments = function.get("arguments", "")
    if isinstance(arguments, dict):
        # Some servers send an object where the API says a JSON string.
        parsed: Any = arguments
        arguments = json.dumps(arguments)
    else:
        try:
            parsed = json.loads(arguments) if arguments else {}
        except (json.JSONDecodeError, TypeError):
            parsed = None
    return ToolCall(
        id=str(raw.get("id") or f"call_{index}") if isinstance(raw, dict) else f"call_{index}",
        name=str(function.get("name", "")),
        arguments=parsed if isinstance(parsed, dict) else {},
        raw_arguments=str(arguments),
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def _error_text(response: HttpReply) -> str:
    try:
        data = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return response.text[:200] or response.reason_phrase
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and "message" in error:
        return str(error["message"])[:300]
    return json.dumps(data)[:300]


def _retry_after(value: str | None) -> float | None:
    """Parse Retry-After as seconds or an HTTP date; None when absent or garbled."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
