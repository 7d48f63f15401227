"""`run --verbose` through the course harness and through agent-eval: the attempt lines
(ids longer than the course's 16-character column included) and the lines under a failed
attempt must be the course's, byte for byte but the seconds; agent-eval may only add
lines of its own after them. And what an agent answers reaches the terminal with its
control characters shown, never as escape sequences the terminal would act on.

The course harness is ../shared/course/agent-eval.py, run as a program; without it the
differential test skips (in CI it fails).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.conftest import course_harness

from agent_eval.cli.console import attempt_detail, attempt_line
from agent_eval.records import Checks
from agent_eval.results import AttemptResult

LONG_ANSWER = (
    "The checkpoint is a pickle:\n"
    "\tloading it runs code.\n"
    + "It was written by the training job, which keeps one per epoch. " * 3
    + "\nThis line is past the cut."
)
AGENT = f"""
SCAFFOLD_NAME = "verbose"
LONG_ANSWER = {LONG_ANSWER!r}

def run_task(task, options):
    if "review" in task:
        return {{"answer": "On 2026-09-01.", "steps": 2, "tokens": 30, "stopped": "finished"}}
    if "checkpoint" in task:
        return {{"answer": LONG_ANSWER, "steps": 3, "tokens": 412, "stopped": "finished"}}
    if "backups" in task:
        return {{"answer": "Saturday,\\nthen Sunday.", "steps": 1, "tokens": 5,
                "stopped": "finished"}}
    if "machines" in task:
        return {{"answer": "3 machines.", "steps": 9, "tokens": 905, "stopped": "finished"}}
    raise ValueError("no answer for this one")
"""
SUITE = {
    "name": "verbose suite",
    "version": "1.0.0",
    "tasks": [
        {"id": "t-read-review-date", "task": "When is the policy reviewed?",
         "expect_in_answer": ["2026-09-01"]},
        {"id": "x-pickled-checkpoint", "task": "Is the checkpoint safe to load?",
         "expect_in_answer": ["28", "unsafe"]},
        {"id": "backups", "task": "On which day do the backups run?",
         "expect_in_answer": ["sunday"], "expect_not_in_answer": ["saturday"]},
        {"id": "machines", "task": "How many machines?", "expect_in_answer": ["3"],
         "max_steps": 3},
        {"id": "a-question-it-cannot-answer", "task": "What else?",
         "expect_in_answer": ["x"]},
    ],
}  # fmt: skip
OURS = re.compile(r"^        (wrong_answer|over_budget|agent_error|infra_error): ")
"""agent-eval's own line under a failed attempt, after the course's."""


def _run(folder: Path, command: list[str]) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300,
                          env=env, check=False)  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    return done.stdout


def _seconds_masked(stdout: str) -> list[str]:
    lines = [re.sub(r"(tok  )[ \d.]{6}s$", r"\1<sec>s", line) for line in stdout.split("\n")]
    return [re.sub(r"^(mean seconds  ).*$", r"\1<sec>", line) for line in lines]


@pytest.fixture(scope="module")
def consoles(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], list[str]]:
    """The course's console and ours, seconds masked, for the same agent and suite."""
    import json

    course = course_harness()
    root = tmp_path_factory.mktemp("verbose")
    out = []
    for name in ("course", "ours"):
        folder = root / name
        folder.mkdir()
        (folder / "verbose.py").write_text(AGENT, encoding="utf-8")
        (folder / "suite.json").write_text(json.dumps(SUITE), encoding="utf-8")
        common = ["--agent", "verbose.py", "--tasks", "suite.json", "--model", "local/chat",
                  "--out", "results.json", "--verbose"]  # fmt: skip
        if name == "course":
            command = [sys.executable, str(course), *common]
        else:
            command = [sys.executable, "-m", "agent_eval", "run", *common,
                       "--allow-empty-workspace", "--no-preflight"]  # fmt: skip
        out.append(_seconds_masked(_run(folder, command)))
    return out[0], out[1]


def test_verbose_console_is_the_courses_with_our_lines_added(
    consoles: tuple[list[str], list[str]],
) -> None:
    course, ours = consoles
    assert [line for line in ours if not OURS.match(line)] == course
    cut = LONG_ANSWER[:200].split("\n")
    assert course[2:16] == [
        "  ok  t-read-review-date r1   2 step(s)       30 tok  <sec>s",
        "  BAD x-pickled-checkpoint r1   3 step(s)      412 tok  <sec>s",
        f"        answer: {cut[0]}",
        cut[1],  # the answer's own lines, its tab kept
        cut[2],
        "        missing: ['28', 'unsafe']",
        "  BAD backups          r1   1 step(s)        5 tok  <sec>s",
        "        answer: Saturday,",
        "then Sunday.",
        "  BAD machines         r1   9 step(s)      905 tok  <sec>s",
        "        answer: 3 machines.",
        "  BAD a-question-it-cannot-answer r1   0 step(s)        0 tok  <sec>s",
        "        answer: ",
        "        missing: ['x']",
    ]
    assert len(cut) == 3 and "past the cut" not in "\n".join(course)


