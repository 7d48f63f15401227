"""The command line, black-box: exact lines on stdout and stderr, exact exit codes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

AGENT = """
SCAFFOLD_NAME = "fixed"
def run_task(task, options):
    answer = "The gateway listens on 4000." if "gateway" in task else "I do not know."
    return {"answer": answer, "steps": 2, "tokens": 1234}
"""


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    return subprocess.run(
        [sys.executable, "-m", "agent_eval", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_run_prints_the_course_layout(tmp_path: Path, write_agent: Callable[[str], Path]) -> None:
    write_agent(AGENT, "fixed.py")
    done = cli(
        "run",
        "--agent",
        "fixed.py",
        "--tasks",
        "part26",
        "--task-id",
        "r-gateway-port",
        "--task-id",
        "r-log-retention",
        "--repeats",
        "2",
        "--model",
        "m",
        "--no-preflight",  # this agent calls no model
        "--out",
        "r.json",
        "--cost-per-million",
        "0.5",
        cwd=tmp_path,
    )
    lines = done.stdout.splitlines()
    assert lines[:2] == ["fixed x m: 2 task(s), 2 attempt(s) each", ""]
    assert lines[2].startswith("  ok  r-gateway-port   r1   2 step(s)     1234 tok  ")
    assert lines[2].endswith("s") and len(lines[2]) == len(
        "  ok  r-gateway-port   r1   2 step(s)     1234 tok     0.0s"
    )
    # Attempt-major, as the course: every task of r1, then of r2.
    assert lines[3].startswith("  BAD r-log-retention  r1   2 step(s)     1234 tok  ")
    assert lines[4].startswith("  ok  r-gateway-port   r2 ")
    assert lines[6:10] == [
        "",
        "success rate  0.50  (2 of 4)",
        "mean steps    2.0",
        "mean tokens   1234.0",
    ]
    # The harness's own clock: near 0 for this agent, but how near depends on the machine.
    assert re.fullmatch(r"mean seconds  \d+\.\d", lines[10])
    assert lines[11:] == [
        "cost per task 0.000617  (at 0.5 per million tokens, your figure)",
        "",
        "results written to r.json; trajectories in trajectories/",
    ]
    assert done.returncode == 2
    assert json.loads((tmp_path / "r.json").read_text())["run"]["summary"]["passed"] == 2


def test_all_passed_exits_zero(tmp_path: Path, write_agent: Callable[[str], Path]) -> None:
    write_agent(AGENT, "fixed.py")
    done = cli("run", "--agent", "fixed.py", "--task-id", "r-gateway-port", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout.splitlines()[-3] == (
        "cost not computed: pass --cost-per-million from Part 23's cost-model.py"
    )


def test_validate_shipped_suite(tmp_path: Path) -> None:
    done = cli("validate", "part26", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout.startswith("ok  Part 26 agent task suite 1.0.0: 15 task(s), sha256:")


def test_validate_lists_every_problem(tmp_path: Path, write_suite: Callable[..., Path]) -> None:
    write_suite([{"id": "a", "task": "q", "expect_in_anwser": ["x"]}, {"id": "a"}], "bad.json")
    done = cli("validate", "bad.json", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "suite bad.json, task a: unknown field 'expect_in_anwser' (did you mean "
        "'expect_in_answer'?)",
        "suite bad.json, task a: field 'task': is required; add it",
        "suite bad.json, task a: duplicate id (also task #1); give each task its own id",
    ]
    assert done.stderr == "Error: suite bad.json: 3 problem(s) listed above\n"


def test_input_errors_are_one_line_exit_1(tmp_path: Path) -> None:
    cases = [
        (("run", "--agent", "nope.py"), "Error: agent nope.py: no such file; check the path\n"),
        (
            ("run", "--agent", "builtin:echo", "--tasks", "nope"),
            "Error: suite nope: no such file and no shipped suite of that name "
            "(shipped suites: cited, ops-state, part26)\n",
        ),
        (
            ("run", "--agent", "builtin:echo", "--option", "novalue"),
            "Error: --option 'novalue': write it as KEY=VALUE\n",
        ),
        (
            ("run", "--agent", "builtin:echo", "--repeats", "0"),
            "Error: --repeats 0: give 1 or more\n",
        ),
        (("frobnicate",), "Error: No such command 'frobnicate'. (see agent-eval --help)\n"),
    ]
    for args, stderr in cases:
        done = cli(*args, cwd=tmp_path)
        assert (done.returncode, done.stderr) == (1, stderr), args
        assert "Traceback" not in done.stderr
    done = cli("run", "--bogus", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith("Error: No such option '--bogus'.")
    assert done.stderr.endswith(" (see agent-eval run --help)\n")
    assert done.stderr.count("\n") == 1


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    done = cli("run", "--agent", "nope.py", "--debug", cwd=tmp_path)
    assert done.returncode == 1
    assert "Traceback" in done.stderr
    assert done.stderr.endswith("Error: agent nope.py: no such file; check the path\n")


def test_help_explains_every_run_flag(tmp_path: Path) -> None:
    done = cli("run", "--help", cwd=tmp_path)
    assert done.returncode == 0
    for flag in (
        "--agent",
        "--tasks",
        "--only",
        "--task-id",
        "--repeats",
        "--out",
        "--trajectory-dir",
        "--base-url",
        "--model",
        "--router-model",
        "--api-key",
        "--workspace",
        "--index",
        "--option",
        "--cost-per-million",
        "--quant",
        "--engine",
        "--engine-version",
        "--notes",
        "--labbook",
        "--verbose",
    ):
        assert flag in done.stdout, flag


def test_rescore_gives_the_same_verdicts(
    tmp_path: Path, write_agent: Callable[[str], Path]
) -> None:
    write_agent(AGENT, "fixed.py")
    cli("run", "--agent", "fixed.py", "--only", "retrieval", "--out", "r.json", cwd=tmp_path)
    done = cli("rescore", "r.json", "--tasks", "part26", "--out", "r2.json", cwd=tmp_path)
    assert done.stdout.splitlines()[0] == (
        "rescored 6 attempt(s) against Part 26 agent task suite 1.0.0: 0 verdict(s) changed, "
        "success rate 0.167"
    )
    assert done.returncode == 2
    before = json.loads((tmp_path / "r.json").read_text())["results"]
    after = json.loads((tmp_path / "r2.json").read_text())["results"]
    assert [r["checks"] for r in before] == [r["checks"] for r in after]


def test_the_demo_ends_with_where_its_reports_are_and_one_comparison() -> None:
    from agent_eval.cli.demo import ending
    from agent_eval.cli.view import view_command

    out = Path("demo-out")
    runs = [out / "results-retrieve-read.json", out / "results-minimal.json"]
    assert ending(out, runs) == [
        "",
        "Full reports (text and HTML), results, trajectories and the labbook: demo-out/",
        "  agent-eval compare demo-out/results-minimal.json demo-out/results-retrieve-read.json"
        "   # any two runs, in full",
        f"to see where each attempt went wrong: {view_command([out])}",
        "",
        "Next, measure your own agent: `agent-eval init student && cd student` writes the",
        "lesson's suite, its documents and my_agent.py to edit; its README has the commands.",
    ]
    assert ending(out, runs[:1]) == [*ending(out, runs)[:2], *ending(out, runs)[3:]]
