"""Record and replay each attempt's model traffic: the proxy, the recording file, the cache.

``run --record`` puts :class:`ModelProxy` in front of the endpoint and keeps one
recording per attempt beside its trajectory; ``run --replay`` answers each attempt from
its own recording; ``run --cache DIR`` reuses a reply only within the same task and
attempt number.

The names below are imported on first use: the proxy brings a web server stack, which a
run that neither records nor replays never needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_HOMES = {
    "ModelProxy": "proxy",
    "Session": "proxy",
    "Traffic": "proxy",
    "read_recording": "recording",
    "recording_name": "recording",
    "ReplaySource": "source",
    "load_replay": "source",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
