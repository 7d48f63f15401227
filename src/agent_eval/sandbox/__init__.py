"""The kernel sandbox that keeps what is measured away from the measurement.

Attempts (run/) and state checks (score/) run their processes in bubblewrap: the system
read-only, only the given folders writable, the user's files and the run's own files
hidden, an allow-listed environment, a PID namespace that dies with its first process,
and a network namespace in which only the model endpoint answers, through our relay.
This package knows nothing of agents or runs: it builds sandboxes and relays bytes.

Its modules: ``bwrap`` builds and probes sandboxes, ``slot`` confines one slot of a
sandbox that several share, ``relay`` carries the model endpoint into them, ``pids``
bounds a slot's processes for root too, and ``reaper`` ends every process below one
(used with and without a sandbox). The package itself imports nothing, so a worker that
needs only the reaper loads only it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_eval.lazy import lazy_getattr

# The face's names that live in its modules, imported on first use (__getattr__).
if TYPE_CHECKING:
    from agent_eval.sandbox import pids, reaper, slot
    from agent_eval.sandbox.bwrap import (
        TRUST_STORE_ENV,
        Sandbox,
        bwrap_binary,
        can_be_private,
        probe_ahead,
        unavailable,
        user_tasks,
    )
    from agent_eval.sandbox.reaper import become_subreaper, children, end_strays
    from agent_eval.sandbox.relay import Endpoint, ModelRelay
    from agent_eval.sandbox.slot import Slot


__all__ = [
    "TRUST_STORE_ENV",
    "Endpoint",
    "ModelRelay",
    "Sandbox",
    "Slot",
    "become_subreaper",
    "bwrap_binary",
    "can_be_private",
    "children",
    "end_strays",
    "pids",
    "probe_ahead",
    "reaper",
    "slot",
    "unavailable",
    "user_tasks",
]


_LAZY = {
    "TRUST_STORE_ENV": "agent_eval.sandbox.bwrap:TRUST_STORE_ENV",
    "Endpoint": "agent_eval.sandbox.relay:Endpoint",
    "ModelRelay": "agent_eval.sandbox.relay:ModelRelay",
    "Sandbox": "agent_eval.sandbox.bwrap:Sandbox",
    "Slot": "agent_eval.sandbox.slot:Slot",
    "become_subreaper": "agent_eval.sandbox.reaper:become_subreaper",
    "bwrap_binary": "agent_eval.sandbox.bwrap:bwrap_binary",
    "can_be_private": "agent_eval.sandbox.bwrap:can_be_private",
    "children": "agent_eval.sandbox.reaper:children",
    "end_strays": "agent_eval.sandbox.reaper:end_strays",
    "pids": "agent_eval.sandbox.pids",
    "probe_ahead": "agent_eval.sandbox.bwrap:probe_ahead",
    "reaper": "agent_eval.sandbox.reaper",
    "slot": "agent_eval.sandbox.slot",
    "unavailable": "agent_eval.sandbox.bwrap:unavailable",
    "user_tasks": "agent_eval.sandbox.bwrap:user_tasks",
}
"""Public name -> where it lives: ``module:attribute``, or a module."""
__getattr__ = lazy_getattr(__name__, _LAZY)
