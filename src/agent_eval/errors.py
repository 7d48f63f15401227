"""Errors that speak to the user.

Every error the harness raises on bad input derives from one base, so the CLI can
catch it once, print one ``Error: ...`` line and exit 1::

    AgentEvalError
    ├── SuiteError            a suite file is missing, malformed or invalid
    ├── AgentLoadError        an --agent cannot be found, imported or built
    ├── ConfigError           a flag, option, price or path makes no sense
    ├── ResultsError          a results, journal or labbook file cannot be read
    ├── ModelEndpointError    a model endpoint is down, slow, refusing or garbled
    └── ExtraMissingError     an optional extra (local model, tracing) is not installed

A message names the input, the problem and the fix.
"""

from __future__ import annotations


class AgentEvalError(Exception):
    """Base of every error that is the user's to fix; the CLI prints it and exits 1."""


class SuiteError(AgentEvalError):
    """A suite file cannot be read or does not validate."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems: list[str] = problems or [message]


class AgentLoadError(AgentEvalError):
    """An agent entry point cannot be located, imported, or built."""


class ConfigError(AgentEvalError):
    """A command-line flag, option or setting is invalid."""


class ResultsError(AgentEvalError):
    """A results, journal or labbook file is missing or malformed."""


class ExtraMissingError(AgentEvalError):
    """An optional extra is needed but not installed; the message says how to install it."""


class ModelEndpointError(AgentEvalError):
    """A model endpoint failed for infrastructure reasons, never for the answer's content.

    ``kind`` is one of ``connection``, ``timeout``, ``rate_limit``, ``server`` and
    ``bad_reply``. ``retry_after`` carries the server's Retry-After in seconds, if any.
    """

    KINDS = ("connection", "timeout", "rate_limit", "server", "bad_reply")

    def __init__(self, message: str, kind: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after
