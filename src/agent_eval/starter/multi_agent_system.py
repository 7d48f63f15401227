"""The course's four-role system as an entry-point file: router, researcher, answerer, verifier.

    agent-eval run --agent examples/multi-agent-system.py --tasks part26 \
        --model local/answer --router-model local/router --workspace ./agent-workspace

It re-exports ``builtin:multi-agent``, so this file and the builtin are the same agent.
"""

from __future__ import annotations

from agent_eval.agents.multi_agent import SCAFFOLD_NAME, build, close, run_task

__all__ = ["SCAFFOLD_NAME", "build", "close", "run_task"]
