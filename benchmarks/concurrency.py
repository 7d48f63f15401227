"""Wall time of a real agent against a model endpoint with fixed latency, by concurrency.

builtin:minimal runs part26 (15 tasks x 20 repeats) against the scripted model server
with 100 ms per reply: each attempt searches once, then answers, so two model calls.
The ideal wall time is model calls x latency / concurrency; the ratio shows what the
harness adds on top (worker start-up included).

    .venv/bin/python benchmarks/concurrency.py [--repeats 20] [--latency 0.1] [--levels 1,8,32]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from agent_eval.models.mock_script import parse_script
from agent_eval.models.mock_server import MockModelServer
from agent_eval.run.config import RunConfig
from agent_eval.run.runner import execute, prepare

SCRIPT = {
    "replies": [
        {"tool_calls": [{"name": "search_documents", "arguments": {"query": "backup window"}}]},
        {"content": "The backup window runs from 02:00 to 04:00 every Sunday."},
    ]
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--levels", default="1,8,32")
    args = parser.parse_args()
    print(f"builtin:minimal, part26 15 tasks x {args.repeats} repeats, "
          f"{1000 * args.latency:.0f} ms per model reply")
    print(f"{'concurrency':>11} {'calls':>6} {'wall s':>8} {'ideal s':>8} {'ratio':>6}")
    for level in (int(x) for x in args.levels.split(",")):
        with MockModelServer(parse_script(SCRIPT), latency=args.latency) as server, \
                tempfile.TemporaryDirectory() as scratch:  # fmt: skip
            config = RunConfig(
                agent="builtin:minimal", tasks="part26", repeats=args.repeats,
                base_url=server.base_url, model="mock", concurrency=level,
                out=Path(scratch) / "r.json", trajectory_dir=Path(scratch) / "traj",
            )  # fmt: skip
            prepared = prepare(config)
            start = time.perf_counter()
            execute(prepared)
            wall = time.perf_counter() - start
            calls = server.request_count
        ideal = calls * args.latency / level
        print(f"{level:>11} {calls:>6} {wall:>8.2f} {ideal:>8.2f} {wall / ideal:>6.2f}")


if __name__ == "__main__":
    main()
