"""A student's first hour, as they type it: `agent-eval init`, the course's `--tasks`
default, the documents error, the pre-flight check of the model endpoint, and what a run
says and exits with when the endpoint fails."""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_eval.cli.init import init as init_command
from agent_eval.models.mock_server import MockModelServer
from agent_eval.suite import shipped_suites
from agent_eval.suite.load import SHIPPED_FILES

ROOT = Path(__file__).resolve().parent.parent
Cli = Callable[..., subprocess.CompletedProcess[str]]
Mock = Callable[..., MockModelServer]
SERVED = ["local/chat", "local/answer", "local/router"]
GATEWAY = {"content": "The model gateway listens on port 4000."}
INIT_LINES = [
    "wrote student/agent-tasks.json: the shipped suite part26 (Part 26 agent task suite "
    "1.0.0, 15 tasks)",
    "wrote student/agent-workspace/: its 3 document(s)",
    "wrote student/my_agent.py: your agent (search the documents, then ask the model); edit it",
    "wrote student/examples/multi-agent-system.py: the lesson's four-role system",
    "wrote student/README.md: the next commands",
    "next:",
    "  cd student",
    "  agent-eval serve-model &",
    "  agent-eval run --agent my_agent.py --model local/chat --repeats 3 --out r.json",
    "  agent-eval report r.json",
]


def closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/v1"


def files_under(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}  # fmt: skip


