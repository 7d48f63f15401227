"""Attempts on a Ray cluster, with the driver as the only writer.

The run's inputs travel once as the runtime_env ``working_dir`` (run/executors/travel.py) and its
secrets as an environment variable. Each node with CPUs gets one slot group
(run/executors/ray_slots.py) with its share of ``--concurrency`` slots; the driver keeps one thread
per slot, so at most ``--concurrency`` attempts are in flight across the cluster, and
each scored try comes back as it finishes, to be journaled at once. A group that dies
mid-attempt (its process, or its node) gives each of its attempts an ``infra_error``,
which the driver retries under --max-infra-retries on a replacement group.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ray
from ray.exceptions import ObjectLostError, RayActorError, RayTaskError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from agent_eval import __version__
from agent_eval.errors import AgentEvalError, AgentLoadError, ConfigError
from agent_eval.records import Task
from agent_eval.redaction import Redactor
from agent_eval.replay import recording_name
from agent_eval.run.attempt import AttemptPlan, Outcome, Scored, run_attempt
from agent_eval.run.executors.cluster import (
    all_here,
    cluster_nodes,
    refuse_unreachable,
    split_slots,
    this_machine,
)
from agent_eval.run.executors.pool import serve_all
from agent_eval.run.executors.protocol import Record, TryAttempt
from agent_eval.run.executors.ray_slots import SECRETS_ENV, SlotGroup, split_secrets
from agent_eval.run.executors.travel import Travel, gather

if TYPE_CHECKING:
    from agent_eval.run.prepared import PreparedRun

PROBE_WAIT = 5.0
"""Seconds to wait for the cluster's port to answer before giving up."""
RESTARTS = 3
"""Tries at starting a group again after it died, before the run gives up."""
CLOSE_WAIT = 60.0
"""Seconds the agents' close() may take on every node together."""
CLIENT_TRIES = 3
"""Tries at opening a Ray Client (ray://) session. The cluster's proxy forks a server per
session, and that server sometimes dies as it starts (a fork race between gRPC threads,
about one session in ten here); the next session works."""
CLIENT_SESSION_DIED = "Initialization failure from server"


class RayExecutor:
    """Slot groups on the nodes of a Ray cluster: ``--executor ray``."""

    def __init__(
        self, prepared: PreparedRun, plan: AttemptPlan, notice: Callable[[str], None] | None
    ) -> None:
        self._prepared, self._plan, self._notice = prepared, plan, notice
        self.warnings: list[str] = []

    def start(self) -> None:
        """Nothing: the cluster is reached, and the slots start, in run()."""

    def close(self) -> None:
        """Nothing: run() ends what it started."""

    def run(self, pending: Sequence[int], attempt: TryAttempt, record: Record) -> bool:
        if not pending:
            return False
        config = self._prepared.config
        public, secret = split_secrets(self._plan.base_options)
        with tempfile.TemporaryDirectory(prefix="agent-eval-ray-") as scratch:
            travel = gather(self._prepared, Path(scratch) / "files")
            with _notices_on_stderr(), _connected(config.ray_address, self._notice):
                nodes, here = cluster_nodes(), this_machine()
                refuse_unreachable(config.base_url, nodes, here)
                env = {"working_dir": ship(travel, all_here(nodes, here)),
                       "env_vars": {SECRETS_ENV: json.dumps(secret)}}  # fmt: skip
                shares = split_slots(min(config.concurrency, len(pending)), nodes)
                # secrets travel in the environment only; each group makes its own redactor
                plan = replace(self._plan, base_options=public, redact=Redactor([]))
                groups = _Groups(plan, config.agent, (config.max_memory_mb, config.isolation),
                                 travel, env, shares)  # fmt: skip
                try:
                    return _serve(groups, self._plan, pending, attempt, record)
                finally:
                    self.warnings.extend(groups.close())


@contextmanager
def _notices_on_stderr() -> Iterator[None]:
    """Ray prints the cluster's notices (a worker died...) on stdout, where they would
    break the console's attempt lines; while we run they go to stderr instead."""
    import ray._private.worker as driver

    original = driver.print_to_stdstream

    def to_stderr(data: dict[str, Any], ignore_prefix: bool) -> None:
        original({**data, "is_err": True}, ignore_prefix)

    driver.print_to_stdstream = to_stderr
    try:
        yield
    finally:
        driver.print_to_stdstream = original


