"""The sandbox's limits bind a hostile agent while it runs, root included, and an
attempt that meets one fails alone: the next attempt in the same slot is unaffected."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.run.conftest import needs_sandbox

from agent_eval.run.executors.pool import Dispatch
from agent_eval.run.executors.sandboxed import resolve
from agent_eval.run.executors.worker import Outcome, Worker
from agent_eval.run.workspace import scratch_root
from agent_eval.sandbox import pids

needs_private_folder = pytest.mark.skipif(
    scratch_root() is None and not os.environ.get("CI"),
    reason="no writable /dev/shm: the run's scratch is in /tmp and the workspace is not capped",
)
AGENT_EVAL = Path(sys.executable).with_name("agent-eval")

FORKING_AGENT = """
import json, os, time

def run_task(task, options):
    started, error = 0, None
    for _ in range(options["want"]):
        try:
            pid = os.fork()
        except OSError as exc:
            error = f"{type(exc).__name__}: {exc}"
            break
        if pid == 0:
            time.sleep(120)
            os._exit(0)
        started += 1
    return {"answer": json.dumps({"started": started, "error": error}), "steps": 1, "tokens": 0}
"""


def ours() -> list[str]:
    """The pids cgroups this process made that are still there."""
    root = pids.controller()
    if root is None:
        return []
    return [p.name for p in root.iterdir() if p.name.startswith(f"{pids.PREFIX}{os.getpid()}-")]


@needs_sandbox
def test_a_fork_bomb_meets_the_process_limit_and_the_next_attempt_does_not(
    tmp_path: Path, write_agent: Callable[..., Path]
) -> None:
    """An agent forks until refused, under a limit of 48: it is refused before 48, root
    or not (a pids cgroup where one can be made, RLIMIT_NPROC otherwise), and the
    next attempt in the same sandbox starts its 10 processes."""
    if os.getuid() == 0 and pids.controller() is None:
        pytest.skip(f"root, whom RLIMIT_NPROC does not bind, and {pids.unavailable()}")
    agent = write_agent(FORKING_AGENT)
    sandbox, _ = resolve("on", "none", [], [tmp_path])
    assert sandbox is not None
    sandbox = dataclasses.replace(sandbox, processes=48)
    outcomes: dict[int, Outcome] = {}

    def attempt(worker: Worker, want: int, stop: threading.Event) -> Outcome:
        return worker.run("fork", {"want": want}, 120)

    def record(index: int, outcome: Any) -> None:
        outcomes[index] = outcome

    interrupted = Dispatch(str(agent), {}, 1, None, sandbox=sandbox).run([400, 10], attempt, record)
    assert not interrupted
    found = {i: json.loads(o.reply.answer) for i, o in outcomes.items() if o.reply is not None}
    assert found[0]["started"] < 48 and "Resource temporarily unavailable" in found[0]["error"]
    assert found[1] == {"started": 10, "error": None}
    assert not ours()  # each sandbox's cgroup went with it


FILLING_AGENT = """
import json, os, pathlib, tempfile

def fill(folder, megabytes, keep=False):
    written, error = 0, None
    try:
        with open(os.path.join(folder, "fill.bin"), "wb") as out:
            for _ in range(megabytes):
                out.write(b"x" * (1 << 20))
                out.flush()
                written += 1
    except OSError as exc:
        error = exc.strerror
    if not keep:  # the workspace, /tmp and HOME share the room: free it for the next
        os.remove(os.path.join(folder, "fill.bin"))
    return {"mb": written, "error": error}

def refused(path):
    try:
        pathlib.Path(path).write_text("x")
    except OSError as exc:
        return exc.strerror
    return "written"

def run_task(task, options):
    here = options["workspace"]
    tmp = tempfile.gettempdir()
    mine = [n for n in os.listdir(tmp) if __file__.startswith(os.path.join(tmp, n) + "/")]
    found = {"left": sorted(set(os.listdir(tmp)) - set(mine)) + os.listdir(os.environ["HOME"])}
    pathlib.Path(here, "kept.txt").write_text("before the deadline")
    found["workspace"] = fill(here, 64)
    found["home"] = fill(os.environ["HOME"], 64)
    found["tmp"] = fill(tmp, 64, keep=True)  # the next attempt's is empty
    found["system"] = {p: refused(p) for p in ("/root-file", "/dev/dev-file", "/usr/usr-file")}
    if options["attempt"] == 1 and task == "hang":
        import time
        time.sleep(600)
    return {"answer": json.dumps(found), "steps": 1, "tokens": 0}
