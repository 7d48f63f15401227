"""Agents that hang, exit, crash or leak cost one attempt, never the run."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_eval.errors import AgentLoadError
from agent_eval.run.observers import EachAttempt
from agent_eval.run.runner import execute, prepare
from agent_eval.run.settings import RunConfig

BAD_AGENT = """
import os, time, ctypes, pathlib
LOG = pathlib.Path(__file__).with_name("builds.log")

def build(options):
    with LOG.open("a") as f:
        f.write(f"{os.getpid()}\\n")

def run_task(task, options):
    if task == "hang":
        time.sleep(3600)
    if task == "exit":
        os._exit(3)
    if task == "segfault":
        ctypes.string_at(0)
    if task == "leak":
        hoard = []
        while True:
            hoard.append(bytearray(16 * 1024 * 1024))
    if task == "print":
        print("noise on stdout")
    return {"answer": f"fine from {os.getpid()} of {os.getppid()}", "steps": 1, "tokens": 1}
"""


def run(
    tmp_path: Path, write_suite: Callable[..., Path], agent: Path, tasks: list[str], **extra: object
) -> list[dict[str, object]]:
    suite = write_suite([{"id": f"t{i}-{t}", "task": t} for i, t in enumerate(tasks)])
    config = RunConfig(
        agent=str(agent),
        tasks=str(suite),
        trajectory_dir=tmp_path / "traj",
        out=tmp_path / "r.json",
        **extra,
    )  # type: ignore[arg-type]
    execute(prepare(config))
    return json.loads((tmp_path / "r.json").read_text())["results"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(("isolation", "builds"), [("attempt", 1), ("worker", 5)])
def test_each_fault_is_recorded_and_the_run_goes_on(
    tmp_path: Path,
    write_suite: Callable[..., Path],
    write_agent: Callable[[str], Path],
    isolation: str,
    builds: int,
) -> None:
    """A fault costs its attempt. With isolation it also costs only that attempt's copy of
    the built worker; without, the worker itself, restarted with a new build()."""
    agent = write_agent(BAD_AGENT)
    rows = run(tmp_path, write_suite, agent,
               ["ok", "hang", "ok", "exit", "ok", "segfault", "ok", "leak", "ok"],
               timeout_per_task=1.0, max_memory_mb=250, isolation=isolation)  # fmt: skip
    got = [(r["id"], r["failure_class"], r["error"]) for r in rows]
    assert got == [
        ("t0-ok", "passed", None),
        ("t1-hang", "over_budget", "no reply within 1.1s; stopped"),
        ("t2-ok", "passed", None),
        ("t3-exit", "agent_error",
         "agent process exited with code 3 (sys.exit or os._exit in the agent?)"),
        ("t4-ok", "passed", None),
        ("t5-segfault", "agent_error", "agent process killed by SIGSEGV"),
        ("t6-ok", "passed", None),
        ("t7-leak", "over_budget", "memory over --max-memory-mb 250"),
        ("t8-ok", "passed", None),
    ]  # fmt: skip
    assert len((agent.parent / "builds.log").read_text().split()) == builds


def test_build_runs_once_per_worker_and_stdout_stays_clean(
    tmp_path: Path,
    write_suite: Callable[..., Path],
    write_agent: Callable[[str], Path],
    capfd: pytest.CaptureFixture[str],
) -> None:
    agent = write_agent(BAD_AGENT)
    rows = run(tmp_path, write_suite, agent, ["print"] * 6, concurrency=3)
    assert all(r["checks"]["passed"] for r in rows)
    # Each attempt ran in its own copy of a built worker. How many of the 3 workers got
    # an attempt depends on timing; each built once.
    copies = [str(r["answer"]).split()[2] for r in rows]
    assert len(set(copies)) == 6
    serving = {str(r["answer"]).split()[-1] for r in rows}
    assert sorted((agent.parent / "builds.log").read_text().split()) == sorted(serving)
    out, err = capfd.readouterr()
    assert "noise on stdout" not in out
    assert "noise on stdout" in err


def test_failing_build_and_close(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[[str], Path]
) -> None:
    broken_build = write_agent(
        """
        def build(options):
            raise RuntimeError("no model")
        def run_task(task, options):
            return {}
    """,
        "broken_build.py",
    )
    with pytest.raises(AgentLoadError, match=r"build\(\) failed: RuntimeError\('no model'\)"):
        run(tmp_path, write_suite, broken_build, ["ok"])
    broken_close = write_agent(
        """
        def run_task(task, options):
            return {"answer": "fine", "steps": 1, "tokens": 1}
        def close():
            raise RuntimeError("socket gone")
    """,
        "broken_close.py",
    )
    rows = run(tmp_path, write_suite, broken_close, ["ok", "ok"])
    assert [r["checks"]["passed"] for r in rows] == [True, True]
    run_record = json.loads((tmp_path / "r.json").read_text())["run"]
    assert run_record["warnings"] == ["agent close() failed: RuntimeError('socket gone')"]


def test_concurrent_results_come_out_attempt_major(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[[str], Path]
) -> None:
    agent = write_agent("""
        import time, random
        def run_task(task, options):
            time.sleep(random.random() * 0.05)
            return {"answer": f"{options['task_id']}/{options['attempt']}", "steps": 1,
                    "tokens": int(options["task_id"][1:])}
    """)
    suite = write_suite([{"id": f"t{i}", "task": "q"} for i in range(8)])
    seen: list[tuple[str, int]] = []
    config = RunConfig(
        agent=str(agent),
        tasks=str(suite),
        repeats=3,
        concurrency=4,
        trajectory_dir=tmp_path / "traj",
        out=tmp_path / "r.json",
    )
    report = execute(prepare(config), EachAttempt(lambda row: seen.append((row.id, row.attempt))))
    canonical = [(f"t{i}", a) for a in (1, 2, 3) for i in range(8)]  # the course's order
    assert seen == canonical
    rows = report.rows
    assert [(r.id, r.attempt) for r in rows] == canonical
    assert [r.answer for r in rows] == [f"{t}/{a}" for t, a in canonical]
    assert [p.id for p in report.head.per_task] == [f"t{i}" for i in range(8)]


def test_shuffle_is_seeded(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[[str], Path]
) -> None:
    agent = write_agent("""
        def run_task(task, options):
            return {"answer": str(options["seed"]), "steps": 1, "tokens": 1}
    """)
    suite = write_suite([{"id": f"t{i}", "task": "q"} for i in range(6)])
    orders = []
    for run_number in range(3):
        seen: list[str] = []
        config = RunConfig(
            agent=str(agent),
            tasks=str(suite),
            shuffle=True,
            seed=7 if run_number < 2 else 8,
            trajectory_dir=tmp_path / f"traj{run_number}",
        )
        report = execute(prepare(config), EachAttempt(lambda row, seen=seen: seen.append(row.id)))
        orders.append(seen)
        assert [r.id for r in report.rows] == [f"t{i}" for i in range(6)]
    assert orders[0] == orders[1] != orders[2]
    assert sorted(orders[0]) == [f"t{i}" for i in range(6)]
