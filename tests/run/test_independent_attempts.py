"""Attempts are independent trials: each starts from the agent's state right after
build(), whatever the concurrency, order or resume; `--isolation worker` shares it."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_eval.models.mock_server import MockModelServer
from agent_eval.processes import usable_cores

# Answers "yes" only to a task its process has seen before; its tokens count the tasks its
# process has been given, build()'s warm-up included.
REMEMBERS = """
import os, pathlib
SEEN = []
HERE = pathlib.Path(__file__).parent

def build(options):
    SEEN.append("warm-up")
    with (HERE / "builds.log").open("a") as f:
        f.write(f"{os.getpid()}\\n")

def run_task(task, options):
    answer = "yes" if options["task_id"] in SEEN else "no"
    SEEN.append(options["task_id"])
    return {"answer": answer, "steps": 1, "tokens": len(SEEN)}

def close():
    with (HERE / "closes.log").open("a") as f:
        f.write(f"{os.getpid()} {len(SEEN)}\\n")
"""

# Deterministic given its state: cycles through canned answers, one cycle per task, and
# writes down each call so a test can interrupt it part way.
CYCLES = """
import pathlib, time
CANNED = {"t0": ["yes", "no"], "t1": ["no", "yes", "yes"], "t2": ["no"], "t3": ["yes"],
          "t4": ["yes", "no", "no"], "t5": ["no", "yes"]}
CALLS = {}

def run_task(task, options):
    task_id = options["task_id"]
    CALLS[task_id] = CALLS.get(task_id, 0) + 1
    with pathlib.Path(__file__).with_name("calls.log").open("a") as f:
        f.write(f"{task_id} {options['attempt']}\\n")
    time.sleep(0.1)
    canned = CANNED[task_id]
    answer = canned[(CALLS[task_id] + options["attempt"]) % len(canned)]
    return {"answer": answer, "steps": 1, "tokens": 1}
"""

THREAD_IN_BUILD = """
import threading, time
_build = build
def build(options):
    threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
    _build(options)
"""

# Answers how many copies of its worker wait ready beside it (sleeping siblings), once
# one shows up or WAIT seconds have passed: long enough for a spare's fork to reach its
# wait on a loaded machine, paid in full only where no spare is made.
SPARES = """
import os, time

WAIT = 10.0

def waiting():
    me, worker = os.getpid(), os.getppid()
    found = 0
    for pid in open(f"/proc/{worker}/task/{worker}/children").read().split():
        try:
            state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
        except OSError:  # ended meanwhile
            continue
        found += int(pid) != me and state == "S"
    return found

def run_task(task, options):
    deadline = time.monotonic() + WAIT
    while not waiting() and time.monotonic() < deadline:
        time.sleep(0.02)
    return {"answer": str(waiting()), "steps": 1, "tokens": 1}
"""

LINE = re.compile(r"^  (ok |BAD) (\S+) +r(\d+) +\d+ step\(s\) +(\d+) tok +[\d.]+s$")


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    return subprocess.run(
        [sys.executable, "-m", "agent_eval", "run", "--agent", "agent.py", "--tasks",
         "suite.json", *args],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip


def interrupt(tmp_path: Path, after: int, *flags: str) -> None:
    """Run CYCLES into part.json and Ctrl-C it once ``after`` calls have begun."""
    calls = tmp_path / "calls.log"
    part = subprocess.Popen(
        [sys.executable, "-m", "agent_eval", "run", "--agent", "agent.py", "--tasks",
         "suite.json", "--repeats", "4", "--out", "part.json", *flags],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    while (len(calls.read_text().splitlines()) if calls.exists() else 0) < after:
        time.sleep(0.02)
    part.send_signal(signal.SIGINT)
    _, err = part.communicate(timeout=60)
    assert part.returncode == 130, err


def attempts(stdout: str) -> list[tuple[str, int, bool, int]]:
    """(task id, attempt, passed, tokens) from the console's attempt lines, in order."""
    found = [LINE.match(line) for line in stdout.splitlines()]
    return [(m[2], int(m[3]), m[1] == "ok ", int(m[4])) for m in found if m]


def verdicts(results: Path) -> list[tuple[str, int, bool]]:
    """(task id, attempt, passed) per row of a results file (schema 1 names the id task_id)."""
    rows = json.loads(results.read_text())["results"]
    return [(r.get("id") or r["task_id"], r["attempt"], r["checks"]["passed"]) for r in rows]


@pytest.fixture
def suite(write_suite: Callable[..., Path]) -> Path:
    return write_suite(
        [{"id": f"t{i}", "task": "q", "expect_in_answer": ["yes"]} for i in range(6)]
    )