def test_our_lines_come_after_the_courses_and_only_where_they_add(
    consoles: tuple[list[str], list[str]],
) -> None:
    _, ours = consoles
    added = [(ours[i - 1], line) for i, line in enumerate(ours) if OURS.match(line)]
    assert added == [
        ("then Sunday.", "        wrong_answer: forbidden 'saturday'"),
        ("        answer: 3 machines.", "        over_budget: 9 steps over the limit"),
        ("        missing: ['x']",
         "        agent_error: run_task raised ValueError: no answer for this one"),
    ]  # fmt: skip  # none under x-pickled-checkpoint: the course's missing line says it all


def _row(answer: str, passed: bool = False, **fields: object) -> AttemptResult:
    checks = Checks(missing=[] if passed else ["28"], forbidden=[], regex_ok=True,
                    tool_ok=True, within_steps=True, tools_used=[], passed=passed)  # fmt: skip
    values: dict[str, object] = {
        "id": "t", "category": "c", "attempt": 1, "answer": answer, "steps": 1, "tokens": 2,
        "seconds": 0.1, "stopped": "finished", "checks": checks,
        "failure_class": "passed" if passed else "wrong_answer",
    }  # fmt: skip
    return AttemptResult.model_validate(values | fields)


def test_nothing_under_a_passing_attempt() -> None:
    assert attempt_detail(_row("It is 28.", passed=True)) == []


@pytest.mark.parametrize(
    ("answer", "printed"),
    [
        ("yes \x1b]52;c;cHduZWQ=\x07 then \x1b]8;;", "yes \\x1b]52;c;cHduZWQ=\\x07 then \\x1b]8;;"),
        ("\x1b[2J\x1b[1;1Hok", "\\x1b[2J\\x1b[1;1Hok"),
        ("\x9b2J and \x1bc", "\\x9b2J and \\x1bc"),  # a C1 CSI, a reset
        ("fake\r  ok  t", "fake\\x0d  ok  t"),  # a carriage return would write over the line
        ("two\nlines\tand a tab", "two\nlines\tand a tab"),  # kept, as the course keeps them
        ("bell\x07 and delete\x7f", "bell\\x07 and delete\\x7f"),
    ],
)
def test_the_answer_reaches_the_terminal_with_its_controls_shown(answer: str, printed: str) -> None:
    assert attempt_detail(_row(answer))[0] == "        answer: " + printed


def test_an_error_reaches_the_terminal_with_its_controls_shown() -> None:
    row = _row("", failure_class="agent_error", stopped="entry point raised ValueError",
               error="run_task raised ValueError: \x1b]0;owned\x07boom\nsecond line")  # fmt: skip
    assert attempt_detail(row) == [
        "        answer: ",
        "        missing: ['28']",
        "        agent_error: run_task raised ValueError: \\x1b]0;owned\\x07boom second line",
    ]


def test_the_id_column_is_the_courses_16_and_a_longer_id_runs_over() -> None:
    assert attempt_line(_row("", id="short")) == (
        "  BAD short            r1   1 step(s)        2 tok     0.1s"
    )
    assert attempt_line(_row("", id="x-pickled-checkpoint", passed=True)) == (
        "  ok  x-pickled-checkpoint r1   1 step(s)        2 tok     0.1s"
    )


def test_verbose_prints_no_escape_sequence_of_an_answer_or_error(
    tmp_path: Path,
    write_suite: Callable[..., Path],
    write_agent: Callable[..., Path],
    agent_eval: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    write_agent(
        "def run_task(task, options):\n"
        "    if 'raise' in task:\n"
        "        raise ValueError('\\x1b[2J\\x1b[H gone')\n"
        "    return {'answer': 'yes \\x1b]52;c;cHduZWQ=\\x07 then \\x1b]8;;http://x\\x1b\\\\ "
        "\\x1b[1A\\x1b[2K', 'steps': 1, 'tokens': 1}\n",
        "osc.py",
    )  # fmt: skip
    write_suite([{"id": "osc", "task": "q", "expect_in_answer": ["28"]},
                 {"id": "raises", "task": "raise", "expect_in_answer": ["28"]}])  # fmt: skip
    done = agent_eval("run", "--agent", "osc.py", "--tasks", "suite.json", "--verbose",
                      cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    lines = done.stdout.splitlines()
    assert lines[3] == (
        "        answer: yes \\x1b]52;c;cHduZWQ=\\x07 then \\x1b]8;;http://x\\x1b\\ "
        "\\x1b[1A\\x1b[2K"
    )
    assert "        agent_error: run_task raised ValueError: \\x1b[2J\\x1b[H gone" in lines
