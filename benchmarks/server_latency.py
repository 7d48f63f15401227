"""Time per request of the scripted model server with no scripted latency: what the
HTTP stack itself adds to every model call an agent makes.

N client processes each make M sequential chat-completion calls over one keep-alive
httpx connection, as an agent's client does, against `agent-eval mock-model` in its own
process. A response written in two parts on a connection with Nagle's algorithm on
waits for the client's delayed ACK, about 40 ms a call; with TCP_NODELAY it is about a
millisecond.

    .venv/bin/python benchmarks/server_latency.py [--clients 4] [--calls 50] [--latency 0]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import tempfile
import time
from pathlib import Path

import httpx
from concurrency import SCRIPT, load_average, mock_model

BODY = {"model": "mock", "messages": [{"role": "user", "content": "hi"}]}


def client(base_url: str, calls: int) -> list[float]:
    """Seconds of each of ``calls`` sequential requests on one connection."""
    seconds = []
    with httpx.Client(timeout=30) as http:
        for _ in range(calls):
            start = time.perf_counter()
            http.post(f"{base_url}/chat/completions", json=BODY).raise_for_status()
            seconds.append(time.perf_counter() - start)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--latency", type=float, default=0.0)
    args = parser.parse_args()
    print(f"load average before: {load_average()}")
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "script.json"
        script.write_text(json.dumps(SCRIPT), encoding="utf-8")
        with mock_model(script, args.latency) as (base_url, _, _), \
                multiprocessing.get_context("spawn").Pool(args.clients) as pool:  # fmt: skip
            runs = pool.starmap(client, [(base_url, args.calls)] * args.clients)
    seconds = [s for run in runs for s in run]
    p50, p95 = statistics.median(seconds), statistics.quantiles(seconds, n=20)[18]
    print(f"{args.clients} clients x {args.calls} calls, scripted latency "
          f"{1000 * args.latency:.0f} ms: p50 {1000 * p50:.1f} ms, p95 {1000 * p95:.1f} ms "
          f"a call")  # fmt: skip


if __name__ == "__main__":
    main()
