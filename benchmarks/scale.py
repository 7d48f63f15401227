"""Wall time and peak memory of `agent-eval report` and `agent-eval compare` at scale.

Two synthetic runs of one suite (1,000 tasks x 100 repeats = 100,000 attempt rows
each by default) are written in the runner's results shape and by its own writer:
`run` with its summary, `per_task`, and `results` one row per line, every row
validated by AttemptResult on the way. Answers are
a few hundred characters, checks are filled in the way the scorer fills them, and
failures are spread over every failure class. Each command then runs as a fresh
`python -m agent_eval` subprocess with its output sent to a file.

Peak memory is the child's own maximum resident set size, read from the rusage that
os.wait4 returns for that one child (not RUSAGE_CHILDREN, which is a maximum over
every child so far). Linux carries a process's high-water mark across exec, so the
files are generated in a separate process and this one stays small: otherwise every
child would report at least the generator's peak. Wall time includes interpreter
start-up and imports, as a user would see it.

Trajectory files are named in the rows but not written, so the HTML report pays for
looking up those of the attempts it shows (at this size, each task's first failing one)
but embeds none.

    .venv/bin/python benchmarks/scale.py [--tasks 1000] [--repeats 100] [--runs 1]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_SECONDS = 2.0
"""Wall or CPU: a loaded machine stretches wall time, so either under it counts."""
TARGET_MB = 500.0
CATEGORIES = (
    "retrieval",
    "arithmetic",
    "state",
    "tool-use",
    "refusal",
    "multi-hop",
    "config",
    "summary",
)
TOOLS = ("search_documents", "read_file", "list_files", "write_file", "run_sql")
WORDS = (
    "the",
    "backup",
    "window",
    "runs",
    "from",
    "02:00",
    "to",
    "04:00",
    "every",
    "sunday",
    "port",
    "4000",
    "gateway",
    "config",
    "service",
    "restart",
    "deploy",
    "runbook",
    "according",
    "document",
    "section",
    "answer",
    "because",
    "value",
    "is",
    "set",
    "retention",
    "days",
    "replica",
    "primary",
    "region",
    "timeout",
    "seconds",
)
SUITE_HASH = "sha256:" + "5c" * 32


def _answer(rng: random.Random) -> str:
    """A model-like answer of roughly 150 to 600 characters."""
    words = [rng.choice(WORDS) for _ in range(rng.randint(25, 100))]
    return " ".join(words).capitalize() + "."


def _row(
    rng: random.Random,
    task_id: str,
    category: str,
    attempt: int,
    p_pass: float,
    stamp: str,
    roles: bool,
) -> dict[str, Any]:
    """One attempt row as the runner writes it."""
    passed = rng.random() < p_pass
    failure = (
        "passed"
        if passed
        else rng.choices(
            ("wrong_answer", "over_budget", "agent_error", "infra_error"), (85, 7, 5, 3)
        )[0]
    )
    steps = rng.randint(2, 14)
    prompt = rng.randint(800, 9000)
    completion = rng.randint(40, 900)
    error = {
        "over_budget": "over_budget: 120 s per task exceeded",
        "agent_error": "agent_error: KeyError: 'choices' in run_task",
        "infra_error": "infra_error: 503 Service Unavailable from the model endpoint",
    }
    tools_used = rng.sample(TOOLS, rng.randint(0, 3))
    # The same draws as before schema 2, so that figures stay comparable across it.
    missing = [] if passed or rng.random() < 0.3 else rng.sample(("4000", "sunday", "02:00"), 1)
    forbidden = [] if passed or rng.random() < 0.9 else ["8080"]
    checks = {
        "missing": missing,
        "forbidden": forbidden,
        "regex_ok": True if category != "config" else passed or rng.random() < 0.5,
        "tool_ok": True if category != "tool-use" else passed or "run_sql" in tools_used,
        "within_steps": steps <= 12 if category == "multi-hop" else True,
        "tools_used": tools_used,
        "passed": passed,
        "within_tokens": True,
        "within_seconds": failure != "over_budget",
        "state": [],
    }
    if (
        not passed
        and failure == "wrong_answer"
        and not (
            checks["missing"]
            or checks["forbidden"]
            or not checks["regex_ok"]
            or not checks["tool_ok"]
            or not checks["within_steps"]
        )
    ):
        checks["missing"] = ["4000"]
    row = {
        "id": task_id,
        "category": category,
        "attempt": attempt,
        "answer": "" if failure in ("agent_error", "infra_error") else _answer(rng),
        "steps": steps,
        "tokens": prompt + completion,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "seconds": round(rng.uniform(0.4, 45.0), 3),
        "stopped": "finished" if failure in ("passed", "wrong_answer") else failure,
        "checks": checks,
        "trajectory_file": f"trajectories/{stamp}-{task_id}-r{attempt}.jsonl",
        "failure_class": failure,
        "error": error.get(failure),
        "roles": {"planner": prompt, "executor": completion} if roles else None,
        "infra_retries": rng.choices((0, 1, 2), (95, 4, 1))[0],
        "changed_files": ["M notes/runbook.md"] if category == "state" else None,
    }
    return row


def write_run(
    path: Path, tasks: int, repeats: int, seed: int, lift: float, model: str, roles: bool
) -> None:
    """A whole results file for one run, laid out by the runner's own writer; ``lift``
    shifts every task's pass chance.
    """
    # Imported here: only the generating process may grow large (see the docstring).
    from agent_eval.results import (
        RESULTS_SCHEMA,
        AttemptResult,
        Limits,
        ResultsHead,
        RunHead,
        tally,
        write_results,
    )

    difficulty = random.Random(1234)  # one suite: both runs share the tasks' difficulty
    rng = random.Random(seed)
    stamp = f"20250101T00000{seed % 10}"
    rows = []
    for index in range(tasks):
        category = CATEGORIES[index % len(CATEGORIES)]
        task_id = f"t{index:04d}-{category}"
        p_pass = min(1.0, max(0.0, difficulty.betavariate(1.2, 0.9) + lift))
        rows += [
            _row(rng, task_id, category, attempt, p_pass, stamp, roles)
            for attempt in range(1, repeats + 1)
        ]
    validated = [AttemptResult.model_validate(r) for r in rows]
    prices = {"per_million": None, "input_per_million": 0.5, "output_per_million": 1.5}
    counted = tally(validated, prices)
    run = {
        "lab": "bench",
        "run_id": f"run{seed:08d}",
        "scaffold": "builtin:react",
        "agent_entry_point": "builtin:react",
        "task_set": "scale",
        "task_set_version": "1.0",
        "model": model,
        "router_model": None,
        "quant": None,
        "engine": None,
        "engine_version": None,
        "base_url": "http://127.0.0.1:8000/v1",
        "repeats": repeats,
        "host": "bench",
        "date": "2025-01-01",
        "wall_seconds": 3600.0,
        "notes": None,
        "summary": counted.summary(),
        "started_at": "2025-01-01T00:00:00+00:00",
        "suite_hash": SUITE_HASH,
        "harness_version": "0.1.0",
        "concurrency": 32,
        "limits": Limits(timeout_per_task=120.0, max_memory_mb=2048, max_infra_retries=2),
        "seed": seed,
        "prices": prices,
        "options": {},
        "interrupted": False,
    }
    head = ResultsHead(schema=RESULTS_SCHEMA, run=RunHead(**run), per_task=counted.per_task())
    write_results(path, head, validated)


def measure(command: list[str], out: Path) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in MB, exit code) of one fresh child, stdout
    to ``out``."""
    with out.open("wb") as sink:
        actions = [(os.POSIX_SPAWN_DUP2, sink.fileno(), 1)]
        start = time.perf_counter()
        pid = os.posix_spawn(command[0], command, os.environ, file_actions=actions)
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - start
    # ru_maxrss is in kilobytes on Linux.
    cpu = usage.ru_utime + usage.ru_stime
    return wall, cpu, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument(
        "--runs",
        type=int,
        default=1,
        help="Times each command runs; the median wall and CPU and the largest peak are shown.",
    )
    parser.add_argument("--only", help="Comma-separated case names to run (default: all).")
    parser.add_argument("--keep", help="Write the results files to this folder and keep them.")
    parser.add_argument("--generate", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.generate:
        folder = Path(args.generate)
        for name, seed, lift, model, roles in (
            ("a", 1, 0.0, "local/chat", False),
            ("b", 2, 0.02, "local/router", True),
        ):
            write_run(folder / f"{name}.json", args.tasks, args.repeats, seed, lift, model, roles)
        return
    folder = Path(args.keep or tempfile.mkdtemp(prefix="agent-eval-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    a, b = folder / "a.json", folder / "b.json"
    if not (a.exists() and b.exists()):
        start = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                __file__,
                "--generate",
                str(folder),
                "--tasks",
                str(args.tasks),
                "--repeats",
                str(args.repeats),
            ],
            check=True,
        )
        print(f"generated 2 runs in {time.perf_counter() - start:.1f} s")
    size = a.stat().st_size / 2**20
    rows = args.tasks * args.repeats
    print(
        f"{args.tasks} tasks x {args.repeats} repeats = {rows:,} rows per run; "
        f"results file {size:.0f} MB; python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.2f} before"
    )
    agent_eval = [sys.executable, "-m", "agent_eval"]
    cases = [
        (f"report --format {fmt}", [*agent_eval, "report", str(a), "--format", fmt])
        for fmt in ("text", "json", "markdown", "junit", "html")
    ]
    cases += [
        (f"compare --format {fmt}", [*agent_eval, "compare", str(a), str(b), "--format", fmt])
        for fmt in ("text", "json")
    ]
    if args.only:
        wanted = set(args.only.split(","))
        cases = [case for case in cases if case[0] in wanted]
    print(f"{'command':<26} {'wall s':>7} {'cpu s':>7} {'peak MB':>8} {'output MB':>9}  target")
    for name, command in cases:
        out = folder / f"out-{name.replace(' ', '_').replace('--', '')}"
        walls, cpus, peaks = [], [], []
        for _ in range(args.runs):
            wall, cpu, peak, code = measure(command, out)
            if code != 0:
                sys.exit(f"{name}: exit {code}; output in {out}")
            walls.append(wall)
            cpus.append(cpu)
            peaks.append(peak)
        wall, cpu, peak = statistics.median(walls), statistics.median(cpus), max(peaks)
        ok = "ok" if min(wall, cpu) < TARGET_SECONDS and peak < TARGET_MB else "MISSED"
        size = out.stat().st_size / 2**20
        print(f"{name:<26} {wall:>7.2f} {cpu:>7.2f} {peak:>8.0f} {size:>9.1f}  {ok}")
    print(
        f"load average {os.getloadavg()[0]:.2f} after (other work on the machine slows "
        "every figure)"
    )


if __name__ == "__main__":
    main()
