"""A response cache that keeps repeats independent: `run --cache DIR`.

A reply is reused only for the same request within the same task and attempt number, so
re-running a suite reuses attempt 2's replies for attempt 2, and repeat 2 never gets
repeat 1's reply. The key is the SHA-256 of: the upstream base URL, the task id, the
attempt number, the method and path, the request body (as recorded, secrets replaced),
and how many identical requests the attempt made before this one. Only complete 2xx
replies are kept; errors and cut-off streams are never cached. One file per key,
``DIR/ab/abcdef....json``, written atomically, so concurrent runs may share a folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from agent_eval.errors import ConfigError

CACHE_SCHEMA = 1


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

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored response for ``key``, or None (a torn or foreign file is a miss)."""
        try:
            stored = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        response = stored.get("response") if isinstance(stored, dict) else None
        return response if isinstance(response, dict) else None

    def put(self, key: str, response: dict[str, Any]) -> None:
        """Keep a complete 2xx reply under ``key``."""
        path = self._path(key)
        path.parent.mkdir(exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump({"schema": CACHE_SCHEMA, "response": response}, out, ensure_ascii=False)
        os.replace(temporary, path)
