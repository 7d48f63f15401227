"""Where attempts run: one interface, one module per implementation.

An executor takes the run's pending attempts and hands each to a slot, a place that
runs one try of one attempt at a time with the attempt's isolation, time budget and
memory limit. The driver (this process) keeps the retries, and is the only writer of
results, the journal and trajectories: an executor only returns scored tries.

- ``local``: worker processes on this machine (run/pool.py).
- ``ray``: slot groups on the nodes of a Ray cluster (run/ray_executor.py).

A new executor is one module with a class taking ``(prepared, plan)`` and having
``run`` and ``warnings``, named in ``EXECUTOR_CLASSES``.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from agent_eval.errors import ExtraMissingError
from agent_eval.records import Task
from agent_eval.run.attempt import AttemptPlan, Scored, run_attempt
from agent_eval.run.pool import Dispatch
from agent_eval.run.sandboxed import inside_options
from agent_eval.run.worker import Worker

if TYPE_CHECKING:
    from agent_eval.run.runner import PreparedRun

EXECUTOR_CLASSES = {
    "local": "agent_eval.run.executor:LocalExecutor",
    "ray": "agent_eval.run.ray_executor:RayExecutor",
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


@dataclass(frozen=True)
class LocalSlot:
    """A worker process on this machine."""

    plan: AttemptPlan
    worker: Worker

    def run_try(self, task: Task, attempt: int) -> Scored:
        return run_attempt(self.plan, self.worker, task, attempt)


class LocalExecutor:
    """Worker processes forked from a zygote on this machine, --concurrency of them."""

    def __init__(
        self, prepared: PreparedRun, plan: AttemptPlan, notice: Callable[[str], None] | None
    ) -> None:
        config = prepared.config
        self._plan = plan
        if plan.sandbox is not None:  # the attempts' options as the sandboxed agent sees them
            self._plan = replace(plan, base_options=inside_options(plan.base_options, plan.sandbox))
        self._dispatch = Dispatch(config.agent, plan.start_options, config.concurrency,
                                  config.max_memory_mb, config.isolation, notice,
                                  plan.sandbox)  # fmt: skip

    @property
    def warnings(self) -> list[str]:
        return self._dispatch.warnings

    def run(self, pending: Sequence[int], attempt: TryAttempt, record: Record) -> bool:
        def on_worker(worker: Worker, position: int, stop: threading.Event) -> Scored:
            return attempt(LocalSlot(self._plan, worker), position, stop)

        return self._dispatch.run(pending, on_worker, record)
