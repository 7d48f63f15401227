"""run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_eval.lazy import lazy_getattr

# The face's names that live in its modules, imported on first use (__getattr__).
if TYPE_CHECKING:
    from agent_eval.run.foreground import replay_attempt
    from agent_eval.run.observers import AttemptObserver, EachAttempt, Observers
    from agent_eval.run.prepared import PreparedRun
    from agent_eval.run.runner import RunReport, execute, prepare, starting
    from agent_eval.run.settings import DEFAULT_BASE_URL, RunConfig, build_settings, option_text
    from agent_eval.run.workspace import check_workspace


__all__ = [
    "DEFAULT_BASE_URL",
    "AttemptObserver",
    "EachAttempt",
    "Observers",
    "PreparedRun",
    "RunConfig",
    "RunReport",
    "build_settings",
    "check_workspace",
    "execute",
    "option_text",
    "prepare",
    "replay_attempt",
    "starting",
]


_LAZY = {
    "AttemptObserver": "agent_eval.run.observers:AttemptObserver",
    "DEFAULT_BASE_URL": "agent_eval.run.settings:DEFAULT_BASE_URL",
    "EachAttempt": "agent_eval.run.observers:EachAttempt",
    "Observers": "agent_eval.run.observers:Observers",
    "PreparedRun": "agent_eval.run.prepared:PreparedRun",
    "RunConfig": "agent_eval.run.settings:RunConfig",
    "RunReport": "agent_eval.run.runner:RunReport",
    "build_settings": "agent_eval.run.settings:build_settings",
    "check_workspace": "agent_eval.run.workspace:check_workspace",
    "execute": "agent_eval.run.runner:execute",
    "option_text": "agent_eval.run.settings:option_text",
    "prepare": "agent_eval.run.runner:prepare",
    "replay_attempt": "agent_eval.run.foreground:replay_attempt",
    "starting": "agent_eval.run.runner:starting",
}
"""Public name -> where it lives: ``module:attribute``, or a module."""
__getattr__ = lazy_getattr(__name__, _LAZY)
