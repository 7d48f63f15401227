"""Keep a run's secrets out of every file: what the run records of its options.

What counts as a secret, and the redactor itself, are in agent_eval.redaction, which the
agents that keep logs use too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agent_eval.redaction import (
    MIN_SECRET_LENGTH,
    REDACTED,
    SECRET_OPTIONS_KEY,
    SECRET_WORDS,
    Redactor,
    is_secret_name,
    secret_option_names,
)

__all__ = [
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "SECRET_OPTIONS_KEY",
    "SECRET_WORDS",
    "Redactor",
    "is_secret_name",
    "public_options",
]


def public_options(options: Mapping[str, Any], secret: Iterable[str] = ()) -> dict[str, Any]:
    """Options as they may be recorded: the values of secret-named options and of the
    ``secret`` ones (--secret-option) replaced, however short."""
    hidden = secret_option_names(options) | set(secret)
    return {k: REDACTED if k in hidden else v for k, v in options.items()}


def with_secret_options(options: Mapping[str, str], secret: Mapping[str, str]) -> dict[str, Any]:
    """The options an agent is given: ``options``, then the ``secret`` ones (--secret-option),
    whose names are listed under SECRET_OPTIONS_KEY so that the agent, and its logs, know."""
    if not secret:
        return dict(options)
    return {**options, **secret, SECRET_OPTIONS_KEY: sorted(secret)}


def run_redactor(
    api_key: str | None, options: Mapping[str, str], secret: Mapping[str, str]
) -> Redactor:
    """The redactor of a run: its API key, its secret options (by name or given as
    secret), and the environment's variables named like secrets."""
    return Redactor.for_run(api_key, with_secret_options(options, secret))
