"""Where attempts run: one interface, one module per implementation.

An executor takes the run's pending attempts and hands each to a slot, a place that
runs one try of one attempt at a time with the attempt's isolation, time budget and
memory limit. The driver (this process) keeps the retries, and is the only writer of
results, the journal and trajectories: an executor only returns scored tries.

- ``local``: worker processes on this machine (run/executors/pool.py).
- ``ray``: slot groups on the nodes of a Ray cluster (run/executors/ray.py).

A new executor is one module with a class taking ``(prepared, plan)`` and having
``start``, ``run``, ``close`` and ``warnings``, named in ``EXECUTOR_CLASSES``.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from agent_eval.errors import ExtraMissingError
from agent_eval.records import Task
from agent_eval.run.attempt import AttemptPlan, Scored

if TYPE_CHECKING:
    from agent_eval.run.prepared import PreparedRun

EXECUTOR_CLASSES = {
    "local": "agent_eval.run.executors.local:LocalExecutor",
    "ray": "agent_eval.run.executors.ray:RayExecutor",
}


class Slot(Protocol):
    """Runs one try of one attempt, wherever the executor put it."""

    def run_try(self, task: Task, attempt: int) -> Scored: ...


TryAttempt = Callable[[Slot, int, threading.Event], Scored]
"""The driver's side of one attempt: (slot, position in the order, stop) -> last try."""
Record = Callable[[int, Scored], None]
"""Called in the driver as each attempt finishes, with its index in ``pending``."""


class Executor(Protocol):
    warnings: list[str]
    """Warnings for the results file, such as an agent's close() failing."""

    def start(self) -> None:
        """Begin starting slots in the background while the driver gets ready; run()
        carries on from there. Optional: run() starts what this did not."""
        ...

    def close(self) -> None:
        """End what start() began, when run() never came; after run(), nothing."""
        ...

    def run(self, pending: Sequence[int], attempt: TryAttempt, record: Record) -> bool:
        """Run every pending attempt, ``record`` each as it finishes; True when Ctrl-C
        cut the run short. build() failing raises AgentLoadError before anything runs."""
        ...


def executor_class(name: str) -> Any:
    """The class ``--executor NAME`` stands for, imported only when chosen; a missing
    extra is an ExtraMissingError that says how to install it."""
    module, _, attribute = EXECUTOR_CLASSES[name].partition(":")
    try:
        return getattr(importlib.import_module(module), attribute)
    except ImportError as exc:
        if exc.name is None or exc.name.partition(".")[0] != name:
            raise
        raise ExtraMissingError(
            f"--executor {name} needs {name}; install it with pip install -e '.[{name}]' in "
            f"the agent-eval clone"
        ) from None


def make_executor(
    prepared: PreparedRun, plan: AttemptPlan, notice: Callable[[str], None] | None = None
) -> Executor:
    """The executor ``--executor`` names, for this run; ``notice`` hears what the user
    should know while it runs."""
    executor: Executor = executor_class(prepared.config.executor)(prepared, plan, notice)
    return executor
