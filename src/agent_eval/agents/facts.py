"""`python -m agent_eval.agents.facts FD SPEC`: import an agent, write its facts to FD.

Importing an agent runs its code. The harness never imports a user's agent in its own
process, where attempts are scored: code run there could replace a scorer and pass
every attempt. This process imports it instead, in the run's sandbox when there is one
(run/agent_facts.py), and writes one JSON object to FD: the facts, or why the agent
cannot be loaded. What the agent prints on import goes to stderr.
"""

from __future__ import annotations

import json
import os
import sys

from agent_eval.agents.entry import load_agent
from agent_eval.errors import AgentLoadError


def main(argv: list[str]) -> None:
    fd, spec = int(argv[0]), argv[1]
    try:
        facts = load_agent(spec).facts
        found: dict[str, str | None] = {
            "scaffold": facts.scaffold,
            "run_task_module": facts.run_task_module,
        }
    except AgentLoadError as exc:
        found = {"error": str(exc)}
    with os.fdopen(fd, "w", encoding="utf-8") as channel:
        channel.write(json.dumps(found))


if __name__ == "__main__":
    main(sys.argv[1:])