@pytest.mark.parametrize("concurrency", ["1", "4"])
def test_no_attempt_sees_an_earlier_one(
    tmp_path: Path, write_agent: Callable[[str], Path], suite: Path, concurrency: str
) -> None:
    write_agent(REMEMBERS)
    done = cli(tmp_path, "--repeats", "3", "--concurrency", concurrency)
    assert done.returncode == 2, done.stderr
    expected = [(f"t{i}", a, False, 2) for a in (1, 2, 3) for i in range(6)]  # attempt-major
    assert attempts(done.stdout) == expected  # build()'s warm-up, and nothing else
    assert "success rate  0.00  (0 of 18)" in done.stdout
    assert "Note:" not in done.stderr
    # build() and close() ran once per worker, and close() saw the state build() left.
    builds = (tmp_path / "builds.log").read_text().split()
    assert 1 <= len(builds) <= int(concurrency)
    closes = [line.split() for line in (tmp_path / "closes.log").read_text().splitlines()]
    assert sorted(closes) == sorted([pid, "1"] for pid in builds)


def test_a_copy_waits_ready_only_while_the_slots_do_not_outnumber_the_cores(
    tmp_path: Path, write_agent: Callable[[str], Path], write_suite: Callable[..., Path]
) -> None:
    """Up to one slot a core, each attempt's copy is forked before it is needed; with
    more slots than cores a waiting copy would only hold memory while it waits for a
    core, so each is forked when its attempt comes."""
    write_agent(SPARES)
    write_suite([{"id": f"t{i}", "task": "q", "expect_in_answer": ["0"]} for i in range(2)])
    cores = usable_cores()
    for concurrency, spare in ((1, True), (cores, True), (cores + 1, False)):
        out = f"c{concurrency}.json"
        done = cli(tmp_path, "--concurrency", str(concurrency), "--out", out)
        assert done.returncode in (0, 2), done.stderr
        rows = json.loads((tmp_path / out).read_text())["results"]
        assert [row["answer"] for row in rows] == ["1" if spare else "0"] * 2, concurrency


def test_isolation_worker_carries_state_from_attempt_to_attempt(
    tmp_path: Path, write_agent: Callable[[str], Path], suite: Path
) -> None:
    write_agent(REMEMBERS)
    done = cli(tmp_path, "--repeats", "3", "--isolation", "worker")
    assert done.returncode == 2, done.stderr
    # Attempt-major, as the course runs them: t0..t5 of r1, then of r2; the warm-up is 1.
    expected = [(f"t{i}", a, a > 1, 6 * (a - 1) + i + 2) for a in (1, 2, 3) for i in range(6)]
    assert attempts(done.stdout) == expected
    assert "success rate  0.67  (12 of 18)" in done.stdout
    closes = (tmp_path / "closes.log").read_text().split()
    assert closes == [(tmp_path / "builds.log").read_text().strip(), "19"]


def test_a_deterministic_agent_gets_the_same_verdicts_however_the_run_goes(
    tmp_path: Path, write_agent: Callable[[str], Path], suite: Path
) -> None:
    write_agent(CYCLES)
    runs = {
        "c1": ("--concurrency", "1"),
        "c4": ("--concurrency", "4"),
        "shuffled": ("--concurrency", "4", "--shuffle", "--seed", "3"),
        "worker": ("--concurrency", "1", "--isolation", "worker"),
    }
    found = {}
    for name, flags in runs.items():
        done = cli(tmp_path, "--repeats", "4", "--out", f"{name}.json", *flags)
        assert done.returncode == 2, done.stderr
        found[name] = verdicts(tmp_path / f"{name}.json")
    # Interrupted part way, then resumed at another concurrency.
    (tmp_path / "calls.log").unlink()
    interrupt(tmp_path, 6, "--concurrency", "2")
    done = cli(tmp_path, "--repeats", "4", "--resume", "part.json", "--concurrency", "3")
    assert done.returncode == 2 and "resumed:" in done.stderr, done.stderr
    found["resumed"] = verdicts(tmp_path / "part.json")

    assert [(t, a) for t, a, _ in found["c1"]] == [
        (f"t{i}", a) for a in range(1, 5) for i in range(6)
    ]
    for name in ("c4", "shuffled", "resumed"):
        assert found[name] == found["c1"], name
    # The same agent sharing one process per worker is not the same measurement.
    assert found["worker"] != found["c1"]


def test_an_agent_that_cannot_be_copied_gets_a_fresh_worker_per_attempt(
    tmp_path: Path, write_agent: Callable[[str], Path], suite: Path
) -> None:
    write_agent(REMEMBERS + THREAD_IN_BUILD)
    done = cli(tmp_path, "--repeats", "2", "--concurrency", "2", "--out", "r.json")
    assert done.returncode == 2, done.stderr
    note = (
        "Note: isolation: agent agent.py leaves 1 thread(s) running after build(), which a "
        "copy of it would lack, so each attempt gets a fresh worker and its own build()"
    )
    assert done.stderr.splitlines().count(note) == 1, done.stderr
    assert attempts(done.stdout) == [(f"t{i}", a, False, 2) for a in (1, 2) for i in range(6)]
    builds = (tmp_path / "builds.log").read_text().split()
    assert len(builds) == 12 == len(set(builds))
    closes = [line.split() for line in (tmp_path / "closes.log").read_text().splitlines()]
    assert sorted(closes) == sorted([pid, "2"] for pid in builds)  # once per build()
    run = json.loads((tmp_path / "r.json").read_text())["run"]
    assert run["isolation"] == "attempt"
    assert run["warnings"] == [note.removeprefix("Note: ")]


