"""`agent-eval replay`: one recorded attempt again, in the foreground, its calls printed."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_eval.models.mock_server import MockModelServer

AGENT = """
import os
from agent_eval.models.client import ChatClient

PROMPT = {prompt!r}


def run_task(task, options):
    print(f"agent running in {{os.getpid()}}, child of {{os.getppid()}}", flush=True)
    with ChatClient(options["base_url"], options.get("api_key")) as client:
        reply = client.chat(options["model"], [{{"role": "user", "content": PROMPT + task}}])
    return {{"answer": reply.content or "", "steps": 1,
            "tokens": reply.prompt_tokens + reply.completion_tokens}}
"""
ANSWER = "The model gateway listens on port 4000."


def test_replay_reruns_one_attempt_in_the_foreground_printing_its_calls(
    tmp_path: Path,
    mock_model: Callable[..., MockModelServer],
    write_agent: Callable[..., Path],
    agent_eval: Callable[..., Any],
) -> None:
    server = mock_model({"default": {"content": ANSWER}})
    write_agent(AGENT.format(prompt="Briefly: "))
    done = agent_eval("run", "--agent", "agent.py", "--tasks", "part26", "--task-id",
                      "r-gateway-port", "--repeats", "2", "--base-url", server.base_url,
                      "--model", "mock", "--out", "rec.json", "--record", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    server.stop()
    done = agent_eval("replay", "rec.json", "--task", "r-gateway-port", "--attempt", "2",
                      cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert f"child of {os.getpid()}" in out  # the agent ran in the command's own process
    assert "call 1  POST /v1/chat/completions  from the recording" in out
    assert '"content": "Briefly: Which port' in out  # the request
    assert "  response: 200 " in out and ANSWER in out
    assert "  ok  r-gateway-port   r2   " in out
    # a changed agent is stopped at its first differing call, the field named
    write_agent(AGENT.format(prompt="In one word: "))
    done = agent_eval("replay", "rec.json", "--task", "r-gateway-port", "--attempt", "1",
                      cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "replay_mismatch: call 1: messages[0].content differs" in done.stdout
    # bad input is one clear line
    done = agent_eval("replay", "rec.json", "--task", "r-gateway-port", "--attempt", "3",
                      cwd=tmp_path)  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.startswith("Error: rec.json: no attempt 3 of task r-gateway-port")


def test_run_flags_for_record_replay_and_cache_through_the_cli(
    tmp_path: Path,
    mock_model: Callable[..., MockModelServer],
    write_agent: Callable[..., Path],
    agent_eval: Callable[..., Any],
) -> None:
    server = mock_model({"default": {"content": ANSWER}})
    write_agent(AGENT.format(prompt="Briefly: "))
    common = ("run", "--agent", "agent.py", "--task-id", "r-gateway-port", "--model", "mock",
              "--base-url", server.base_url, "--repeats", "2")  # fmt: skip
    done = agent_eval(*common, "--cache", "cache", "--out", "one.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 2  # one reply per attempt
    server.stop()
    # every reply from the cache: the stopped endpoint is not checked before the run
    done = agent_eval(*common, "--cache", "cache", "--no-preflight", "--out", "two.json",
                      cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    for flags, error in [
        (("--replay-missing", "pass-through"),
         "Error: --replay-missing pass-through: add --replay RESULTS.json"),
        (("--replay", "nothing.json"),
         "Error: --replay nothing.json: no such results file; give the results file of a run "
         "made with --record"),
        (("--replay", "one.json"),
         "Error: --replay one.json: no attempt of that run was recorded; record one with "
         "`agent-eval run --record ...`"),
        (("--replay", "one.json", "--cache", "cache"),
         "Error: --cache cache: a replay answers from its recording; drop --cache"),
    ]:  # fmt: skip
        done = agent_eval(*common, *flags, cwd=tmp_path)
        assert (done.returncode, done.stderr.strip()) == (1, error)
    assert not list(tmp_path.glob("*.journal.jsonl"))  # bad input loses nothing, leaves nothing
