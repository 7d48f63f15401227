"""`agent-eval run --executor ray` black-box: a head node started with `ray start --head`,
exact console lines, a clean error for a cluster nobody runs, and a driver killed
mid-run whose journal the other executor resumes."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

AGENT = """
import time

def run_task(task, options):
    with open(options["calls"], "a") as f:
        f.write(f"{options['task_id']} {options['attempt']}\\n")
    time.sleep(float(options.get("pause", "0")))
    n = int(options["task_id"][1:])
    return {"answer": "yes" if n % 3 else "no", "steps": n, "tokens": 100 * n}
"""


def setup(tmp_path: Path, tasks: int) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    tasks_ = [{"id": f"t{i}", "task": "yes?", "expect_in_answer": ["yes"]} for i in range(tasks)]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.md").write_text("Notes for the tests.\n")
    suite = {"name": "tiny", "version": "1.0.0", "workspace": "docs", "tasks": tasks_}
    (tmp_path / "suite.json").write_text(json.dumps(suite))


def command(tmp_path: Path, *extra: str) -> list[str]:
    """The run; the agent logs each call in calls.log (an absolute path: on a Ray node an
    agent runs in the folder its files travelled to)."""
    return [sys.executable, "-m", "agent_eval", "run", "--agent", "agent.py", "--tasks",
            "suite.json", "--option", f"calls={tmp_path / 'calls.log'}", *extra]  # fmt: skip


def ran_on_ray(tmp_path: Path, row: dict[str, Any]) -> bool:
    """Whether the trajectory's meta line names the Ray node that ran the attempt."""
    meta = json.loads((tmp_path / row["trajectory_file"]).read_text().splitlines()[0])["meta"]
    return "ray_node_id" in meta


# A Ray Client session lost as it starts costs 30-40 s before the run tries again.
@pytest.mark.timeout(300)
@pytest.mark.parametrize("client", [False, True], ids=["gcs-address", "ray-client"])
def test_a_run_on_a_head_node_prints_the_course_layout(
    tmp_path: Path, ray_head: Any, client: bool
) -> None:
    setup(tmp_path, 3)
    address = ray_head.client_address if client else ray_head.address
    done = subprocess.run(
        command(tmp_path, "--executor", "ray", "--ray-address", address,
                "--concurrency", "2", "--out", "r.json"),
        cwd=tmp_path, env=ray_head.env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stdout.splitlines()[:6]
    assert [line[:-9] for line in lines[2:5]] == [  # all but the seconds, a timing
        "  BAD t0               r1   0 step(s)        0 tok",
        "  ok  t1               r1   1 step(s)      100 tok",
        "  ok  t2               r1   2 step(s)      200 tok",
    ]
    # the header, then the course's blank line under it; a blank line before the summary
    assert (lines[0], lines[1], lines[5]) == (
        "agent x local/chat: 3 task(s), 1 attempt(s) each",
        "",
        "",
    )
    assert all(line.endswith("s") and line[-6:-1].strip() for line in lines[2:5])
    assert "success rate  0.67  (2 of 3)" in done.stdout
    assert "Error" not in done.stderr
    document = json.loads((tmp_path / "r.json").read_text())
    assert document["run"]["summary"]["passed"] == 2
    assert all(ran_on_ray(tmp_path, row) for row in document["results"])


def test_a_cluster_nobody_runs_is_one_error_line(
    tmp_path: Path, free_port: Callable[[], int]
) -> None:
    setup(tmp_path, 1)
    address = f"127.0.0.1:{free_port()}"
    run = command(tmp_path, "--executor", "ray", "--ray-address", address, "--out", "r.json")
    done = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if "Error" in line]
    assert errors == [
        f"Error: --ray-address {address}: cannot reach the Ray cluster ([Errno 111] Connection "
        f"refused); start one with `ray start --head`, or give its address (auto, HOST:6379 or "
        f"ray://HOST:10001)"
    ]
    assert not list(tmp_path.glob("*.journal.jsonl")) and not (tmp_path / "calls.log").exists()


