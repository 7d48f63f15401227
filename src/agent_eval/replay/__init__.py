"""Record and replay each attempt's model traffic: the proxy, the recording file, the cache.

``run --record`` puts :class:`ModelProxy` in front of the endpoint and keeps one
recording per attempt beside its trajectory; ``run --replay`` answers each attempt from
its own recording; ``run --cache DIR`` reuses a reply only within the same task and
attempt number.
"""

from __future__ import annotations

from agent_eval.replay.proxy import ModelProxy, Session, Traffic
from agent_eval.replay.recording import read_recording, recording_name
from agent_eval.replay.source import ReplaySource, load_replay

__all__ = [
    "ModelProxy",
    "ReplaySource",
    "Session",
    "Traffic",
    "load_replay",
    "read_recording",
    "recording_name",
]
