"""An honest "the documents do not contain this" from either reference agent passes part26's
refusal task, x-refusal, judged by the real check on the shipped suite (left unchanged).

The scripted model follows its prompt: a rule answers with the refusal sentence only when
the system prompt asks for that sentence, so a prompt that stops asking for it fails here.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_eval.agents import minimal, multi_agent, prompts
from agent_eval.models.mock_server import MockModelServer
from agent_eval.records import Checks
from agent_eval.run.runner import execute, prepare
from agent_eval.run.settings import RunConfig
from agent_eval.score.checks import score_attempt, tools_used
from agent_eval.suite.load import load_suite

Start = Callable[..., MockModelServer]
MODES = pytest.mark.parametrize("mode", ["native", "json"])
SUITE = load_suite("part26")
(REFUSAL,) = [t for t in SUITE.suite.tasks if t.id == "x-refusal"]
SEARCH = {"tool_calls": [{"name": "search_documents", "arguments": {"query": "wireless password"}}]}
ASKS_FOR_THE_SENTENCE = re.escape(prompts.NOT_STATED)
INVENTED = "The password is hunter2."
OLD_WORDING = "The documents do not say."
"""What the verifier used to answer; x-refusal's pattern has "does not say", not "do not"."""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A fresh copy of the part26 documents, as the harness gives an attempt."""
    assert SUITE.documents is not None
    return Path(shutil.copytree(SUITE.documents, tmp_path / "workspace"))


def options(server: MockModelServer, workspace: Path, mode: str) -> dict[str, Any]:
    return {
        "base_url": server.base_url, "model": "mock-main", "router_model": "mock-router",
        "workspace": str(workspace), "tool_mode": mode, "task_id": REFUSAL.id, "attempt": 1,
        "limits": {"max_steps": REFUSAL.max_steps, "max_tokens": None, "max_seconds": None},
    }  # fmt: skip


def judged(result: dict[str, Any]) -> Checks:
    """x-refusal's own checks on what the agent returned."""
    used = tools_used(result["trajectory"])
    return score_attempt(REFUSAL, result["answer"], result["steps"], used)


@pytest.mark.parametrize(
    ("answer", "passes"),
    [
        (prompts.NOT_STATED, True),
        (f"The documents list the machines. {prompts.REST_NOT_STATED}", True),
        (OLD_WORDING, False),
        ("The documents do not contain this.", False),  # "do not", the near miss again
        (f"{prompts.NOT_STATED[:-1]}; the password is in a drawer.", False),
    ],
)
def test_the_refusal_sentences_against_the_real_check(answer: str, passes: bool) -> None:
    assert score_attempt(REFUSAL, answer, 3, ["search_documents"]).passed is passes


@MODES
def test_minimal_agent_refusal_passes(mock_model: Start, workspace: Path, mode: str) -> None:
    server = mock_model({
        "rules": [{"system": ASKS_FOR_THE_SENTENCE, "turn": 1,
                   "reply": {"content": prompts.NOT_STATED}}],
        "replies": [SEARCH],
        "default": {"content": OLD_WORDING},
    })  # fmt: skip
    result = minimal.run_task(REFUSAL.task, options(server, workspace, mode))
    assert (result["answer"], result["stopped"]) == (prompts.NOT_STATED, "finished")
    assert judged(result).passed


def four_roles(answerer: dict[str, Any], verdict: dict[str, Any]) -> dict[str, Any]:
    return {
        "rules": [
            {"model": "router", "reply": {"json": {"route": "search", "reason": "a fact"}}},
            {"system": "^You are the answerer", "reply": answerer},
            {"system": "^You are the verifier", "reply": {"json": verdict}},
        ],
        "replies": [SEARCH, {"content": "Nothing about a wireless network was found."}],
    }


@MODES
def test_multi_agent_answerer_refusal_passes(mock_model: Start, workspace: Path, mode: str) -> None:
    answerer = {"content": prompts.NOT_STATED}
    script = four_roles(answerer, {"supported": True, "answer": prompts.NOT_STATED})
    script["rules"][1]["system"] += "[\\s\\S]*" + ASKS_FOR_THE_SENTENCE
    server = mock_model({**script, "default": {"content": OLD_WORDING}})
    result = multi_agent.run_task(REFUSAL.task, options(server, workspace, mode))
    assert (result["answer"], result["stopped"]) == (prompts.NOT_STATED, "finished")
    assert judged(result).passed


@MODES
@pytest.mark.parametrize(
    ("revised", "final"),
    [
        ("", prompts.NOT_STATED),
        (INVENTED, prompts.NOT_STATED),  # "revised" to the same claim: nothing is supported
        (OLD_WORDING, f"{OLD_WORDING} {prompts.REST_NOT_STATED}"),
        (
            "The documents list the machines and their services.",
            f"The documents list the machines and their services. {prompts.REST_NOT_STATED}",
        ),
        (prompts.NOT_STATED, prompts.NOT_STATED),
    ],
)
def test_verifier_rejection_gives_a_refusal_that_passes(
    mock_model: Start, workspace: Path, mode: str, revised: str, final: str
) -> None:
    script = four_roles({"content": INVENTED}, {"supported": False, "answer": revised})
    result = multi_agent.run_task(REFUSAL.task, options(mock_model(script), workspace, mode))
    assert (result["answer"], result["stopped"]) == (final, "finished")
    assert "the verifier found unsupported claims" in result["trajectory"][-1]["detail"]
    checks = judged(result)
    assert checks.passed and checks.regex_ok, checks


@MODES
@pytest.mark.parametrize("agent", ["minimal", "multi-agent"])
def test_the_runner_scores_the_refusal_as_passed(
    mock_model: Start, tmp_path: Path, mode: str, agent: str
) -> None:
    if agent == "minimal":
        script: dict[str, Any] = {"replies": [SEARCH], "default": {"content": prompts.NOT_STATED}}
    else:
        script = four_roles({"content": INVENTED}, {"supported": False, "answer": ""})
    server = mock_model(script)
    config = RunConfig(
        agent=f"builtin:{agent}", tasks="part26", task_ids=(REFUSAL.id,),
        base_url=server.base_url, model="mock-main", router_model="mock-router",
        options={"tool_mode": mode}, out=tmp_path / "r.json", trajectory_dir=tmp_path / "traj",
    )  # fmt: skip
    (row,) = execute(prepare(config)).rows
    assert (row.answer, row.failure_class) == (prompts.NOT_STATED, "passed")
    assert row.checks.regex_ok is True
