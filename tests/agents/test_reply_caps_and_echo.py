"""The reference agents on the course's command lines: each role's replies are capped,
and an answer that copies the agent's own instructions is never submitted."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_eval.agents import prompts
from agent_eval.agents.echo import echoed_words
from agent_eval.models.mock_server import MockModelServer

Cli = Callable[..., subprocess.CompletedProcess[str]]
ROUTER = {"json": {"route": "search", "reason": "a fact in the documents"}}
SEARCH = {"tool_calls": [{"name": "search_documents", "arguments": {"query": "password"}}]}
NOTES = {"content": "Nothing about a wireless password in the documents."}


def four_roles(answer: str) -> dict[str, Any]:
    """A script for the four roles whose answerer says ``answer`` and verifier keeps it."""
    return {
        "rules": [
            {"model": "local/router", "reply": ROUTER},
            {"system": "^You are the answerer", "reply": {"content": answer}},
            {
                "system": "^You are the verifier",
                "reply": {"json": {"supported": True, "answer": answer}},
            },
        ],
        "replies": [SEARCH, NOTES],
    }


def course_line(agent_eval: Cli, student: Path, base_url: str, *extra: str) -> dict[str, Any]:
    """The lesson's four-role usage line, verbatim, plus --base-url, --task-id and ``extra``."""
    done = agent_eval("run", "--agent", "builtin:multi-agent", "--tasks", "agent-tasks.json",
                      "--model", "local/answer", "--router-model", "local/router",
                      "--workspace", "./agent-workspace", "--out", "results-four-role.json",
                      "--base-url", base_url, "--task-id", "x-refusal", *extra,
                      cwd=student)  # fmt: skip
    assert done.returncode in (0, 2), done.stderr
    (row,) = json.loads((student / "results-four-role.json").read_text())["results"]
    return {**row, "stdout": done.stdout}


@pytest.mark.parametrize(
    ("extra", "caps"),
    [
        ((), [96, 384, 384, 256, 320]),
        (("--option", "reply_tokens=100"), [100] * 5),
        (("--option", "reply_tokens_router=32", "--option", "reply_tokens_verifier=64"),
         [32, 384, 384, 256, 64]),
    ],
)  # fmt: skip
def test_each_role_has_a_reply_cap_an_option_overrides(
    extra: tuple[str, ...],
    caps: list[int],
    student: Path,
    agent_eval: Cli,
    mock_model: Callable[..., MockModelServer],
) -> None:
    server = mock_model(four_roles("This is not stated in the documents."))
    course_line(agent_eval, student, server.base_url, *extra)
    assert [r["max_tokens"] for r in server.requests] == caps  # router, researcher x2, ...


def test_a_bad_cap_names_the_option(
    student: Path, agent_eval: Cli, mock_model: Callable[..., MockModelServer]
) -> None:
    server = mock_model(four_roles("This is not stated in the documents."))
    row = course_line(agent_eval, student, server.base_url, "--option", "reply_tokens=0")
    assert row["failure_class"] == "agent_error"
    assert row["error"].endswith("option reply_tokens=0: give 1 or more tokens per reply")
    assert server.request_count == 0


def test_an_answer_that_copies_the_prompt_is_not_submitted(
    student: Path, agent_eval: Cli, mock_model: Callable[..., MockModelServer]
) -> None:
    echo = prompts.answerer_system(json_mode=False)
    assert "does not contain" in echo  # the words the refusal check accepts
    server = mock_model(four_roles(echo))
    row = course_line(agent_eval, student, server.base_url, "--verbose")
    assert (row["checks"]["passed"], row["failure_class"]) == (False, "wrong_answer")
    assert (row["answer"], row["stopped"]) == ("", "echoed_instructions")
    assert "wrong_answer: regex did not match; stopped: echoed_instructions" in row["stdout"]
    stop = json.loads((student / row["trajectory_file"]).read_text().splitlines()[-2])
    assert stop["type"] == "stop" and stop["reason"] == "echoed_instructions"
    assert "words of the agent's own instructions; it was not submitted" in stop["detail"]


@pytest.mark.parametrize(
    "answer",
    [
        "This is not stated in the documents.",
        "The documents do not contain the wireless password, so I cannot give it.",
        "I searched the documents and the answer is not stated in them.",
    ],
)
def test_an_honest_refusal_is_submitted(
    answer: str, student: Path, agent_eval: Cli, mock_model: Callable[..., MockModelServer]
) -> None:
    server = mock_model(four_roles(answer))
    row = course_line(agent_eval, student, server.base_url)
    assert (row["answer"], row["stopped"], row["checks"]["passed"]) == (answer, "finished", True)


def test_quoting_the_documents_or_a_sanctioned_sentence_is_not_an_echo() -> None:
    instructions = [
        'If nothing is found, answer with exactly: "Anything more is not stated in the '
        'documents at all, sadly."',
        prompts.answerer_system(json_mode=True),
    ]
    sanctioned = "Port 4000. Anything more is not stated in the documents at all, sadly."
    assert echoed_words(sanctioned, instructions) == 0
    assert echoed_words("Be short: the gateway listens on port 4000.", instructions) == 0
    copied = "You write the final answer to a task, using only the evidence given."
    assert echoed_words(copied, instructions) == len(copied.split())
    long_copy = "Port 4000. " * 20 + copied + " using only the evidence given."
    assert echoed_words(long_copy, instructions) == 0  # 13 words copied among 58
    assert echoed_words(long_copy + " " + copied, instructions) > 16


def test_audit_answers_with_the_reference_agents_instructions(
    student: Path, agent_eval: Cli
) -> None:
    done = agent_eval("audit", "agent-tasks.json", "--format", "json", cwd=student)
    assert done.returncode == 2, done.stderr
    baseline = json.loads(done.stdout)["baselines"]["instructions"]
    assert baseline["passed"] == ["x-refusal"]
    assert baseline["why"].startswith("the reference agents' own instructions pass")