@pytest.mark.timeout(300)  # Ray itself gives up on a refused driver after 20-30 s
def test_a_cluster_that_wants_a_token_says_how_to_give_it(tmp_path: Path, ray_head: Any) -> None:
    setup(tmp_path, 1)
    wrong = {**ray_head.env, "RAY_AUTH_TOKEN": "0" * 64}
    run = command(tmp_path, "--executor", "ray", "--ray-address", ray_head.address,
                  "--out", "r.json")  # fmt: skip
    done = subprocess.run(run, cwd=tmp_path, env=wrong, capture_output=True, text=True,
                          timeout=180)  # fmt: skip
    assert done.returncode == 1
    (error,) = [line for line in done.stderr.splitlines() if "Error" in line]
    assert error.startswith(f"Error: --ray-address {ray_head.address}: Ray did not connect (")
    assert error.endswith("give this process RAY_AUTH_MODE=token and RAY_AUTH_TOKEN "
                          "(or ~/.ray/auth_token)")  # fmt: skip
    assert "0" * 64 not in done.stderr + done.stdout
    assert not (tmp_path / "calls.log").exists()


def test_without_the_extra_the_error_says_how_to_install_it(tmp_path: Path) -> None:
    setup(tmp_path, 1)
    blocked = (
        "import sys\n"
        "class NoRay:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.partition('.')[0] == 'ray':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, NoRay())\n"
        "from agent_eval.cli import main\n"
        "sys.argv[0] = 'agent-eval'\n"
        "main()\n"
    )
    run = [sys.executable, "-c", blocked, *command(tmp_path, "--executor", "ray")[3:]]
    done = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "Error: --executor ray needs ray; install it with pip install -e '.[ray]' in the "
        "agent-eval clone\n"
    )


@pytest.mark.parametrize(("first", "then"), [("ray", "local"), ("local", "ray")])
def test_a_killed_driver_loses_nothing_journaled_and_the_other_executor_resumes_it(
    tmp_path: Path, ray_head: Any, first: str, then: str
) -> None:
    setup(tmp_path, 6)
    on = {"local": ["--executor", "local"],
          "ray": ["--executor", "ray", "--ray-address", ray_head.address]}  # fmt: skip
    driver = subprocess.Popen(
        command(tmp_path, *on[first], "--repeats", "2", "--concurrency", "2",
                "--option", "pause=0.5", "--out", "r.json"),
        cwd=tmp_path, env=ray_head.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    journal = tmp_path / "r.json.journal.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and driver.poll() is None:
        if journal.exists() and len(journal.read_text().splitlines()) >= 4:
            break
        time.sleep(0.05)
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    assert not (tmp_path / "r.json").exists()
    kept = [json.loads(line) for line in journal.read_text().splitlines()[1:]]
    kept_keys = {(row["id"], row["attempt"]) for row in kept if "id" in row}
    assert len(kept_keys) >= 3
    done = subprocess.run(command(tmp_path, *on[then], "--resume", "r.json", "--repeats", "2"),
                          cwd=tmp_path, env=ray_head.env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 2, done.stderr
    rows = json.loads((tmp_path / "r.json").read_text())["results"]
    assert [(r["id"], r["attempt"]) for r in rows] == [  # attempt-major, as the course
        (f"t{i}", a) for a in (1, 2) for i in range(6)
    ]
    assert [r["checks"]["passed"] for r in rows] == [i % 3 != 0 for _ in (1, 2) for i in range(6)]
    calls = Counter(
        tuple(line.split()) for line in (tmp_path / "calls.log").read_text().splitlines()
    )
    for task_id, attempt in kept_keys:  # journaled before the kill: never run again
        assert calls[(task_id, str(attempt))] == 1
    assert f"resumed: {len(kept_keys)} finished attempt(s) kept, not re-run" in done.stderr
    for row in rows:  # each attempt ran where its run put it
        ran_again = (row["id"], row["attempt"]) not in kept_keys
        assert ran_on_ray(tmp_path, row) == ((then if ran_again else first) == "ray")
