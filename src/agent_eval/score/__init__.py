"""Scoring: pure checks on an attempt, failure classes, and statistics."""

from __future__ import annotations

from agent_eval.score.checks import classify, score_attempt, tools_used

__all__ = ["classify", "score_attempt", "tools_used"]
