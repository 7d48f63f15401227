"""`python -m agent_eval` runs the command line."""

from __future__ import annotations

from agent_eval.cli import main

main()