"""


@needs_sandbox
@needs_private_folder
@pytest.mark.parametrize("isolation", ["attempt", "worker"])
def test_an_attempt_fills_its_workspace_only_to_the_cap(
    tmp_path: Path,
    write_suite: Callable[..., Path],
    write_agent: Callable[..., Path],
    isolation: str,
) -> None:
    """Under --max-workspace-mb 16 an agent that writes 64 MB into its workspace, then
    HOME, then /tmp (which it leaves full), is stopped short of 16 MB in each with
    ENOSPC, and cannot write to the system, its sandbox's own root or /dev. A second
    attempt finds nothing left in /tmp or HOME, and the same room again."""
    from agent_eval.run.runner import execute, prepare
    from agent_eval.run.settings import RunConfig

    suite = write_suite([{"id": "t1", "category": "c", "task": "fill", "expect_in_answer": ["x"]}])
    config = RunConfig(agent=str(write_agent(FILLING_AGENT)), tasks=str(suite), repeats=2,
                       sandbox="on", isolation=isolation, max_workspace_mb=16,  # type: ignore[arg-type]
                       out=tmp_path / "r.json", trajectory_dir=tmp_path / "traj")  # fmt: skip
    report = execute(prepare(config))
    found = [json.loads(row.answer) for row in report.rows]
    assert len(found) == 2
    for each in found:
        assert each["left"] == []
        for place in ("workspace", "tmp", "home"):
            assert 8 <= each[place]["mb"] < 16, each
            assert each[place]["error"] == "No space left on device", each
        assert set(each["system"].values()) == {"Read-only file system"}, each
    written = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert written["run"]["sandbox"]["max_workspace_mb"] == 16


@needs_sandbox
def test_a_worker_killed_past_its_time_leaves_its_workspace_to_be_scored(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    """With --isolation worker, an attempt past its time budget costs its worker, and with
    it the sandbox that held the workspace: what the agent wrote before the deadline is
    still what its state checks judge, and the next attempt starts in a new sandbox."""
    from agent_eval.run.runner import execute, prepare
    from agent_eval.run.settings import RunConfig

    kept = {"file": "kept.txt", "contains": "before the deadline"}
    suite = write_suite([{"id": "t1", "category": "c", "task": "hang", "max_seconds": 5,
                          "expect_state": [kept]}])  # fmt: skip
    config = RunConfig(agent=str(write_agent(FILLING_AGENT)), tasks=str(suite), repeats=2,
                       sandbox="on", isolation="worker", max_workspace_mb=16,
                       out=tmp_path / "r.json", trajectory_dir=tmp_path / "traj")  # fmt: skip
    report = execute(prepare(config))
    first, second = report.rows
    assert first.failure_class == "over_budget", first
    assert [outcome.ok for outcome in first.checks.state] == [True], first.checks
    assert second.passed and [outcome.ok for outcome in second.checks.state] == [True], second


SLOW_FIRST_AGENT = """
import os, pathlib, time

def build(options):
    with open(pathlib.Path(options["log_dir"], "builds.log"), "a") as log:
        log.write(f"built {os.getpid()}\\n")

def run_task(task, options):
    if options["attempt"] == 1:
        time.sleep(600)
    return {"answer": "done", "steps": 1, "tokens": 0}
"""


@needs_sandbox
def test_an_attempt_past_its_time_is_stopped_inside_its_sandbox(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    """A copy past its time budget is ended by its worker, inside the sandbox, where its
    pid means something: the worker and its build() serve the next attempt. (A pid of the
    sandbox's namespace signalled from outside would miss the copy, or hit a stranger.)"""
    from agent_eval.run.runner import execute, prepare
    from agent_eval.run.settings import RunConfig

    suite = write_suite([{"id": "t1", "category": "c", "task": "x", "max_seconds": 3,
                          "expect_in_answer": ["done"]}])  # fmt: skip
    config = RunConfig(agent=str(write_agent(SLOW_FIRST_AGENT)), tasks=str(suite), repeats=2,
                       sandbox="on", out=tmp_path / "r.json",
                       trajectory_dir=tmp_path / "traj")  # fmt: skip
    report = execute(prepare(config))
    first, second = report.rows
    assert first.failure_class == "over_budget" and "no reply within" in str(first.error)
    assert second.passed, second
    builds = (tmp_path / "traj" / "builds.log").read_text(encoding="utf-8").splitlines()
    assert len(builds) == 1, builds


@needs_sandbox
@needs_private_folder
def test_the_cap_as_a_newcomer_gives_it_on_the_command_line(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    """`agent-eval run --max-workspace-mb 8`: the run ends normally, the agent met the
    cap, and the results say which cap applied; 0 is refused in one line that names the
    flag, before anything runs."""
    suite = write_suite([{"id": "t1", "category": "c", "task": "fill", "expect_in_answer": ["x"]}])
    agent = write_agent(FILLING_AGENT)
    base = [str(AGENT_EVAL), "run", "--agent", str(agent), "--tasks", str(suite),
            "--sandbox", "on", "--out", "r.json"]  # fmt: skip
    done = subprocess.run([*base, "--max-workspace-mb", "8"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 2, done.stderr  # scored: the answer check fails, nothing crashed
    written = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert written["run"]["sandbox"]["max_workspace_mb"] == 8
    (row,) = written["results"]
    assert json.loads(row["answer"])["workspace"]["error"] == "No space left on device"
    refused = subprocess.run([*base, "--max-workspace-mb", "0", "--overwrite"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=120)  # fmt: skip
    assert refused.returncode == 1  # bad input, as for every flag
    errors = [line for line in refused.stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and "--max-workspace-mb" in errors[0], refused.stderr
