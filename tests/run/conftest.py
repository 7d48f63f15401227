"""Real Ray for the executor's tests, started by the tests and shared: Ray takes seconds
to start, so each kind of cluster starts once.

- ``ray_local``: this process's driver on a local instance (2 CPUs, no dashboard);
- ``ray_cluster``: this process's driver on a three-node cluster on this machine;
- ``ray_head``: a head node started with ``ray start --head`` on 127.0.0.1, for the
  CLI runs, which are drivers of their own.

One process has one driver, so ``ray_cluster`` ends the local instance first and
``ray_local`` starts it again when a later test asks.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent_eval.sandbox.bwrap import unavailable

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no network here, and no prompt

WHY_NOT = unavailable()
"""Why the kernel sandbox cannot start on this machine, or None."""
needs_sandbox = pytest.mark.skipif(
    WHY_NOT is not None and not os.environ.get("CI"),
    reason=f"the sandbox cannot start here: {WHY_NOT}",
)
"""In CI the sandbox must start, so a test that needs it fails there rather than skip."""
AGENT_EVAL = Path(sys.executable).with_name("agent-eval")


def write_in_pieces(stream: Any, data: bytes, cuts: list[int]) -> None:
    """Write ``data`` to ``stream`` cut where ``cuts`` say (taken modulo its length), as
    a pipe may deliver it, then close the stream."""
    start = 0
    for cut in sorted(c % (len(data) + 1) for c in cuts):
        stream.write(data[start:cut])
        start = max(start, cut)
    stream.write(data[start:])
    stream.close()


_current: dict[str, Any] = {}


def _shutdown() -> None:
    import ray

    if ray.is_initialized():
        ray.shutdown()
    cluster = _current.pop("cluster", None)
    if cluster is not None:
        cluster.shutdown()
    _current.clear()


@pytest.fixture(scope="session")
def _ray_session() -> Iterator[None]:
    yield
    _shutdown()


@pytest.fixture
def ray_local(_ray_session: None) -> None:
    import ray

    if _current.get("kind") != "local":
        _shutdown()
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
        _current["kind"] = "local"


@pytest.fixture
def ray_cluster(_ray_session: None) -> Any:
    """A head and two worker nodes, one CPU each; a node's death is noticed in about
    8 s rather than the default half minute (and a busy machine is not taken for one)."""
    import ray
    from ray.cluster_utils import Cluster

    if _current.get("kind") != "cluster":
        _shutdown()
        config = {"health_check_period_ms": 1000, "health_check_failure_threshold": 8}
        cluster = Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": 1, "include_dashboard": False, "_system_config": config},
        )
        for _ in range(2):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False)
        _current.update(kind="cluster", cluster=cluster)
    return _current["cluster"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def free_port() -> Callable[[], int]:
    """A port on 127.0.0.1 that nothing listens on (yet)."""
    return _free_port


@dataclass(frozen=True)
class Head:
    """A running head node: its addresses, and the environment a driver needs for it."""

    address: str
    client_address: str
    env: dict[str, str]


@pytest.fixture(scope="session")
def ray_head(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Head]:
    """``ray start --head --block`` on 127.0.0.1 with token auth, stopped with Ctrl-C
    (which stops the processes it started, and only those)."""
    port, client_port = _free_port(), _free_port()
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    log = tmp_path_factory.mktemp("ray-head") / "head.log"
    # its own temp folder, short enough for Ray's socket paths: a `ray.init()` elsewhere
    # on this machine never finds this head and joins it
    temp = tempfile.mkdtemp(prefix="ae-ray-", dir="/tmp")
    ray = str(Path(sys.executable).with_name("ray"))
    with log.open("w") as sink:
        head = subprocess.Popen(
            [ray, "start", "--head", "--block", "--node-ip-address", "127.0.0.1",
             "--port", str(port), "--ray-client-server-port", str(client_port),
             "--num-cpus", "2", "--include-dashboard", "false", "--disable-usage-stats",
             "--temp-dir", temp],
            stdout=sink, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while "Ray runtime started" not in log.read_text():
            if head.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ray start failed:\n{log.read_text()}")
            time.sleep(0.2)
        yield Head(f"127.0.0.1:{port}", f"ray://127.0.0.1:{client_port}", env)
    finally:
        head.send_signal(signal.SIGINT)
        try:
            head.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait()
        shutil.rmtree(temp, ignore_errors=True)
