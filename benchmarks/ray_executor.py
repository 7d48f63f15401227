"""Wall time of 2,000 attempts at concurrency 64 on each executor: the local worker
processes, Ray on a local instance, and Ray on a three-node cluster on this machine.

builtin:minimal runs 10 part26 tasks x 200 repeats against the scripted model server
(`agent-eval mock-model` in its own process, 100 ms per reply): one search, one answer,
so two model calls per attempt. For each executor:

- start: from execute() to the first finished attempt, less that attempt's own two
  model calls (for local Ray this includes starting the instance; the three-node
  cluster is up before, as a user's cluster is, and its start is printed apart);
- ratio: wall / ideal, ideal = calls x latency / concurrency;
- steady: the ratio once started, (last finish - first finish) / (ideal - 2 x latency);
- cpu ms/attempt: every process of the harness and of Ray on this machine (this one, the
  zygotes and workers, Ray's GCS, raylets and actors), the server's left out.

    .venv/bin/python benchmarks/ray_executor.py [--repeats 200] [--concurrency 64]
        [--executors local,ray,ray-3-nodes] [--isolation attempt|worker]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from concurrency import SCRIPT, load_average, mock_model, process_cpu

from agent_eval.run.config import ISOLATIONS, Isolation, RunConfig
from agent_eval.run.runner import execute, prepare
from agent_eval.suite import load_suite

TICK = os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """CPU seconds of a process tree, sampled every 0.2 s from /proc: each process's own
    user and system time, from when it is first seen (or the start) to its last sample.
    Ray's processes are not all reaped by this one, so rusage would miss them; this misses
    only what a process spends in its last 0.2 s or a life shorter than that."""

    def __init__(self, root: int, leave_out: int) -> None:
        self._root, self._leave_out = root, leave_out
        self._first: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._done = threading.Event()
        self._sample(baseline=True)
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._done.wait(0.2):
            self._sample(baseline=False)

    def _sample(self, baseline: bool) -> None:
        parents: dict[int, int] = {}
        times: dict[int, float] = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry.name)] = int(fields[1])
            times[int(entry.name)] = (int(fields[11]) + int(fields[12])) / TICK
        children: dict[int, list[int]] = {}
        for pid, parent in parents.items():
            children.setdefault(parent, []).append(pid)
        stack = [self._root]
        while stack:
            pid = stack.pop()
            self._first.setdefault(pid, times.get(pid, 0.0) if baseline else 0.0)
            self._last[pid] = times.get(pid, self._last.get(pid, 0.0))
            stack.extend(c for c in children.get(pid, []) if c != self._leave_out)

    def stop(self) -> float:
        self._done.set()
        self._thread.join()
        self._sample(baseline=False)
        return sum(self._last[pid] - self._first[pid] for pid in self._last)


def timed_run(
    executor: str, script: Path, latency: float, repeats: int, level: int, isolation: Isolation
) -> dict[str, Any]:
    tasks = tuple(t.id for t in load_suite("part26").suite.tasks[:10])
    with mock_model(script, latency) as (base_url, server, served), \
            tempfile.TemporaryDirectory() as scratch:  # fmt: skip
        config = RunConfig(
            agent="builtin:minimal", tasks="part26", task_ids=tasks, repeats=repeats,
            base_url=base_url, model="mock", concurrency=level, out=Path(scratch) / "r.json",
            trajectory_dir=Path(scratch) / "traj",
            executor="local" if executor == "local" else "ray", isolation=isolation,
        )  # fmt: skip
        prepared = prepare(config)
        finished: list[float] = []
        meter, server_cpu = CpuMeter(os.getpid(), server), process_cpu(server)
        start = time.perf_counter()
        execute(prepared, lambda row: finished.append(time.perf_counter()))
        wall = time.perf_counter() - start
        cpu, server_cpu = meter.stop(), process_cpu(server) - server_cpu
    calls = served[0]
    ideal = calls * latency / level
    first = finished[0] - start - 2 * latency
    return {
        "executor": executor, "attempts": prepared.attempts, "calls": calls,
        "wall s": round(wall, 2), "ideal s": round(ideal, 2), "ratio": round(wall / ideal, 2),
        "start s": round(first, 2),
        "steady": round((finished[-1] - finished[0]) / (ideal - 2 * latency), 2),
        "cpu ms/attempt": round(1000 * cpu / prepared.attempts, 1),
        "server ms/call": round(1000 * server_cpu / calls, 2),
    }  # fmt: skip


def three_nodes() -> Any:
    """A head and two worker nodes of one CPU each on this machine, and this process
    connected to it as the driver."""
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1,
                      "include_dashboard": False})  # fmt: skip
    for _ in range(2):
        cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    return cluster


def main() -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)  # see benchmarks/concurrency.py
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--executors", default="local,ray,ray-3-nodes")
    parser.add_argument("--isolation", choices=ISOLATIONS, default="attempt")
    args = parser.parse_args()
    print(f"builtin:minimal, 10 part26 tasks x {args.repeats} repeats, concurrency "
          f"{args.concurrency}, {1000 * args.latency:.0f} ms per model reply, "
          f"--isolation {args.isolation}")  # fmt: skip
    print(f"load average before: {load_average()}")
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "script.json"
        script.write_text(json.dumps(SCRIPT), encoding="utf-8")
        for executor in args.executors.split(","):
            cluster = None
            if executor == "ray-3-nodes":
                clock = time.perf_counter()
                cluster = three_nodes()
                print(f"three-node cluster up in {time.perf_counter() - clock:.1f} s")
            try:
                row = timed_run(executor, script, args.latency, args.repeats, args.concurrency,
                                args.isolation)  # fmt: skip
            finally:
                if cluster is not None:
                    import ray

                    ray.shutdown()
                    cluster.shutdown()
            if executor == args.executors.split(",")[0]:
                print("  ".join(f"{k:>{len(k) if k != 'executor' else 11}}" for k in row))
            print("  ".join(f"{v!s:>{len(k) if k != 'executor' else 11}}"
                            for k, v in row.items()), flush=True)  # fmt: skip
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
