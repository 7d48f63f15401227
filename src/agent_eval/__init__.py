"""agent-eval: measure AI agents on versioned, program-checked task suites.

The public API is re-exported here and loaded lazily, so that importing one part of the
package (say, the records) never drags in the rest.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

__version__ = "0.1.0"
STARTUP_PATH = tuple(sys.path)
"""sys.path as it was when the harness was first imported, before any agent file's folder
was put on it: what a sandbox shows of it (agent_eval.sandbox.bwrap), so that no earlier
run's agent in this process is visible to a later one's."""
SHIPPED_SUITES = os.path.join(os.path.dirname(os.path.realpath(__file__)), "suites")
"""The shipped suites (agent_eval.suite), answers and hidden checks included. They lie in
the package, which every sandbox must show, so every sandbox hides them."""

_EXPORTS = {
    "AgentEvalError": "agent_eval.errors",
    "AgentLoadError": "agent_eval.errors",
    "ConfigError": "agent_eval.errors",
    "ExtraMissingError": "agent_eval.errors",
    "ModelEndpointError": "agent_eval.errors",
    "ResultsError": "agent_eval.errors",
    "SuiteError": "agent_eval.errors",
    "AgentReply": "agent_eval.records",
    "AttemptResult": "agent_eval.results",
    "Checks": "agent_eval.records",
    "Suite": "agent_eval.records",
    "Task": "agent_eval.records",
    "LoadedSuite": "agent_eval.suite",
    "load_suite": "agent_eval.suite",
    "classify": "agent_eval.score.checks",
    "score_attempt": "agent_eval.score.checks",
    "Prices": "agent_eval.run.settings",
    "RunConfig": "agent_eval.run.settings",
    "RunReport": "agent_eval.run.runner",
    "MockModelServer": "agent_eval.models.mock_server",
    "load_script": "agent_eval.models.mock_script",
    "LocalModelServer": "agent_eval.models.local_server",
    "load_results": "agent_eval.results",
    "compare_runs": "agent_eval.report",
    "summarise_run": "agent_eval.report",
    "execute": "agent_eval.run.runner",
    "prepare": "agent_eval.run.runner",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'agent_eval' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
