"""Workflows between ``run`` and ``cli``, one module each: the duel, the sweep, the audit,
rescoring and the demo, and ``one_run``, the sequence around a single run (prepare, the
header, execute, the summary and the warnings) that the command line, each sweep cell and
the demo share."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_eval.lazy import lazy_getattr

# The face's names that live in its modules, imported on first use (__getattr__).
if TYPE_CHECKING:
    from agent_eval.workflows.audit import audit as run_audit
    from agent_eval.workflows.demo import DemoPlan, run_demo
    from agent_eval.workflows.duel import begin, check_resumable, check_specs, duel_config, play
    from agent_eval.workflows.one_run import default_labbook, run_one
    from agent_eval.workflows.rescore import rescore as rescore_results
    from agent_eval.workflows.sweep import load_sweep, run_sweep


__all__ = [
    "DemoPlan",
    "begin",
    "check_resumable",
    "check_specs",
    "default_labbook",
    "duel_config",
    "load_sweep",
    "play",
    "rescore_results",
    "run_audit",
    "run_demo",
    "run_one",
    "run_sweep",
]


_LAZY = {
    "DemoPlan": "agent_eval.workflows.demo:DemoPlan",
    "begin": "agent_eval.workflows.duel:begin",
    "check_resumable": "agent_eval.workflows.duel:check_resumable",
    "check_specs": "agent_eval.workflows.duel:check_specs",
    "default_labbook": "agent_eval.workflows.one_run:default_labbook",
    "duel_config": "agent_eval.workflows.duel:duel_config",
    "load_sweep": "agent_eval.workflows.sweep:load_sweep",
    "play": "agent_eval.workflows.duel:play",
    "rescore_results": "agent_eval.workflows.rescore:rescore",
    "run_audit": "agent_eval.workflows.audit:audit",
    "run_demo": "agent_eval.workflows.demo:run_demo",
    "run_one": "agent_eval.workflows.one_run:run_one",
    "run_sweep": "agent_eval.workflows.sweep:run_sweep",
}
"""Public name -> where it lives: ``module:attribute``, or a module."""
__getattr__ = lazy_getattr(__name__, _LAZY)
