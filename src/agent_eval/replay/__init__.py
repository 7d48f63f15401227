"""Record and replay each attempt's model traffic: the proxy, the recording file, the cache.

``run --record`` puts :class:`ModelProxy` in front of the endpoint and keeps one
recording per attempt beside its trajectory; ``run --replay`` answers each attempt from
its own recording; ``run --cache DIR`` reuses a reply only within the same task and
attempt number.

Every name is imported on first use: the proxy brings a web server stack, which a run
that neither records nor replays never needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_eval.lazy import lazy_getattr

# The face's names that live in its modules, imported on first use (__getattr__).
if TYPE_CHECKING:
    from agent_eval.replay.proxy import ModelProxy, OnCall, Session, Traffic
    from agent_eval.replay.recording import read_recording, recording_name
    from agent_eval.replay.source import (
        ReplaySource,
        load_replay,
        recorded_settings,
        recorded_suite,
    )


__all__ = [
    "ModelProxy",
    "OnCall",
    "ReplaySource",
    "Session",
    "Traffic",
    "load_replay",
    "read_recording",
    "recorded_settings",
    "recorded_suite",
    "recording_name",
]


_LAZY = {
    "ModelProxy": "agent_eval.replay.proxy:ModelProxy",
    "OnCall": "agent_eval.replay.proxy:OnCall",
    "ReplaySource": "agent_eval.replay.source:ReplaySource",
    "Session": "agent_eval.replay.proxy:Session",
    "Traffic": "agent_eval.replay.proxy:Traffic",
    "load_replay": "agent_eval.replay.source:load_replay",
    "read_recording": "agent_eval.replay.recording:read_recording",
    "recorded_settings": "agent_eval.replay.source:recorded_settings",
    "recorded_suite": "agent_eval.replay.source:recorded_suite",
    "recording_name": "agent_eval.replay.recording:recording_name",
}
"""Public name -> where it lives: ``module:attribute``, or a module."""
__getattr__ = lazy_getattr(__name__, _LAZY)
