"""cmd: agents: the JSON-lines protocol and its failure handling, with tiny real processes."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_eval.agents.command_agent import CommandAgent, CommandAgentError, scaffold_name
from agent_eval.agents.entry import load_agent
from agent_eval.errors import AgentLoadError

# One fake agent whose behaviour the task text picks; its answer says which process
# answered and what it saw, so restarts and the protocol field can be asserted.
FAKE = """
import json, os, sys, time
seen = 0
for line in sys.stdin:
    request = json.loads(line)
    seen += 1
    task = request["task"]
    print(f"pid {os.getpid()} got {task}", file=sys.stderr, flush=True)
    if task == "die":
        print("dying now", file=sys.stderr, flush=True)
        sys.exit(3)
    if task == "garble":
        print("hello from a stray print", flush=True)
        continue
    if task == "hang":
        time.sleep(60)
    if task == "typo":
        print(json.dumps({"anwser": "x", "steps": 1, "tokens": 0}), flush=True)
        continue
    if task == "error":
        print(json.dumps({"error": "the model endpoint said no"}), flush=True)
        continue
    if task == "chatty":  # one write: the stray line is there as soon as the answer is
        answer = json.dumps({"answer": "one", "steps": 1, "tokens": 0})
        print(answer + "\\nand a second line nobody asked for", flush=True)
        continue
    answer = f"{task} pid={os.getpid()} seen={seen} protocol={request['protocol']}"
    keys = ",".join(sorted(request["options"]))
    print(json.dumps({"answer": answer, "steps": 2, "tokens": 7, "stopped": "finished",
                      "trajectory": [{"type": "stop", "reason": "finished", "detail": keys}]}),
          flush=True)
"""


@pytest.fixture
def fake(tmp_path: Path) -> str:
    """The command of the fake agent, written into the test's folder."""
    script = tmp_path / "fake.py"
    script.write_text(FAKE, encoding="utf-8")
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


def options(tmp_path: Path, max_seconds: float | None = 5.0) -> dict[str, Any]:
    return {
        "base_url": "http://127.0.0.1:9/v1",
        "model": "mock",
        "api_key": "sk-test",
        "workspace": str(tmp_path),
        "task_id": "t-1",
        "attempt": 1,
        "limits": {"max_steps": 4, "max_tokens": None, "max_seconds": max_seconds},
    }


def pid_of(answer: str) -> int:
    return int(answer.split("pid=")[1].split()[0])


def started(tmp_path: Path, fake: str) -> CommandAgent:
    agent = CommandAgent(fake)
    agent.build({"log_dir": str(tmp_path / "logs")})
    return agent


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["node", "examples/node-agent/agent.js"], "node-agent"),
        (["python3", "fake.py"], "fake"),
        (["python3", "-u", "tools/my_agent.py", "--fast"], "my_agent"),
        (["./bin/runner"], "runner"),
        (["java", "-jar", "build/solver.jar"], "solver"),
    ],
)
def test_scaffold_name_comes_from_the_script(argv: list[str], name: str) -> None:
    assert scaffold_name(argv) == name


def test_load_agent_accepts_cmd_and_starts_nothing_yet(fake: str) -> None:
    agent = load_agent(f"cmd:{fake}")
    assert agent.scaffold == "fake"
    assert agent.entry_point == f"cmd:{fake}"
    assert agent.build is not None and agent.close is not None


def test_one_process_answers_every_task_with_the_protocol_field(tmp_path: Path, fake: str) -> None:
    agent = started(tmp_path, fake)
    try:
        first = agent.run_task("alpha", options(tmp_path))
        second = agent.run_task("beta", options(tmp_path))
    finally:
        agent.close()
    assert first["answer"].startswith("alpha pid=") and first["answer"].endswith(
        "seen=1 protocol=1"
    )
    assert second["answer"].endswith("seen=2 protocol=1")
    assert pid_of(first["answer"]) == pid_of(second["answer"])
    assert first["steps"] == 2 and first["tokens"] == 7
    keys = first["trajectory"][0]["detail"].split(",")
    assert {"api_key", "limits", "task_id", "workspace", "attempt"} <= set(keys)
    log = (tmp_path / "logs" / "fake.log").read_text(encoding="utf-8")
    assert "got alpha" in log and "got beta" in log
    assert "[agent-eval] task t-1 attempt 1" in log