def init_student(agent_eval: Cli, tmp_path: Path) -> Path:
    done = agent_eval("init", "student", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return tmp_path / "student"


# --- init ----------------------------------------------------------------------------


def test_init_writes_the_lessons_folder_and_a_second_init_overwrites_nothing(
    tmp_path: Path, agent_eval: Cli
) -> None:
    done = agent_eval("init", "student", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == INIT_LINES
    student = tmp_path / "student"
    part26 = shipped_suites()["part26"]
    assert (student / "agent-tasks.json").read_bytes() == part26.read_bytes()
    assert files_under(student / "agent-workspace") == files_under(part26.parent / "workspace")
    four_role = (ROOT / "examples" / "multi-agent-system.py").read_bytes()
    assert (student / "examples" / "multi-agent-system.py").read_bytes() == four_role
    readme = (student / "README.md").read_text()
    assert (
        "agent-eval run --agent my_agent.py --model local/chat --repeats 3 --out r.json" in readme
    )
    assert (
        "def run_task(task: str, options: dict[str, Any])" in (student / "my_agent.py").read_text()
    )

    (student / "my_agent.py").write_text("# my edits\n")
    (student / "README.md").unlink()
    before = files_under(student)
    again = agent_eval("init", "student", cwd=tmp_path)
    assert again.returncode == 1
    assert again.stdout == ""
    assert again.stderr.splitlines() == [
        "Error: student: agent-tasks.json, agent-workspace/, examples/, my_agent.py already "
        "there; init never overwrites a file, so it wrote nothing: move them away, or give "
        "another folder (agent-eval init DIR)"
    ]
    assert files_under(student) == before  # not even the missing README came back


def test_init_into_the_current_folder_and_a_file_in_the_way(
    tmp_path: Path, agent_eval: Cli
) -> None:
    (tmp_path / "notes.txt").write_text("mine\n")  # other files in the folder are fine
    done = agent_eval("init", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("wrote agent-tasks.json: ")
    assert "  cd " not in done.stdout
    assert (tmp_path / "notes.txt").read_text() == "mine\n"
    (tmp_path / "afile").write_text("x")
    in_the_way = agent_eval("init", "afile", cwd=tmp_path)
    assert in_the_way.returncode == 1
    assert in_the_way.stderr == (
        "Error: afile: is a file, not a folder; give a new folder's name\n"
    )


def test_init_with_another_shipped_suite_validates_and_runs_there(
    tmp_path: Path, agent_eval: Cli
) -> None:
    done = agent_eval("init", "ops", "--suite", "ops-state", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    ops = tmp_path / "ops"
    shipped = shipped_suites()["ops-state"]
    assert (ops / "agent-tasks.json").read_bytes() == shipped.read_bytes()
    assert files_under(ops / "agent-workspace") == files_under(shipped.parent / "workspace")
    assert files_under(ops / "hidden") == files_under(shipped.parent / "hidden")
    assert "wrote ops/hidden/: the files its command checks run, next to the suite" in done.stdout
    valid = agent_eval("validate", "agent-tasks.json", cwd=ops)
    assert valid.returncode == 0, valid.stdout + valid.stderr
    assert "the tasks of shipped suite ops-state" in valid.stdout
    unknown = agent_eval("init", "x", "--suite", "part27", cwd=tmp_path)
    assert unknown.returncode == 1 and "'part27' is not one of" in unknown.stderr
    assert not (tmp_path / "x").exists()


def test_init_offers_every_shipped_suite() -> None:
    (suite,) = [p for p in init_command.params if p.name == "suite"]
    assert sorted(suite.type.choices) == sorted(SHIPPED_FILES)  # type: ignore[attr-defined]


# --- the --tasks default ---------------------------------------------------------------


def test_without_tasks_an_edited_agent_tasks_json_here_is_the_suite_and_stderr_says_so(
    tmp_path: Path, agent_eval: Cli
) -> None:
    student = init_student(agent_eval, tmp_path)
    suite = json.loads((student / "agent-tasks.json").read_text())
    suite["version"] = "1.1.0"
    suite["tasks"] = suite["tasks"][1:3]  # r-gateway-port, r-log-retention
    (student / "agent-tasks.json").write_text(json.dumps(suite))
    done = agent_eval("run", "--agent", "builtin:dump-documents", "--workspace",
                      "./agent-workspace", "--out", "r.json", cwd=student)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout.splitlines()[0] == "dump-documents x local/chat: 2 task(s), 1 attempt(s) each"
    )
    assert done.stderr.splitlines()[0] == (
        "suite: ./agent-tasks.json (Part 26 agent task suite 1.1.0, 2 task(s)), the course's "
        "default without --tasks"
    )
    rows = json.loads((student / "r.json").read_text())["results"]
    assert [row["id"] for row in rows] == ["r-gateway-port", "r-log-retention"]


def test_without_tasks_and_without_agent_tasks_json_the_shipped_part26_runs_and_says_so(
    tmp_path: Path, agent_eval: Cli
) -> None:
    (tmp_path / "agent-tasks.json").mkdir()  # a folder of that name is not a suite file
    done = agent_eval("run", "--agent", "builtin:dump-documents", "--task-id",
                      "r-gateway-port", "--out", "r.json", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == (
        "suite: the shipped part26 (Part 26 agent task suite 1.0.0, 15 task(s)): no --tasks "
        "given and no ./agent-tasks.json here (`agent-eval init` writes one)"
    )
    given = agent_eval("run", "--agent", "builtin:dump-documents", "--tasks", "part26",
                       "--task-id", "r-gateway-port", "--out", "r2.json", cwd=tmp_path)  # fmt: skip
    assert not any(line.startswith("suite: ") for line in given.stderr.splitlines())


# --- documents -------------------------------------------------------------------------


def test_a_suite_without_documents_names_the_shipped_folders_and_init(
    tmp_path: Path, agent_eval: Cli
) -> None:
    student = init_student(agent_eval, tmp_path)
    suite = json.loads((student / "agent-tasks.json").read_text())
    suite["tasks"] = suite["tasks"][:2]
    (student / "a.json").write_text(json.dumps(suite))
    folders = ", ".join(str(p.parent / "workspace") for p in shipped_suites().values())
    fix = (f"the shipped suites' documents are in {folders}; `agent-eval init DIR` copies "
           "part26's (--suite NAME: another's) into DIR/agent-workspace")  # fmt: skip
    bare = agent_eval("run", "--agent", "builtin:empty", "--tasks", "a.json", cwd=student)
    assert bare.returncode == 1
    assert bare.stderr.splitlines() == [
        "Error: suite a.json: no documents to work on (its 'workspace' names no folder next "
        f"to it); give --workspace DIR with the agent's documents ({fix} (./agent-workspace "
        "is here)), or --allow-empty-workspace if the tasks need none"
    ]
    typo = agent_eval("run", "--agent", "builtin:empty", "--tasks", "a.json", "--workspace",
                      "./agent-workspaces", cwd=tmp_path)  # fmt: skip
    assert typo.returncode == 1
    (student / "a.json").replace(tmp_path / "a.json")
    typo = agent_eval("run", "--agent", "builtin:empty", "--tasks", "a.json", "--workspace",
                      "./agent-workspace", cwd=tmp_path)  # fmt: skip
    assert typo.stderr.splitlines() == [
        "Error: --workspace agent-workspace: no such folder, and suite a.json has no documents "
        f"to create it with; create it with the agent's documents ({fix})"
    ]
    fixed = agent_eval("run", "--agent", "builtin:empty", "--tasks", "a.json", "--workspace",
                       "student/agent-workspace", cwd=tmp_path)  # fmt: skip
    assert fixed.returncode == 2, fixed.stderr  # it runs; the empty answer fails


# --- the pre-flight check ----------------------------------------------------------------


def run_mine(agent_eval: Cli, student: Path, *flags: str, **env: str) -> Any:
    return agent_eval("run", "--agent", "my_agent.py", "--out", "r.json", *flags,
                      cwd=student, env=env)  # fmt: skip


def test_a_refused_connection_stops_before_the_first_attempt(
    tmp_path: Path, agent_eval: Cli
) -> None:
    student = init_student(agent_eval, tmp_path)
    url = closed_port_url()
    done = run_mine(agent_eval, student, "--model", "m", "--base-url", url)
    assert done.returncode == 3
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"Error: cannot reach model endpoint {url} (")
    assert line.endswith(
        "): start the model server (`agent-eval serve-model` serves the embedded model at "
        "http://127.0.0.1:4000/v1), or give --base-url of one that runs"
    )
    assert not (student / "trajectories").exists() and not (student / "r.json").exists()
    # The same from the environment, and for the shipped agents that call a model.
    env = run_mine(agent_eval, student, "--model", "m", OPENAI_BASE_URL=url)
    assert (env.returncode, env.stderr) == (3, done.stderr)
    shipped = agent_eval("run", "--agent", "builtin:retrieve-read", "--base-url", url,
                         "--out", "r.json", cwd=student)  # fmt: skip
    assert (shipped.returncode, shipped.stderr) == (3, done.stderr)


def test_agents_that_call_no_model_are_not_refused(tmp_path: Path, agent_eval: Cli) -> None:
    student = init_student(agent_eval, tmp_path)
    url = closed_port_url()
    baseline = agent_eval("run", "--agent", "builtin:empty", "--base-url", url, "--model",
                          "m", "--task-id", "r-gateway-port", "--out", "b.json",
                          cwd=student)  # fmt: skip
    assert baseline.returncode == 2, baseline.stderr  # it ran, and its empty answer failed
    (student / "fixed.py").write_text(
        "def run_task(task, options):\n    return {'answer': '4000', 'steps': 1, 'tokens': 1}\n"
    )
    # A user's agent with no endpoint or model named on the command line runs unchecked.
    unnamed = agent_eval("run", "--agent", "fixed.py", "--task-id", "r-gateway-port",
                         "--out", "f.json", cwd=student)  # fmt: skip
    assert unnamed.returncode == 0, unnamed.stderr
    skipped = agent_eval("run", "--agent", "fixed.py", "--task-id", "r-gateway-port",
                         "--base-url", url, "--no-preflight", "--out", "g.json",
                         cwd=student)  # fmt: skip
    assert skipped.returncode == 0, skipped.stderr


def test_an_unknown_model_is_one_line_naming_the_models_served(
    tmp_path: Path, agent_eval: Cli, mock_model: Mock
) -> None:
    student = init_student(agent_eval, tmp_path)
    server = mock_model({"models": SERVED, "default": GATEWAY})
    done = run_mine(agent_eval, student, "--model", "m", "--base-url", server.base_url)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"Error: --model m: not served by {server.base_url}; it serves local/chat, "
        "local/answer, local/router; give one of those (--no-preflight skips this check, for "
        "an endpoint that serves models it does not list)"
    ]
    router = agent_eval("run", "--agent", "examples/multi-agent-system.py", "--model",
                        "local/answer", "--router-model", "local/routr", "--base-url",
                        server.base_url, "--out", "r.json", cwd=student)  # fmt: skip
    assert router.returncode == 1
    assert router.stderr.startswith(
        f"Error: --router-model local/routr: not served by {server.base_url} (did you mean "
        "local/router?); it serves local/chat, local/answer, local/router;"
    )
    assert not (student / "trajectories").exists()
    served = run_mine(agent_eval, student, "--model", "local/chat", "--base-url",
                      server.base_url, "--task-id", "r-gateway-port")  # fmt: skip
    assert served.returncode == 0, served.stderr


def test_an_endpoint_that_lists_nothing_is_checked_for_answering_only(
    tmp_path: Path, agent_eval: Cli, mock_model: Mock
) -> None:
    student = init_student(agent_eval, tmp_path)
    server = mock_model({"default": GATEWAY})  # no models: lists none, answers any name
    done = run_mine(agent_eval, student, "--model", "anything", "--base-url", server.base_url,
                    "--task-id", "r-gateway-port")  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_without_the_check_the_servers_own_message_reaches_the_console_and_results(
    tmp_path: Path, agent_eval: Cli, mock_model: Mock
) -> None:
    student = init_student(agent_eval, tmp_path)
    server = mock_model({"models": SERVED, "default": GATEWAY})
    told = "model 'm' is not served here; use one of local/chat, local/answer, local/router"
    three = ("--task-id", "r-gateway-port", "--task-id", "r-log-retention", "--task-id",
             "x-refusal")  # fmt: skip
    for agent, raised in (
        ("my_agent.py", f"run_task raised RuntimeError: {server.base_url}/chat/completions "
                        f"answered HTTP 404: {told}"),
        ("builtin:minimal", f"run_task raised ConfigError: model endpoint {server.base_url} "
                            f"refused the request (HTTP 404): {told}; check --base-url (it "
                            "usually ends in /v1) and --model (GET /v1/models lists them)"),
    ):  # fmt: skip
        done = agent_eval("run", "--agent", agent, "--model", "m", "--base-url",
                          server.base_url, "--no-preflight", *three, "--out", "r.json",
                          cwd=student)  # fmt: skip
        assert done.returncode == 2, done.stderr  # the agent's configuration, not an outage
        notes = [line for line in done.stderr.splitlines() if line.startswith("Note: ")]
        assert notes == [
            f"Note: the first 3 attempts all failed with the same error (agent_error): {raised}; "
            "the run goes on (Ctrl-C stops it and keeps what finished)"
        ]
        rows = json.loads((student / "r.json").read_text())["results"]
        assert [row["error"] for row in rows] == [raised] * 3
        (student / "r.json").unlink()


def test_different_errors_and_a_passing_attempt_bring_no_same_error_notice(
    tmp_path: Path, agent_eval: Cli, mock_model: Mock
) -> None:
    student = init_student(agent_eval, tmp_path)
    server = mock_model({"models": ["m"], "default": GATEWAY})
    done = run_mine(agent_eval, student, "--model", "m", "--base-url", server.base_url,
                    "--task-id", "r-gateway-port", "--task-id", "r-log-retention",
                    "--task-id", "x-refusal")  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert not [line for line in done.stderr.splitlines() if line.startswith("Note: ")]


# --- a run whose endpoint fails ------------------------------------------------------------


def test_a_run_where_every_attempt_is_an_infra_error_exits_3_and_says_what_happened(
    tmp_path: Path, agent_eval: Cli
) -> None:
    student = init_student(agent_eval, tmp_path)
    url = closed_port_url()
    done = run_mine(agent_eval, student, "--model", "m", "--base-url", url, "--no-preflight",
                    "--max-infra-retries", "1", "--task-id", "r-gateway-port", "--task-id",
                    "r-log-retention", "--task-id", "x-refusal")  # fmt: skip
    assert done.returncode == 3
    refused = (
        "run_task raised urllib.error.URLError, a model endpoint connection failure, counted "
        "as infra_error: <urlopen error [Errno 111] Connection refused>"
    )
    notes = [line for line in done.stderr.splitlines() if line.startswith(("Note: ", "Error: "))]
    assert notes == [
        f"Note: the model endpoint failed ({refused}); each attempt it fails is retried up to "
        "1 time(s) with a growing wait (--max-infra-retries 0 retries none)",
        f"Note: the first 3 attempts all failed with the same error (infra_error): {refused}; "
        "the run goes on (Ctrl-C stops it and keeps what finished)",
        f"Error: all 3 attempt(s) failed at the model endpoint {url} (infra_error), so the "
        "agent was not measured; check that the server runs and answers, then run again",
    ]
    summary = done.stdout.splitlines()
    assert (
        "first try     0.00  (0 of 3 passed at the first try; 3 attempt(s) were retried "
        "after an endpoint failure, and none of them passed then)"
    ) in summary
    assert (student / "r.json").is_file()  # what ran is written


def test_the_first_try_line_counts_what_passed_after_a_retry(
    tmp_path: Path, agent_eval: Cli, mock_model: Mock
) -> None:
    student = init_student(agent_eval, tmp_path)
    server = mock_model({"models": ["m"], "default": GATEWAY,
                         "rules": [{"times": 1, "reply": {"fault": "503"}}]})  # fmt: skip
    done = run_mine(agent_eval, student, "--model", "m", "--base-url", server.base_url,
                    "--task-id", "r-gateway-port", "--repeats", "2")  # fmt: skip
    assert done.returncode == 0, done.stderr
    first_try = (
        "first try     0.50  (1 of 2 passed at the first try; 1 attempt(s) were retried "
        "after an endpoint failure, and 1 of them passed then)"
    )
    assert first_try in done.stdout.splitlines()
    summary = json.loads((student / "r.json").read_text())["run"]["summary"]
    assert (summary["retried_attempts"], summary["retried_passed"]) == (1, 1)


def test_run_help_documents_the_default_the_check_and_exit_code_3(
    agent_eval: Cli, tmp_path: Path
) -> None:
    done = agent_eval("run", "--help", cwd=tmp_path)
    text = " ".join(done.stdout.split())
    assert "./agent-tasks.json when it exists" in text
    assert "--no-preflight" in text
    assert "3 when the model endpoint could not be used" in text
