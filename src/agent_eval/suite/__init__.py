"""Suites: load, validate and hash versioned task files, and find the shipped ones."""

from __future__ import annotations

from agent_eval.suite.load import LoadedSuite, load_suite, shipped_suites, suite_hash

__all__ = ["LoadedSuite", "load_suite", "shipped_suites", "suite_hash"]