@pytest.mark.parametrize(
    ("task", "reason"),
    [
        (
            "die",
            "exited before writing a result line (exit code 3); its last stderr line: 'dying now'",
        ),
        ("garble", "wrote a line that is not JSON"),
        ("hang", "wrote no result line within 1.05s"),
        ("typo", "wrote a result with unknown key(s) anwser"),
    ],
)
def test_a_broken_attempt_fails_and_the_next_task_gets_a_fresh_process(
    tmp_path: Path, fake: str, task: str, reason: str, alive: Callable[[int], bool]
) -> None:
    agent = started(tmp_path, fake)
    try:
        before = pid_of(agent.run_task("warm-up", options(tmp_path))["answer"])
        with pytest.raises(CommandAgentError) as failed:
            agent.run_task(task, options(tmp_path, max_seconds=1.0))
        after = agent.run_task("again", options(tmp_path))["answer"]
    finally:
        agent.close()
    message = str(failed.value)
    assert message.startswith(f"agent process fake (pid {before}) {reason}")
    assert message.endswith(f"log: {tmp_path / 'logs' / 'fake.log'}")
    assert "\n" not in message
    assert pid_of(after) != before and after.endswith("seen=1 protocol=1")
    assert not alive(before)


def test_an_error_line_fails_the_attempt_but_keeps_the_process(tmp_path: Path, fake: str) -> None:
    agent = started(tmp_path, fake)
    try:
        before = pid_of(agent.run_task("one", options(tmp_path))["answer"])
        said = r"^agent reported: the model endpoint said no$"
        with pytest.raises(CommandAgentError, match=said):
            agent.run_task("error", options(tmp_path))
        after = agent.run_task("two", options(tmp_path))["answer"]
    finally:
        agent.close()
    assert pid_of(after) == before and after.endswith("seen=3 protocol=1")


def test_output_between_tasks_restarts_the_process_without_failing(
    tmp_path: Path, fake: str
) -> None:
    agent = started(tmp_path, fake)
    try:
        assert agent.run_task("chatty", options(tmp_path))["answer"] == "one"
        after = agent.run_task("next", options(tmp_path))["answer"]
    finally:
        agent.close()
    assert after.endswith("seen=1 protocol=1")
    log = (tmp_path / "logs" / "fake.log").read_text(encoding="utf-8")
    assert "restarting: the process wrote to stdout between tasks" in log


def test_close_ends_the_process(tmp_path: Path, fake: str, alive: Callable[[int], bool]) -> None:
    agent = started(tmp_path, fake)
    pid = pid_of(agent.run_task("one", options(tmp_path))["answer"])
    agent.close()
    assert not alive(pid)


def test_a_missing_program_is_a_load_error(tmp_path: Path) -> None:
    agent = CommandAgent("no-such-program-here --flag")
    with pytest.raises(AgentLoadError, match=r"cannot start 'no-such-program-here'.*on PATH"):
        agent.build({"log_dir": str(tmp_path)})


def test_killing_its_worker_kills_the_agent_process(
    tmp_path: Path, fake: str, gone_soon: Callable[[int], bool]
) -> None:
    # The harness kills a worker with SIGKILL when an attempt overruns; the agent process
    # the worker started must not outlive it.
    log = tmp_path / "logs" / "fake.log"
    host = (
        "import sys\n"
        "from agent_eval.agents.command_agent import CommandAgent\n"
        "agent = CommandAgent(sys.argv[1])\n"
        "agent.build({'log_dir': sys.argv[2]})\n"
        "agent.run_task('hang', {'limits': {'max_seconds': None}})\n"
    )
    worker = subprocess.Popen([sys.executable, "-c", host, fake, str(log.parent)])
    try:
        pid = _wait_for_pid(log, "got hang")
        worker.kill()
        worker.wait()
        assert gone_soon(pid)
    finally:
        worker.kill()


def test_the_cli_records_a_dead_process_and_runs_on(tmp_path: Path, fake: str) -> None:
    out = tmp_path / "results.json"
    script = tmp_path / "fake.py"
    script.write_text(FAKE.replace('task == "die"', '"backup" in task'), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "agent_eval", "run", "--agent", f"cmd:{fake}",
         "--tasks", "part26", "--task-id", "r-backup-window", "--task-id", "r-gateway-port",
         "--base-url", "http://127.0.0.1:9/v1", "--model", "mock", "--no-preflight",
         "--out", str(out),
         "--trajectory-dir", str(tmp_path / "trajectories"),
         "--option", f"log_dir={tmp_path / 'trajectories'}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0, done.stderr
    rows = {row["id"]: row for row in json.loads(out.read_text())["results"]}
    assert rows["r-backup-window"]["failure_class"] == "agent_error"
    assert "exited before writing a result line (exit code 3)" in rows["r-backup-window"]["error"]
    assert rows["r-gateway-port"]["failure_class"] == "wrong_answer"
    assert rows["r-gateway-port"]["steps"] == 2
    log = (tmp_path / "trajectories" / "fake.log").read_text(encoding="utf-8")
    assert "dying now" in log and "sk-" not in log


def _wait_for_pid(log: Path, mark: str) -> int:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if log.exists():
            for line in log.read_text(encoding="utf-8").splitlines():
                if mark in line:
                    return int(line.split()[1])
        time.sleep(0.05)
    raise AssertionError(f"{mark!r} never appeared in {log}")
