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
- cpu ms/attempt: the machine's busy CPU time over the run, less the scripted server's,
  per attempt: the harness, Ray's processes, the attempts' copies and the kernel's work
  for them (run it on an otherwise idle machine: the load average is printed);
  steady cpu ms: the same between the first and the last finished attempt.

The run's results, journal and trajectories go to --scratch, by default a RAM-backed
folder when the machine has one (/dev/shm), so that the figures are the harness's and
not the disk's: on ext4 mounted without a journal, creating a file scans past the
inodes deleted in the last minutes, so one run's deleted trajectories would make the
next run's cost more (0.6-0.8 ms per file here, against 0.005 ms in RAM).

    .venv/bin/python benchmarks/ray_executor.py [--repeats 200] [--concurrency 64]
        [--executors local,ray,ray-3-nodes] [--isolation attempt|worker] [--scratch DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

from concurrency import SCRIPT, add_scratch_option, load_average, mock_model, process_cpu

from agent_eval.run.observers import EachAttempt
from agent_eval.run.runner import execute, prepare
from agent_eval.run.settings import ISOLATIONS, Isolation, RunConfig
from agent_eval.suite import load_suite

TICK = os.sysconf("SC_CLK_TCK")


def busy_cpu() -> float:
    """CPU seconds this machine's cores have been busy (user, system, interrupts, steal),
    from /proc/stat. It counts every process, however short its life: Ray's, whose
    parents are not this one, and the copies of ``--isolation attempt``, which live for
    one attempt."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(fields) - fields[3] - fields[4]) / TICK  # less idle and iowait


def cpu_split(server: int) -> tuple[float, float]:
    """CPU seconds so far of the harness (the machine's busy time less the scripted
    server's) and of the server."""
    served = process_cpu(server)
    return busy_cpu() - served, served


def timed_run(
    executor: str, script: Path, latency: float, repeats: int, level: int,
    isolation: Isolation, scratch_in: str | None,
) -> dict[str, Any]:  # fmt: skip
    tasks = tuple(t.id for t in load_suite("part26").suite.tasks[:10])
    with mock_model(script, latency) as (base_url, server, served), \
            tempfile.TemporaryDirectory(dir=scratch_in) as scratch:  # fmt: skip
        config = RunConfig(
            agent="builtin:minimal", tasks="part26", task_ids=tasks, repeats=repeats,
            base_url=base_url, model="mock", concurrency=level, out=Path(scratch) / "r.json",
            trajectory_dir=Path(scratch) / "traj",
            executor="local" if executor == "local" else "ray", isolation=isolation,
        )  # fmt: skip
        prepared = prepare(config)
        finished: list[float] = []
        steady: list[float] = []  # the harness's CPU at the first and the last finish

        def on_attempt(row: object) -> None:
            finished.append(time.perf_counter())
            if len(finished) in (1, prepared.attempts):
                steady.append(cpu_split(server)[0])

        before, start = cpu_split(server), time.perf_counter()
        execute(prepared, EachAttempt(on_attempt))
        wall = time.perf_counter() - start
        cpu, server_cpu = (b - a for a, b in zip(before, cpu_split(server), strict=True))
    calls, attempts = served[0], prepared.attempts
    ideal = calls * latency / level
    first = finished[0] - start - 2 * latency
    return {
        "executor": executor, "attempts": attempts, "calls": calls,
        "wall s": round(wall, 2), "ideal s": round(ideal, 2), "ratio": round(wall / ideal, 2),
        "start s": round(first, 2),
        "steady": round((finished[-1] - finished[0]) / (ideal - 2 * latency), 2),
        "cpu ms/attempt": round(1000 * cpu / attempts, 1),
        "steady cpu ms": round(1000 * (steady[1] - steady[0]) / (attempts - 1), 1),
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
    add_scratch_option(parser)
    args = parser.parse_args()
    print(f"builtin:minimal, 10 part26 tasks x {args.repeats} repeats, concurrency "
          f"{args.concurrency}, {1000 * args.latency:.0f} ms per model reply, "
          f"--isolation {args.isolation}")  # fmt: skip
    print(f"outputs in {args.scratch or tempfile.gettempdir()}")
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
                                args.isolation, args.scratch)  # fmt: skip
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