@contextmanager
def _connected(address: str | None, notice: Callable[[str], None] | None) -> Iterator[None]:
    """Connect to the cluster, or start a local one when ``address`` is None, and
    disconnect at the end; a caller's own connection is used as it is."""
    if ray.is_initialized():
        yield
        return
    _probe(address)
    local: dict[str, Any] = {"include_dashboard": False} if address is None else {}
    for tried in range(1, CLIENT_TRIES + 1):
        try:
            # "local" starts a new instance; None would join one some other program started
            ray.init(address=address or "local", log_to_driver=False,
                     logging_level=logging.ERROR, **local)  # fmt: skip
            break
        except (OSError, ValueError, RuntimeError) as exc:
            reason = _first_line(exc)
            if not reason.startswith(CLIENT_SESSION_DIED) or tried == CLIENT_TRIES:
                if address is None:
                    raise ConfigError(f"--executor ray: a local Ray instance did not start "
                                      f"({reason})") from None  # fmt: skip
                raise ConfigError(
                    f"--ray-address {address}: Ray did not connect ({reason}); check that a "
                    f"cluster runs there (`ray status`), and if it uses token authentication, "
                    f"give this process RAY_AUTH_MODE=token and RAY_AUTH_TOKEN (or "
                    f"~/.ray/auth_token)"
                ) from None
            ray.shutdown()
            if notice is not None:
                notice(f"ray: the cluster's Ray Client server lost the new session as it "
                       f"started, a known intermittent Ray fault; trying again "
                       f"({tried + 1} of {CLIENT_TRIES})")  # fmt: skip
    try:
        yield
    finally:
        ray.shutdown()


def _probe(address: str | None) -> None:
    """Fail in seconds on a HOST:PORT nobody listens on (Ray itself retries for minutes)."""
    host, sep, port = (address or "").removeprefix("ray://").rpartition(":")
    if not (sep and host and port.isdigit()):
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_WAIT).close()
    except OSError as exc:
        raise ConfigError(
            f"--ray-address {address}: cannot reach the Ray cluster ({_first_line(exc)}); "
            f"start one with `ray start --head`, or give its address (auto, HOST:6379 or "
            f"ray://HOST:10001)"
        ) from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def ship(travel: Travel, here: bool) -> str:
    """The working_dir URI: the folder in place when every node is this machine, else
    the folder zipped once into the cluster's store, from where each node fetches it."""
    if here:
        return f"local://{travel.root}"
    from ray._private.runtime_env.working_dir import upload_working_dir_if_needed

    env = upload_working_dir_if_needed({"working_dir": str(travel.root)},
                                       include_gitignore=False,
                                       scratch_dir=str(travel.root.parent))  # fmt: skip
    return str(env["working_dir"])


