"""Tell an outage of the model endpoint from an agent's own bug, for any Python agent.

An agent's HTTP client raises its own exceptions when the endpoint is down, slow or
overloaded. They are recognised by class name and module along the exception's MRO (and
its ``raise ... from`` causes), so no HTTP library is imported to check: httpx and
httpcore, requests and urllib3, the openai and anthropic SDKs, aiohttp, urllib and the
standard library's socket errors. An HTTP status error counts only for 429 and 5xx; any
other 4xx is the agent's configuration, not an outage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_CONNECTION = "connection"
_TIMEOUT = "timeout"
_STATUS = "status"
"""An HTTP status error: an outage only for 429 (rate_limit) and 5xx (server)."""

OUTAGE_CLASSES: dict[str, dict[str, str]] = {
    "builtins": {"ConnectionError": _CONNECTION, "TimeoutError": _TIMEOUT},
    "socket": {"gaierror": _CONNECTION, "herror": _CONNECTION},
    "http": {"RemoteDisconnected": _CONNECTION, "IncompleteRead": _CONNECTION,
             "BadStatusLine": _CONNECTION},
    "urllib": {"HTTPError": _STATUS, "URLError": _CONNECTION},
    "httpx": {"TimeoutException": _TIMEOUT, "NetworkError": _CONNECTION,
              "RemoteProtocolError": _CONNECTION, "ProxyError": _CONNECTION,
              "HTTPStatusError": _STATUS},
    "httpcore": {"TimeoutException": _TIMEOUT, "NetworkError": _CONNECTION,
                 "RemoteProtocolError": _CONNECTION, "ProxyError": _CONNECTION},
    "requests": {"Timeout": _TIMEOUT, "ConnectionError": _CONNECTION,
                 "ChunkedEncodingError": _CONNECTION, "HTTPError": _STATUS},
    "urllib3": {"TimeoutError": _TIMEOUT, "NewConnectionError": _CONNECTION,
                "MaxRetryError": _CONNECTION, "ProtocolError": _CONNECTION,
                "NameResolutionError": _CONNECTION},
    "openai": {"APITimeoutError": _TIMEOUT, "APIConnectionError": _CONNECTION,
               "APIStatusError": _STATUS},
    "anthropic": {"APITimeoutError": _TIMEOUT, "APIConnectionError": _CONNECTION,
                  "APIStatusError": _STATUS},
    "aiohttp": {"ServerTimeoutError": _TIMEOUT, "ClientConnectionError": _CONNECTION,
                "ClientResponseError": _STATUS},
    "agent_eval": {"ModelEndpointError": "endpoint"},
}  # fmt: skip
"""Module root -> class name -> what it means; the first class on the MRO that is listed
decides, so a subclass listed apart (a timeout under a connection error) wins."""
MAX_CAUSES = 5
"""How far down a chain of ``raise ... from`` causes to look."""


@dataclass(frozen=True)
class Outage:
    """An exception that means the model endpoint failed, and what the harness says of it."""

    kind: str
    """connection, timeout, rate_limit or server (the kinds of a ModelEndpointError)."""
    retry_after: float | None
    """The server's Retry-After in seconds, when the exception carries it."""
    seen: str
    """The class that was recognised, e.g. ``httpx.ConnectError``."""

    def as_infra(self) -> dict[str, Any]:
        """The ``infra_error`` record an agent would return for this outage."""
        return {"kind": self.kind, "retry_after": self.retry_after}


def find_outage(exc: BaseException) -> Outage | None:
    """The outage ``exc`` (or one of its causes) reports, or None for the agent's own error."""
    current: BaseException | None = exc
    for _ in range(MAX_CAUSES + 1):
        if current is None:
            return None
        found = _outage_of(current)
        if found is not None:
            return found
        current = current.__cause__
    return None


def describe(exc: BaseException, outage: Outage) -> str:
    """One line naming what run_task raised and the class recognised as an outage."""
    raised = class_name(type(exc))
    via = "" if outage.seen == raised else f" (caused by {outage.seen})"
    return (
        f"run_task raised {raised}{via}, a model endpoint {outage.kind} failure, "
        f"counted as infra_error: {exc}"
    )


def class_name(cls: type) -> str:
    """``module.Name`` as the class says (``urllib.error.URLError``); builtins bare."""
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def _outage_of(exc: BaseException) -> Outage | None:
    for cls in type(exc).__mro__:
        meaning = OUTAGE_CLASSES.get(cls.__module__.split(".")[0], {}).get(cls.__name__)
        if meaning is None:
            continue
        seen = class_name(type(exc))
        if meaning == "endpoint":
            kind = str(getattr(exc, "kind", _CONNECTION))
            return Outage(kind, _seconds(getattr(exc, "retry_after", None)), seen)
        if meaning == _STATUS:
            status = _status(exc)
            if status == 429 or (status is not None and 500 <= status < 600):
                kind = "rate_limit" if status == 429 else "server"
                return Outage(kind, _retry_after(exc), seen)
            return None
        if cls.__name__ == "URLError" and not isinstance(getattr(exc, "reason", None), OSError):
            return None  # "unknown url type" and the like: the agent's configuration
        return Outage(meaning, None, seen)
    return None


def _status(exc: BaseException) -> int | None:
    """The HTTP status an error carries, under any of the names the libraries use."""
    response = getattr(exc, "response", None)
    for value in (
        getattr(exc, "status_code", None),
        getattr(response, "status_code", None),
        getattr(exc, "code", None),
        getattr(exc, "status", None),
    ):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _retry_after(exc: BaseException) -> float | None:
    for owner in (getattr(exc, "response", None), exc):
        headers = getattr(owner, "headers", None)
        getter = getattr(headers, "get", None)
        if callable(getter):
            found = _seconds(getter("retry-after") or getter("Retry-After"))
            if found is not None:
                return found
    return None


def _seconds(value: Any) -> float | None:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    return seconds if seconds >= 0 else None
