"""The kernel sandbox that keeps what is measured away from the measurement.

Attempts (run/) and state checks (score/) run their processes in bubblewrap: the system
read-only, only the given folders writable, the user's files and the run's own files
hidden, an allow-listed environment, a PID namespace that dies with its first process,
and a network namespace in which only the model endpoint answers, through our relay.
This package knows nothing of agents or runs: it builds sandboxes and relays bytes.
"""

from __future__ import annotations

from agent_eval.sandbox.bwrap import (
    MODES,
    NETWORKS,
    Sandbox,
    bwrap_binary,
    unavailable,
)
from agent_eval.sandbox.relay import Endpoint, ModelRelay

__all__ = [
    "MODES",
    "NETWORKS",
    "Endpoint",
    "ModelRelay",
    "Sandbox",
    "bwrap_binary",
    "unavailable",
]
