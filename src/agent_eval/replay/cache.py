"""A response cache that keeps repeats independent: `run --cache DIR`.

A reply is reused only for the same request within the same task and attempt number, so
re-running a suite reuses attempt 2's replies for attempt 2, and repeat 2 never gets
repeat 1's reply. The key is the SHA-256 of: the upstream base URL, the task id, the
attempt number, the method and path, the request body (as recorded, secrets replaced),
and how many identical requests the attempt made before this one. Only complete 2xx
replies the harness accepts are kept (:func:`reusable`): never an error, a cut-off
stream, or a 200 whose body is no completion. One file per key,
``DIR/ab/abcdef....json``, written atomically, so concurrent runs may share a folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agent_eval.errors import ConfigError

CACHE_SCHEMA = 1


def reusable(path: str, response: Mapping[str, Any]) -> bool:
    """Whether a reply to a request for ``path`` may be kept and given again: a 2xx whose
    body is whole JSON, or a stream that reached ``data: [DONE]`` with JSON in every
    event before it; from a chat or text completions route, also a completion the
    harness's client reads, with a first choice that holds a message (or a text).

    A reply the run would count as an infra error (a cut-off body, no choices) is never
    reusable: kept, it would be given again on every retry and every later run.
    """
    status = response.get("status")
    if not isinstance(status, int) or not 200 <= status < 300:
        return False
    route = urlsplit(path).path.rstrip("/")
    if "events" in response:
        return _whole_stream(response["events"])
    if "json" not in response:  # a body that is not JSON, or none
        return False
    body = response["json"]
    if route.endswith("/chat/completions"):
        return isinstance(_first_choice(body).get("message"), dict)
    if route.endswith("/completions"):
        return "text" in _first_choice(body)
    return True


def _first_choice(body: Any) -> dict[str, Any]:
    """A completion's first choice; empty when it has none."""
    choices = body.get("choices") if isinstance(body, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    return first if isinstance(first, dict) else {}


def _whole_stream(events: Any) -> bool:
    """A streamed reply's events end with ``[DONE]``, and every earlier data is JSON."""
    if not isinstance(events, list) or not events:
        return False
    data = [event.get("data") for event in events if isinstance(event, dict)]
    if len(data) != len(events) or data[-1] != "[DONE]":
        return False
    for text in data[:-1]:
        if text is None:  # an event without data (a named event, a comment's neighbour)
            continue
        try:
            json.loads(text)
        except (TypeError, ValueError):
            return False
    return True


class ResponseCache:
    """Replies on disk under ``folder``, keyed per task, attempt and request."""

    def __init__(self, folder: Path) -> None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"--cache {folder}: cannot create it ({exc.strerror})") from None
        if not folder.is_dir():
            raise ConfigError(f"--cache {folder}: not a folder; give a folder for the cache")
        self.folder = folder

    @staticmethod
    def key(upstream: str, task_id: str, attempt: int, request: dict[str, Any], seen: int) -> str:
        """The key of one request: ``request`` holds method, path and body as recorded;
        ``seen`` counts the identical requests this attempt made before it."""
        material = [CACHE_SCHEMA, upstream, task_id, attempt, request, seen]
        text = json.dumps(material, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str, path: str) -> dict[str, Any] | None:
        """The stored reply for ``key``, a request for ``path``; None for a miss. A torn
        or foreign file is a miss, and so is a reply that is not :func:`reusable` (one an
        older version kept): the endpoint is asked again, and its reply replaces it."""
        try:
            stored = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        response = stored.get("response") if isinstance(stored, dict) else None
        if not isinstance(response, dict) or not reusable(path, response):
            return None
        return response

    def put(self, key: str, path: str, response: dict[str, Any]) -> bool:
        """Keep the reply to a request for ``path`` under ``key`` when it is
        :func:`reusable`; whether it was kept."""
        if not reusable(path, response):
            return False
        target = self._path(key)
        target.parent.mkdir(exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump({"schema": CACHE_SCHEMA, "response": response}, out, ensure_ascii=False)
        os.replace(temporary, target)
        return True
