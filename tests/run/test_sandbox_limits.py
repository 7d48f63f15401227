"""The sandbox's limits bind a hostile agent while it runs, root included, and an
attempt that meets one fails alone: the next attempt in the same slot is unaffected."""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_eval.run.executors.pool import Dispatch
from agent_eval.run.executors.sandboxed import resolve
from agent_eval.run.executors.worker import Outcome, Worker
from agent_eval.sandbox import pids
from agent_eval.sandbox.bwrap import unavailable

WHY_NOT = unavailable()
needs_sandbox = pytest.mark.skipif(
    WHY_NOT is not None and not os.environ.get("CI"),
    reason=f"the sandbox cannot start here: {WHY_NOT}",
)

FORKING_AGENT = """
import json, os, time

def run_task(task, options):
    started, error = 0, None
    for _ in range(options["want"]):
        try:
            pid = os.fork()
        except OSError as exc:
            error = f"{type(exc).__name__}: {exc}"
            break
        if pid == 0:
            time.sleep(120)
            os._exit(0)
        started += 1
    return {"answer": json.dumps({"started": started, "error": error}), "steps": 1, "tokens": 0}
"""


def ours() -> list[str]:
    """The pids cgroups this process made that are still there."""
    root = pids.controller()
    if root is None:
        return []
    return [p.name for p in root.iterdir() if p.name.startswith(f"{pids.PREFIX}{os.getpid()}-")]


@needs_sandbox
def test_a_fork_bomb_meets_the_process_limit_and_the_next_attempt_does_not(
    tmp_path: Path, write_agent: Callable[..., Path]
) -> None:
    """An agent forks until refused, under a limit of 48: it is refused before 48, root
    or not (a pids cgroup where one can be made, RLIMIT_NPROC otherwise), and the
    next attempt in the same sandbox starts its 10 processes."""
    if os.getuid() == 0 and pids.controller() is None:
        pytest.skip(f"root, whom RLIMIT_NPROC does not bind, and {pids.unavailable()}")
    agent = write_agent(FORKING_AGENT)
    sandbox, _ = resolve("on", "none", [], [tmp_path])
    assert sandbox is not None
    sandbox = dataclasses.replace(sandbox, processes=48)
    outcomes: dict[int, Outcome] = {}

    def attempt(worker: Worker, want: int, stop: threading.Event) -> Outcome:
        return worker.run("fork", {"want": want}, 120)

    def record(index: int, outcome: Any) -> None:
        outcomes[index] = outcome

    interrupted = Dispatch(str(agent), {}, 1, None, sandbox=sandbox).run([400, 10], attempt, record)
    assert not interrupted
    found = {i: json.loads(o.reply.answer) for i, o in outcomes.items() if o.reply is not None}
    assert found[0]["started"] < 48 and "Resource temporarily unavailable" in found[0]["error"]
    assert found[1] == {"started": 10, "error": None}
    assert not ours()  # each sandbox's cgroup went with it
