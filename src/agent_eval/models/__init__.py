"""models."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_eval.lazy import lazy_getattr

# The face's names that live in its modules, imported on first use (__getattr__).
if TYPE_CHECKING:
    from agent_eval.models.actions import (
        FINISH,
        action_schema,
        find_json_object,
        is_whole_object,
        json_schema_format,
        parse_action,
    )
    from agent_eval.models.client import ChatClient, ChatReply
    from agent_eval.models.http import pool_modules
    from agent_eval.models.local_engine import INSTALL_ADVICE
    from agent_eval.models.local_server import LocalModelServer, wait_healthy
    from agent_eval.models.mock_server import serve


__all__ = [
    "FINISH",
    "INSTALL_ADVICE",
    "ChatClient",
    "ChatReply",
    "LocalModelServer",
    "action_schema",
    "find_json_object",
    "is_whole_object",
    "json_schema_format",
    "parse_action",
    "pool_modules",
    "serve",
    "wait_healthy",
]


_LAZY = {
    "ChatClient": "agent_eval.models.client:ChatClient",
    "ChatReply": "agent_eval.models.client:ChatReply",
    "FINISH": "agent_eval.models.actions:FINISH",
    "INSTALL_ADVICE": "agent_eval.models.local_engine:INSTALL_ADVICE",
    "LocalModelServer": "agent_eval.models.local_server:LocalModelServer",
    "action_schema": "agent_eval.models.actions:action_schema",
    "find_json_object": "agent_eval.models.actions:find_json_object",
    "is_whole_object": "agent_eval.models.actions:is_whole_object",
    "json_schema_format": "agent_eval.models.actions:json_schema_format",
    "parse_action": "agent_eval.models.actions:parse_action",
    "pool_modules": "agent_eval.models.http:pool_modules",
    "serve": "agent_eval.models.mock_server:serve",
    "wait_healthy": "agent_eval.models.local_server:wait_healthy",
}
"""Public name -> where it lives: ``module:attribute``, or a module."""
__getattr__ = lazy_getattr(__name__, _LAZY)
