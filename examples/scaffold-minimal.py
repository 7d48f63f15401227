"""The course's minimal scaffold as an entry-point file: one loop, one model, the tools.

    agent-eval run --agent examples/scaffold-minimal.py --tasks part26 --model local/chat

It re-exports ``builtin:minimal``, so this file and the builtin are the same agent.
"""

from __future__ import annotations

from agent_eval.agents.minimal import SCAFFOLD_NAME, build, close, run_task

__all__ = ["SCAFFOLD_NAME", "build", "close", "run_task"]