def test_the_reference_agents_run_in_copies(
    tmp_path: Path, mock_model: Callable[..., MockModelServer]
) -> None:
    """build() indexes the documents and opens the client, and leaves no thread behind
    (no progress-bar monitor, no math pool), so attempts need no fresh worker each."""
    server = mock_model({"replies": [{"content": "The gateway listens on port 4000."}]})
    for agent in ("builtin:minimal", "builtin:multi-agent"):
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        done = subprocess.run(
            [sys.executable, "-m", "agent_eval", "run", "--agent", agent, "--task-id",
             "r-gateway-port", "--repeats", "2", "--concurrency", "2", "--base-url",
             server.base_url, "--model", "mock"],
            cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env,
        )  # fmt: skip
        assert len(attempts(done.stdout)) == 2, done.stdout + done.stderr
        assert "Note:" not in done.stderr, done.stderr


def test_resume_keeps_the_isolation_of_the_run(
    tmp_path: Path, write_agent: Callable[[str], Path], suite: Path
) -> None:
    """Mixing modes in one run would mix two measurements."""
    write_agent(CYCLES)
    interrupt(tmp_path, 3, "--isolation", "worker")
    done = cli(tmp_path, "--repeats", "4", "--resume", "part.json")
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        "Error: --resume part.json: that run used --isolation worker; give the same"
    )
    done = cli(tmp_path, "--repeats", "4", "--resume", "part.json", "--isolation", "worker")
    assert done.returncode == 2 and "resumed:" in done.stderr, done.stderr


@pytest.mark.parametrize("isolation", ["attempt", "worker"])
def test_an_attempt_stopped_mid_request_leaves_the_next_its_own_connection(
    tmp_path: Path,
    write_suite: Callable[..., Path],
    mock_model: Callable[..., MockModelServer],
    agent_eval: Callable[..., subprocess.CompletedProcess[str]],
    isolation: str,
) -> None:
    """build() asks the endpoint about the model, so the built worker holds an open
    connection. Were the copies to share it, the next attempt's request would queue
    behind the stopped one's, and its reply, on the same socket."""
    server = mock_model(
        {"rules": [{"task": "hang", "reply": {"fault": "timeout"}}],
         "default": {"content": "The answer is 3."}},
        hang_seconds=60,
    )  # fmt: skip
    write_suite([
        {"id": "a-stopped", "task": "hang here", "expect_in_answer": ["3"], "max_seconds": 1},
        {"id": "b-next", "task": "say 3", "expect_in_answer": ["3"], "max_seconds": 30},
    ])  # fmt: skip
    done = agent_eval(
        "run", "--agent", "builtin:minimal", "--tasks", "suite.json", "--base-url",
        server.base_url, "--model", "mock", "--no-preflight", "--max-infra-retries", "0",
        "--isolation", isolation, "--out", "r.json", cwd=tmp_path,
    )  # fmt: skip
    rows = {row["id"]: row for row in json.loads((tmp_path / "r.json").read_text())["results"]}
    assert rows["a-stopped"]["failure_class"] == "over_budget", done.stderr
    assert rows["b-next"]["failure_class"] == "passed", rows["b-next"]
    assert [r["fault"] for r in server.requests] == ["timeout", None]


# Leaves a thread and a child process in a session of its own writing a file in the slot's
# folder, which the next attempt there shares, and answers "haunted" when it finds that
# file written again after it removed it: something an earlier attempt left is at work.
HAUNTS = """
import os, pathlib, subprocess, sys, threading, time

def run_task(task, options):
    ghost = pathlib.Path(options["workspace"]).parent.parent / "ghost"  # in the slot
    ghost.unlink(missing_ok=True)
    time.sleep(0.3)
    haunted = ghost.exists()
    def write():
        while True:
            ghost.write_text("thread")
            time.sleep(0.005)
    threading.Thread(target=write, daemon=True).start()
    loop = "import pathlib, sys, time\\nwhile True:\\n"
    loop += "    pathlib.Path(sys.argv[1]).write_text('child')\\n    time.sleep(0.005)\\n"
    subprocess.Popen([sys.executable, "-c", loop, str(ghost)], start_new_session=True)
    time.sleep(0.05)
    return {"answer": "haunted" if haunted else "clean", "steps": 1, "tokens": 1}
"""


@pytest.mark.parametrize("sandbox", ["auto", "off"])
def test_nothing_an_attempt_leaves_running_writes_after_it_ends(
    tmp_path: Path, write_agent: Callable[[str], Path], write_suite: Callable[..., Path],
    sandbox: str,
) -> None:  # fmt: skip
    """A copy that has answered is stopped and killed before its attempt is scored, with
    its threads, and what it started ends first: the next attempt in the slot finds
    nobody writing. Its memory is torn down after that, while the run goes on."""
    write_agent(HAUNTS)
    write_suite([{"id": f"t{i}", "task": "q", "expect_in_answer": ["clean"]} for i in range(3)])
    done = cli(tmp_path, "--repeats", "2", "--concurrency", "1", "--sandbox", sandbox)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [passed for _, _, passed, _ in attempts(done.stdout)] == [True] * 6