class _Groups:
    """The slot groups, one per node, each replaced when it dies."""

    def __init__(
        self,
        plan: AttemptPlan,
        spec: str,
        limits: tuple[int | None, str],
        travel: Travel,
        runtime_env: dict[str, Any],
        shares: dict[str, int],
    ) -> None:
        self._args = (plan, spec, limits)
        self._paths, self._env = travel.paths(), runtime_env
        self.slots = [(node, n) for node, n in shares.items() for _ in range(n)]
        self._handles = {node: self._start(node, n, soft=False) for node, n in shares.items()}
        self._shares = shares
        self._lock = threading.Lock()
        try:
            self._await(list(self._handles.values()))
        except RayActorError as exc:
            self.kill()
            raise AgentLoadError(f"agent {spec}: a slot group did not start: {exc}") from None
        except BaseException:
            self.kill()
            raise

    def _start(self, node: str, slots: int, soft: bool) -> Any:
        options: dict[str, Any] = {
            "num_cpus": 0,  # the attempts wait on model calls; --concurrency bounds them
            "max_concurrency": slots,
            "scheduling_strategy": NodeAffinitySchedulingStrategy(node, soft=soft),
            "runtime_env": self._env,
        }
        return ray.remote(SlotGroup).options(**options).remote(*self._args, slots, self._paths)

    def _await(self, handles: list[Any]) -> None:
        """Wait until every group has built its first slot; AgentLoadError if a build()
        failed, ConfigError if a node has another agent-eval, RayActorError if a group
        died first."""
        for report in ray.get([h.ready.remote() for h in handles]):
            if report["failed"]:
                raise AgentLoadError(report["failed"])
            if report["version"] != __version__:  # results must not mix harness versions
                raise ConfigError(
                    f"--executor ray: node {report['node'][:12]} has agent-eval "
                    f"{report['version']}, this machine {__version__}; install the same "
                    f"version on every node"
                )

    def handle(self, node: str) -> Any:
        """The live group of ``node``'s slots, started again if it died: on that node
        while it lives, elsewhere once it is gone."""
        with self._lock:
            handle = self._handles[node]
            for _ in range(RESTARTS):
                if handle is not None:
                    break
                handle = self._start(node, self._shares[node], soft=True)
                try:
                    self._await([handle])
                except RayActorError:  # its node died too
                    handle = None
            if handle is None:
                raise AgentLoadError(
                    f"agent {self._args[1]}: its slot group died {RESTARTS} times on start"
                )
            self._handles[node] = handle
            return handle

    def lost(self, node: str, handle: Any) -> None:
        with self._lock:
            if self._handles[node] is handle:
                self._handles[node] = None
                with contextlib.suppress(Exception):
                    ray.kill(handle)

    def kill(self) -> None:
        for handle in self._handles.values():
            if handle is not None:
                with contextlib.suppress(Exception):
                    ray.kill(handle)

    def close(self) -> list[str]:
        """Have every agent close() (within CLOSE_WAIT), then end the groups."""
        live = [h for h in self._handles.values() if h is not None]
        warnings: list[str] = []
        with contextlib.suppress(Exception):
            done = ray.get([h.close.remote() for h in live], timeout=CLOSE_WAIT)
            warnings = [w for group in done for w in group]
        self.kill()
        return warnings


@dataclass(frozen=True)
class _Lost:
    """Stands in for the worker of an attempt whose slot group died."""

    reason: str
    folder: Path | None = None
    """No slot folder: its workspace is made in the scratch root."""

    def run(self, task: str, options: dict[str, Any], timeout: float | None) -> Outcome:
        return Outcome(None, self.reason, "infra_error")


@dataclass(frozen=True)
class RaySlot:
    """One slot of a node's group, seen from the driver."""

    groups: _Groups
    node: str
    plan: AttemptPlan
    """The driver's plan: for where trajectories go, and for a lost attempt's record."""

    def run_try(self, task: Task, attempt: int) -> Scored:
        handle = self.groups.handle(self.node)
        try:
            scored: Scored = ray.get(handle.run_try.remote(task, attempt))
        except (RayActorError, ObjectLostError) as exc:  # the group died, or its node did
            self.groups.lost(self.node, handle)
            lost = _Lost(f"ray slot group died: {_first_line(exc)}")
            scored = run_attempt(self.plan, lost, task, attempt)
        except RayTaskError as exc:
            if isinstance(exc.cause, AgentEvalError):  # a slot's build() failed
                raise exc.cause from None
            raise
        where = {"trajectory_file": str(self.plan.trajectory_ref / scored.name)}
        if scored.row.recording_file:
            where["recording_file"] = str(self.plan.trajectory_ref / recording_name(scored.name))
        # the node redacted its own secrets; the driver's (its environment's) go too
        redact = self.plan.redact
        return replace(scored, row=scored.row.model_copy(update=where),
                       trajectory=redact(scored.trajectory), diff=redact(scored.diff),
                       recording=redact(scored.recording))  # fmt: skip


def _serve(
    groups: _Groups, plan: AttemptPlan, pending: Sequence[int], attempt: TryAttempt,
    record: Record,
) -> bool:  # fmt: skip
    """One driver thread per slot; first Ctrl-C drains, a second kills the groups."""
    slots = [RaySlot(groups, node, plan) for node, _ in groups.slots]
    return serve_all(slots, pending, attempt, record, groups.kill, threading.Event())
