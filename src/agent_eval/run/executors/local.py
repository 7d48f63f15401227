"""The local executor: worker processes on this machine, forked from a zygote."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from agent_eval.records import Task
from agent_eval.run.attempt import AttemptPlan, Scored, run_attempt
from agent_eval.run.executors.pool import Dispatch
from agent_eval.run.executors.protocol import Record, TryAttempt
from agent_eval.run.executors.sandboxed import inside_options
from agent_eval.run.executors.worker import Worker

if TYPE_CHECKING:
    from agent_eval.run.prepared import PreparedRun


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

    def start(self) -> None:
        self._dispatch.start()

    def close(self) -> None:
        self._dispatch.close()

    def run(self, pending: Sequence[int], attempt: TryAttempt, record: Record) -> bool:
        def on_worker(worker: Worker, position: int, stop: threading.Event) -> Scored:
            return attempt(LocalSlot(self._plan, worker), position, stop)

        return self._dispatch.run(pending, on_worker, record)
