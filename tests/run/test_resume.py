"""Nothing is lost: Ctrl-C, resume, torn journals, concurrent labbook appends."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.run.conftest import needs_sandbox

from agent_eval.records import Checks
from agent_eval.results import AttemptResult, Journal, Order, RunHead, append_labbook
from agent_eval.trajectory import safe_part, trajectory_name, write_new_file

SLOW_AGENT = """
import os, pathlib, time
CALLS = pathlib.Path(__file__).with_name("calls.log")

def run_task(task, options):
    with CALLS.open("a") as f:
        f.write(f"{options['task_id']} {options['attempt']}\\n")
    time.sleep(0.15)
    n = int(options["task_id"][1:])
    return {"answer": "yes" if n % 3 else "no", "steps": n, "tokens": 10 * n}
"""


PID_LOG = """
def build(options):
    with CALLS.with_name("pids.log").open("a") as f:
        f.write(f"{os.getpid()}\\n")
"""


def start(tmp_path: Path, out: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "agent_eval", "run", "--agent", "agent.py", "--tasks",
         "suite.json", "--repeats", "2", "--out", out, *extra],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def comparable(path: Path) -> list[tuple[object, ...]]:
    rows = json.loads(path.read_text())["results"]
    return [(r["id"], r["attempt"], r["answer"], r["checks"]["passed"], r["steps"]) for r in rows]


def test_ctrl_c_then_resume_matches_an_uninterrupted_run(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[[str], Path]
) -> None:
    write_agent(SLOW_AGENT)
    write_suite([{"id": f"t{i}", "task": "q", "expect_in_answer": ["yes"]} for i in range(8)])
    whole = start(tmp_path, "whole.json")
    whole.communicate(timeout=60)
    (tmp_path / "calls.log").unlink()

    calls = tmp_path / "calls.log"
    for more in (5, 3):  # two interruptions at different points
        before = len(calls.read_text().splitlines()) if calls.exists() else 0
        proc = start(tmp_path, "part.json", *(["--resume", "part.json"] if before else []))
        while (len(calls.read_text().splitlines()) if calls.exists() else 0) < before + more:
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "interrupted; the attempts that finished were written" in err
        assert (tmp_path / "part.json.journal.jsonl").exists()
        assert json.loads((tmp_path / "part.json").read_text())["run"]["interrupted"] is True

    done = start(tmp_path, "part.json", "--resume", "part.json")
    _out, err = done.communicate(timeout=60)
    assert done.returncode == 2, err
    assert "resumed:" in err
    assert comparable(tmp_path / "part.json") == comparable(tmp_path / "whole.json")
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert sorted(calls) == sorted(set(calls)), "an attempt that finished ran again"
    assert len(calls) <= 16 + 2  # at most the attempts in flight at each interruption repeat
    assert not (tmp_path / "part.json.journal.jsonl").exists()


@pytest.mark.parametrize("seed", [1, 2])
def test_two_ctrl_c_at_a_random_point_kill_and_resume_loses_nothing(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[[str], Path], seed: int
) -> None:
    """The second Ctrl-C kills attempts in flight; those, and only those, run again."""
    write_agent(SLOW_AGENT)
    write_suite([{"id": f"t{i}", "task": "q", "expect_in_answer": ["yes"]} for i in range(8)])
    whole = start(tmp_path, "whole.json", "--concurrency", "3")
    whole.communicate(timeout=60)
    (tmp_path / "calls.log").unlink()

    proc = start(tmp_path, "part.json", "--concurrency", "3")
    calls = tmp_path / "calls.log"
    while not calls.exists():
        time.sleep(0.01)
    time.sleep(random.Random(seed).uniform(0.1, 0.4))  # a random point mid-run
    proc.send_signal(signal.SIGINT)
    time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    journaled = len((tmp_path / "part.json.journal.jsonl").read_text().splitlines()) - 1
    assert (tmp_path / "part.json").exists(), err
    assert json.loads((tmp_path / "part.json").read_text())["run"]["interrupted"] is True
    assert len(json.loads((tmp_path / "part.json").read_text())["results"]) == journaled

    done = start(tmp_path, "part.json", "--resume", "part.json", "--concurrency", "3")
    _out, err = done.communicate(timeout=60)
    assert done.returncode == 2, err
    assert comparable(tmp_path / "part.json") == comparable(tmp_path / "whole.json")
    # Attempt-major, as the course writes rows, at any concurrency and after a resume.
    order = [(f"t{i}", attempt) for attempt in (1, 2) for i in range(8)]
    assert [row[:2] for row in comparable(tmp_path / "part.json")] == order
    ran = calls.read_text().splitlines()
    assert len(ran) - len(set(ran)) <= 3  # only the attempts killed in flight ran twice
    assert len(set(ran)) == 16


LOGGING_AGENT = """
import pathlib, time

