"""Keep secrets out of every file: the API key and any option named like a secret."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

SECRET_WORDS = frozenset({"key", "apikey", "token", "secret", "password", "passwd"})
REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 4
"""Shorter values are not scrubbed from text: replacing '12' everywhere would garble it."""


def is_secret_name(name: str) -> bool:
    """True for names like api_key, auth-token, client.secret or db_password."""
    return any(part in SECRET_WORDS for part in re.split(r"[^a-z0-9]+", name.lower()))


class Redactor:
    """Replaces each known secret value in text before the text reaches a file."""

    def __init__(self, secrets: Iterable[str | None]) -> None:
        values = {s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH}
        self._pattern = (
            re.compile("|".join(re.escape(v) for v in sorted(values, key=len, reverse=True)))
            if values
            else None
        )

    def __call__(self, text: str) -> str:
        return self._pattern.sub(REDACTED, text) if self._pattern else text

    @classmethod
    def for_run(cls, api_key: str | None, options: Mapping[str, str]) -> Redactor:
        """The redactor for a run's API key and its secret-named options."""
        return cls([api_key, *(v for k, v in options.items() if is_secret_name(k))])


def public_options(options: Mapping[str, str]) -> dict[str, str]:
    """Options as they may be recorded: secret-named values replaced."""
    return {k: REDACTED if is_secret_name(k) else v for k, v in options.items()}
