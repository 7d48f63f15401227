"""A slot group: the local executor's worker-process machinery, inside a Ray actor.

One group runs on one node. It forks its worker processes from its own zygote (with the
run's sandbox, a zygote in the group's sandbox on the node), so each
attempt keeps the isolation, time budget and memory limit it has on one machine: the
budget is enforced here, on the node, even when the agent never returns. Each slot is
one worker, whose build() runs once. The group returns scored tries to the driver and
writes nothing but the attempts' scratch workspaces.

It runs in the folder Ray unpacked the runtime_env ``working_dir`` into (run/executors/travel.py)
and reads the run's secrets from one environment variable, so neither the secrets nor
the driver's paths are in the actor's arguments.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
from dataclasses import replace
from pathlib import Path
from typing import Any

import ray

from agent_eval import __version__
from agent_eval.errors import AgentLoadError
from agent_eval.records import Task
from agent_eval.redaction import Redactor, secret_option_names
from agent_eval.run.attempt import AttemptPlan, Scored, run_attempt
from agent_eval.run.executors.pool import make_worker, start_workers
from agent_eval.run.executors.sandboxed import inside_options
from agent_eval.run.executors.worker import Worker
from agent_eval.run.workspace import run_scratch, slot_folder
from agent_eval.sandbox import bwrap_binary, unavailable

SECRETS_ENV = "AGENT_EVAL_RUN_SECRET"
"""The environment variable that carries the run's secret options (JSON) to the nodes."""


def split_secrets(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """Options without their secrets (to travel as arguments), and the secrets (to
    travel as an environment variable)."""
    names = secret_option_names(options)
    secret = {k: v for k, v in options.items() if v and k in names}
    return {k: v for k, v in options.items() if k not in secret}, secret


class SlotGroup:
    """Worker processes on one node, one per slot; Ray runs one call per slot at once."""

    def __init__(
        self,
        plan: AttemptPlan,
        spec: str,
        limits: tuple[int | None, Any],
        slots: int,
        paths: dict[str, Any],
    ) -> None:
        """``paths`` are the run's inputs inside the working_dir: source, index, suite_dir
        and agent_file (a .py agent's file), each relative, or None."""
        root = Path.cwd()
        secret: dict[str, str] = json.loads(os.environ.pop(SECRETS_ENV, "{}"))
        here = {k: str(root / v) if v else None for k, v in paths.items()}
        spec = here["agent_file"] or spec
        options = {**plan.base_options, **secret, "workspace": here["source"],
                   "index": here["index"], "log_dir": str(root / "logs")}  # fmt: skip
        node = ray.get_runtime_context().get_node_id()
        self._failed: str | None = None
        sandbox = plan.sandbox
        if sandbox is not None:  # as the driver chose, with this node's paths and bwrap
            why, binary = unavailable(), bwrap_binary()
            if why is not None or binary is None:
                self._failed = f"--sandbox: on node {node}, {why}"
            hide = (str(Path.home()), str(here["suite_dir"]), str(root / "logs"))
            sandbox = replace(sandbox, binary=binary or sandbox.binary, keep=(str(root),),
                              hide=hide)  # fmt: skip
        self._plan = replace(
            plan,
            base_options=options if sandbox is None else inside_options(options, sandbox),
            source=Path(here["source"]) if here["source"] else None,
            suite_dir=Path(str(here["suite_dir"])),
            redact=Redactor.for_run(None, options),  # and this node's environment's
            meta={**plan.meta, "ray_node_id": node},
            sandbox=sandbox,
            attempt_logs_mb=None,  # the driver's trajectory folder is not on this node
        )
        if self._plan.proxy is not None:  # this node's own proxy, for its slots' attempts
            self._plan.proxy.use_redactor(self._plan.redact)
        self._scratch = contextlib.ExitStack()
        scratch = self._scratch.enter_context(run_scratch())
        start = replace(self._plan, base_options=options).start_options
        self._starter = start_workers(spec, start, slots, sandbox, scratch, self._plan.redact)
        memory_mb, isolation = limits  # --max-memory-mb and --isolation, as on one machine
        self._workers = [make_worker(self._starter, spec, options, memory_mb, isolation, sandbox,
                                     slot_folder(scratch, n), slots)
                         for n in range(slots)]  # fmt: skip
        self._idle: queue.SimpleQueue[Worker] = queue.SimpleQueue()
        for worker in self._workers:
            self._idle.put(worker)
        if self._failed is None:
            try:
                self._workers[0].start()  # the first build() now: a failing one fails fast
            except AgentLoadError as exc:
                self._failed = str(exc)
        self._node = node

    def ready(self) -> dict[str, Any]:
        """The node, the harness version there, and why build() failed (or None)."""
        return {"node": self._node, "version": __version__, "failed": self._failed}

    def run_try(self, task: Task, attempt: int) -> Scored:
        worker = self._idle.get()
        try:
            worker.ready()  # before its workspace is made: a new sandbox has a new folder
            return run_attempt(self._plan, worker, task, attempt)
        finally:
            self._idle.put(worker)

    def close(self) -> list[str]:
        """Have every agent close(), end the processes; the close() failures, if any."""
        for worker in self._workers:
            worker.ask_to_close()
        warnings = []
        for worker in self._workers:
            worker.close()
            if worker.close_warning:
                warnings.append(worker.close_warning)
        self._starter.close()
        self._scratch.close()
        if self._plan.proxy is not None:
            self._plan.proxy.close()
        return warnings