def build(options):
    # a log the run copies out of the sandbox as it winds down, long enough to land in
    with open(pathlib.Path(options["log_dir"], "big.log"), "w") as log:
        for _ in range(64):
            log.write("x" * (1 << 20))

def run_task(task, options):
    time.sleep(0.15)
    return {"answer": "yes", "steps": 1, "tokens": 1}
"""


@needs_sandbox
@pytest.mark.parametrize("isolation", ["worker", "attempt"])
def test_a_second_ctrl_c_while_the_run_winds_down_cuts_nothing_short(
    tmp_path: Path,
    write_suite: Callable[..., Path],
    write_agent: Callable[[str], Path],
    isolation: str,
) -> None:
    """Ctrl-C, then Ctrl-C again once the agent's log is out of its sandbox: the log is
    copied whole, and the results file holds every journaled attempt. With isolation
    worker the log is copied as the run winds down, so the second Ctrl-C lands there;
    with attempt it was moved as the first attempt ended, so the second lands while the
    run still drains its attempts, and kills what runs."""
    write_agent(LOGGING_AGENT)
    write_suite([{"id": f"t{i}", "task": "q", "expect_in_answer": ["yes"]} for i in range(8)])
    proc = start(tmp_path, "part.json", "--sandbox", "on", "--trajectory-dir", "traj",
                 "--concurrency", "1", "--isolation", isolation)  # fmt: skip
    journal, log = tmp_path / "part.json.journal.jsonl", tmp_path / "traj" / "big.log"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(lines(journal)) < 2:  # the head and a row
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    while not log.exists() and time.monotonic() < deadline:
        time.sleep(0.002)
    proc.send_signal(signal.SIGINT)  # while the log is being copied
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted; the attempts that finished were written" in err
    assert log.stat().st_size == 64 << 20
    results = json.loads((tmp_path / "part.json").read_text())
    assert results["run"]["interrupted"] is True
    assert len(results["results"]) == len(lines(journal)) - 1 > 0


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_a_crash_loses_nothing_journaled_and_leaves_no_process_behind(
    tmp_path: Path,
    write_suite: Callable[..., Path],
    write_agent: Callable[[str], Path],
    gone_soon: Callable[[int], bool],
) -> None:
    """SIGKILL of the harness itself: no Ctrl-C handling, no results file, only the
    journal. Its workers stop on their own, and a resume finishes the run."""
    write_agent(SLOW_AGENT + PID_LOG)
    write_suite([{"id": f"t{i}", "task": "q", "expect_in_answer": ["yes"]} for i in range(8)])
    whole = start(tmp_path, "whole.json")
    whole.communicate(timeout=60)

    calls = tmp_path / "calls.log"
    calls.unlink()
    proc = start(tmp_path, "part.json", "--concurrency", "2")
    while (len(calls.read_text().splitlines()) if calls.exists() else 0) < 5:
        time.sleep(0.01)
    proc.kill()
    proc.communicate(timeout=30)
    assert not (tmp_path / "part.json").exists()
    workers = [int(pid) for pid in (tmp_path / "pids.log").read_text().split()]
    assert all(gone_soon(pid) for pid in workers), "a worker outlived the harness"

    done = start(tmp_path, "part.json", "--resume", "part.json")
    _out, err = done.communicate(timeout=60)
    assert done.returncode == 2, err
    assert comparable(tmp_path / "part.json") == comparable(tmp_path / "whole.json")
    ran = calls.read_text().splitlines()
    assert len(set(ran)) == 16 and len(ran) - len(set(ran)) <= 2 + 4  # in flight, or queued


def test_resume_with_nothing_to_resume_names_both_files(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[[str], Path]
) -> None:
    write_agent(SLOW_AGENT)
    write_suite([{"id": "t1", "task": "q"}])
    proc = start(tmp_path, "gone.json", "--resume", "gone.json")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert err == (
        "Error: --resume gone.json: no such results file, and no journal "
        "gone.json.journal.jsonl next to it\n"
    )


def test_an_empty_journal_is_no_unfinished_run(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[[str], Path]
) -> None:
    """A run's journal is made before its sandbox starts, empty until its first line: a
    run killed in between leaves nothing to resume, so the next run with that --out
    starts; a journal with a line in it is an unfinished run, and is refused."""
    write_agent(SLOW_AGENT)
    write_suite([{"id": "t1", "task": "q"}])
    (tmp_path / "r.json.journal.jsonl").write_text("")
    proc = start(tmp_path, "r.json")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode in (0, 2), err
    assert len(json.loads((tmp_path / "r.json").read_text())["results"]) == 2
    assert not (tmp_path / "r.json.journal.jsonl").exists()
    (tmp_path / "s.json.journal.jsonl").write_text('{"journal": {}}\n')
    proc = start(tmp_path, "s.json")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert "an unfinished run's journal" in err and "--resume s.json" in err


def test_more_repeats_extend_a_finished_run_without_running_its_attempts_again(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[[str], Path]
) -> None:
    write_agent(SLOW_AGENT)
    write_suite([{"id": f"t{i}", "task": "q", "expect_in_answer": ["yes"]} for i in range(3)])
    whole = subprocess.run(
        [sys.executable, "-m", "agent_eval", "run", "--agent", "agent.py", "--tasks",
         "suite.json", "--repeats", "3", "--out", "whole.json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert whole.returncode == 2, whole.stderr
    start(tmp_path, "grown.json").communicate(timeout=60)  # two repeats, finished
    first = json.loads((tmp_path / "grown.json").read_text())["run"]
    (tmp_path / "calls.log").unlink()
    same = start(tmp_path, "grown.json", "--resume", "grown.json")
    _, err = same.communicate(timeout=60)
    assert same.returncode == 1
    assert err == (
        "Error: --resume grown.json: no journal grown.json.journal.jsonl next to it; that run "
        "finished its 2 repeat(s), so there is nothing to resume; add repeats with --repeats "
        "N above 2\n"
    )
    grown = start(tmp_path, "grown.json", "--resume", "grown.json", "--repeats", "3")
    _, err = grown.communicate(timeout=60)
    assert grown.returncode == 2, err
    assert "resumed: 6 finished attempt(s) kept, not re-run" in err
    calls = (tmp_path / "calls.log").read_text().split("\n")
    assert sorted(filter(None, calls)) == ["t0 3", "t1 3", "t2 3"]
    after = json.loads((tmp_path / "grown.json").read_text())["run"]
    assert (after["run_id"], after["started_at"]) == (first["run_id"], first["started_at"])
    assert after["repeats"] == 3 and after["wall_seconds"] >= first["wall_seconds"]
    assert comparable(tmp_path / "grown.json") == comparable(tmp_path / "whole.json")
    assert not (tmp_path / "grown.json.journal.jsonl").exists()


def test_resume_refuses_a_changed_suite(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[[str], Path]
) -> None:
    write_agent(SLOW_AGENT)
    write_suite([{"id": f"t{i}", "task": "q"} for i in range(8)])
    proc = start(tmp_path, "part.json")
    journal = tmp_path / "part.json.journal.jsonl"
    while len(journal.read_bytes().splitlines() if journal.exists() else []) < 2:
        time.sleep(0.02)  # an attempt is journaled: there is a run to resume
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    write_suite([{"id": f"t{i}", "task": "changed"} for i in range(8)])
    again = start(tmp_path, "part.json", "--resume", "part.json")
    _, err = again.communicate(timeout=60)
    assert again.returncode == 1
    assert err.startswith("Error: --resume part.json: the suite changed since that run")


def row(task_id: str, attempt: int) -> AttemptResult:
    checks = Checks(missing=[], forbidden=[], regex_ok=True, tool_ok=True, within_steps=True,
                    tools_used=[], passed=True)  # fmt: skip
    return AttemptResult(id=task_id, category="c", attempt=attempt, answer="a" * 50, steps=1,
                         tokens=1, seconds=0.1, stopped="finished", checks=checks,
                         failure_class="passed")  # fmt: skip


@settings(
    max_examples=40,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(count=st.integers(1, 6), cut=st.integers(1, 200))
def test_journal_recovers_from_a_torn_last_line(tmp_path: Path, count: int, cut: int) -> None:
    path = tmp_path / f"j{count}-{cut}.journal.jsonl"
    journal = Journal(path, {"run_id": "x"}, Order(("t",), count))
    for n in range(count):
        item = row("t", n + 1)
        journal.append(item, item.model_dump_json())
    journal.close()
    data = path.read_bytes()
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    path.write_bytes(data[: last + min(cut, len(data) - last - 1)])  # tear the last row
    reopened = Journal(path, {"run_id": "x"}, Order(("t",), count))
    assert [key for key in reopened.order if key in reopened] == [
        ("t", n + 1) for n in range(count - 1)
    ]
    again = row("t", count)
    reopened.append(again, again.model_dump_json())
    keys = [(r.id, r.attempt) for r in reopened.rows([("t", n + 1) for n in range(count)])]
    assert keys == [("t", n + 1) for n in range(count)]
    reopened.close()


def _append_many(path: str, worker: int) -> None:
    for n in range(50):
        run = RunHead(run_id=f"{worker}-{n}", scaffold="s", task_set="t", task_set_version="1",
                      model="m", notes="x" * 2000)  # fmt: skip
        append_labbook(Path(path), run)


def test_concurrent_labbook_appends_leave_one_valid_line_each(tmp_path: Path) -> None:
    path = tmp_path / "lb.jsonl"
    with ProcessPoolExecutor(max_workers=6) as pool:
        list(pool.map(_append_many, [str(path)] * 6, range(6)))
    lines = path.read_text().splitlines()
    assert len(lines) == 300
    assert sorted(json.loads(line)["run_id"] for line in lines) == sorted(
        f"{w}-{n}" for w in range(6) for n in range(50)
    )


@given(st.text(max_size=80))
def test_file_name_parts_cannot_escape(value: str) -> None:
    part = safe_part(value)
    assert part and "/" not in part and "\\x00" not in part and not part.startswith(".")
    assert set(part) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
    name = trajectory_name(value, value, value, value, 1)
    assert os.path.basename(name) == name and name.endswith("-r1.jsonl")
    assert (Path("/base") / name).resolve().parent == Path("/base")


def test_a_journal_indexes_only_the_attempts_of_its_run(tmp_path: Path) -> None:
    path = tmp_path / "j.journal.jsonl"
    journal = Journal(path, {"run_id": "x"}, Order(("a", "b"), 2))
    for key in [("b", 2), ("a", 1), ("b", 1)]:
        item = row(*key)
        journal.append(item, item.model_dump_json())
    journal.close()
    assert [(r.id, r.attempt) for r in Journal(path, {}, Order(("a", "b"), 2)).rows()] == [
        ("a", 1), ("b", 1), ("b", 2)
    ]  # fmt: skip
    # Resumed with --task-id b and one more repeat: task a's row is not part of it.
    narrower = Journal(path, {}, Order(("b",), 3))
    assert len(narrower) == 2 and ("a", 1) not in narrower and ("b", 2) in narrower
    assert [key for key in narrower.order if key in narrower] == [("b", 1), ("b", 2)]
    assert [r.attempt for r in narrower.rows([("b", 3), ("b", 2), ("a", 1)])] == [2]
    assert Order(("b",), 3).position(("b", 4)) is None


def test_trajectory_writes_stay_in_their_folder(tmp_path: Path) -> None:
    folder = tmp_path / "traj"
    folder.mkdir()
    for name in ("../up.jsonl", "a/b.jsonl", "..", ""):
        with pytest.raises(ValueError, match="would leave"):
            write_new_file(folder, name, "x")
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    (folder / "planted.jsonl").symlink_to(outside)  # a link where a trajectory will go
    with pytest.raises(OSError):
        write_new_file(folder, "planted.jsonl", "overwritten")
    assert outside.read_text() == "keep me"
    assert write_new_file(folder, "ok.jsonl", "line\n").read_text() == "line\n"
