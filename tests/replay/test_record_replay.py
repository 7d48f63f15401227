"""Record each attempt's model calls, stop the server, replay them: same verdicts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_eval.models.mock_server import MockModelServer
from agent_eval.replay import read_recording
from agent_eval.results import AttemptResult
from agent_eval.run.runner import execute, prepare
from agent_eval.run.settings import RunConfig

KEY = "sk-replay-secret-0123456789"
SEARCH = {"tool_calls": [{"name": "search_documents", "arguments": {"query": "gateway port"}}]}
ANSWER = {"content": "The model gateway listens on port 4000."}
SCRIPT: dict[str, Any] = {"replies": [SEARCH, ANSWER]}
TASKS = ("r-gateway-port", "r-backup-window")


def run(tmp_path: Path, out: str, **extra: Any) -> list[AttemptResult]:
    settings: dict[str, Any] = {
        "agent": "builtin:minimal", "tasks": "part26", "task_ids": TASKS, "model": "mock",
        "out": tmp_path / out, "trajectory_dir": tmp_path / "traj", "retry_backoff": 0.01,
        "api_key": KEY, "repeats": 2,
        # a set tool mode: the agent asks no /v1/models advice, so calls are the replies'
        "options": {"tool_mode": "native"}, **extra,
    }  # fmt: skip
    return execute(prepare(RunConfig(**settings))).rows


def trajectory(tmp_path: Path, row: AttemptResult) -> list[dict[str, Any]]:
    """The agent's records, without what differs run to run (times, the run id)."""
    assert row.trajectory_file is not None
    lines = [json.loads(line) for line in (tmp_path / row.trajectory_file).read_text().splitlines()]
    drop = {"seconds", "started", "run_id"}
    return [{k: v for k, v in line.items() if k not in drop} for line in lines[1:]]


def verdicts(rows: list[AttemptResult]) -> list[tuple[Any, ...]]:
    return [(r.id, r.attempt, r.answer, r.passed, r.failure_class, r.steps, r.tokens,
             r.prompt_tokens, r.completion_tokens, r.stopped, r.checks.tools_used)
            for r in rows]  # fmt: skip


def test_a_recorded_run_replays_with_the_server_stopped(
    tmp_path: Path, mock_model: Callable[..., MockModelServer]
) -> None:
    server = mock_model(SCRIPT)
    recorded = run(tmp_path, "rec.json", base_url=server.base_url, record=True)
    assert server.request_count == 8  # two tasks, two repeats, two calls each
    server.stop()
    replayed = run(tmp_path, "rep.json", base_url=server.base_url, replay=tmp_path / "rec.json")
    assert verdicts(replayed) == verdicts(recorded)
    assert {r.failure_class for r in replayed} == {"passed", "wrong_answer"}
    for before, after in zip(recorded, replayed, strict=True):
        assert trajectory(tmp_path, after) == trajectory(tmp_path, before)
        header, calls = read_recording(tmp_path / str(after.recording_file))
        assert (header["mode"], len(calls)) == ("replay", 2)
        assert {c["source"] for c in calls} == {"recording"}


def test_each_attempt_has_its_own_recording_in_call_order(
    tmp_path: Path, mock_model: Callable[..., MockModelServer]
) -> None:
    server = mock_model(SCRIPT)
    rows = run(tmp_path, "rec.json", base_url=server.base_url, record=True)
    names = {row.recording_file for row in rows}
    assert len(names) == 4 and None not in names
    for row in rows:
        header, calls = read_recording(tmp_path / str(row.recording_file))
        assert (header["task_id"], header["attempt"], header["try"]) == (row.id, row.attempt, 1)
        assert [c["call"] for c in calls] == [1, 2]
        first, second = calls
        assert first["path"] == "/v1/chat/completions"
        assert first["response"]["status"] == 200
        assert first["response"]["json"]["choices"][0]["message"]["tool_calls"]
        assert second["offset"] >= first["offset"] + first["seconds"] - 0.01
        assert len(second["request"]["json"]["messages"]) > len(
            first["request"]["json"]["messages"]
        )


QUERY_AGENT = """
import httpx


def run_task(task, options):
    url = options["base_url"] + "/chat/completions?api-key=sk-in-the-query-42&version=1"
    body = {"model": options["model"], "messages": [{"role": "user", "content": task}]}
    reply = httpx.post(url, json=body, headers={"X-Api-Key": "sk-in-a-header-42"}).json()
    return {"answer": reply["choices"][0]["message"]["content"], "steps": 1, "tokens": 1}
"""


def test_a_secret_in_the_query_or_a_header_reaches_the_endpoint_not_the_recording(
    tmp_path: Path, mock_model: Callable[..., MockModelServer], write_agent: Callable[..., Path]
) -> None:
    server = mock_model({"default": ANSWER})
    (row,) = run(tmp_path, "rec.json", agent=str(write_agent(QUERY_AGENT)), repeats=1,
                 base_url=server.base_url, record=True, task_ids=TASKS[:1])  # fmt: skip
    assert row.failure_class == "passed"  # the endpoint got the request whole
    text = (tmp_path / str(row.recording_file)).read_text()
    assert "sk-in-the-query-42" not in text and "sk-in-a-header-42" not in text
    _, (call,) = read_recording(tmp_path / str(row.recording_file))
    assert call["path"] == "/v1/chat/completions?api-key=%5Bredacted%5D&version=1"


def test_no_secret_reaches_a_recording(
    tmp_path: Path, mock_model: Callable[..., MockModelServer]
) -> None:
    server = mock_model(SCRIPT)
    run(tmp_path, "rec.json", base_url=server.base_url, record=True,
        options={"db_password": "hunter2-hunter2"})  # fmt: skip
    texts = [p.read_text() for p in (tmp_path / "traj").glob("*.recording.ndjson")]
    assert len(texts) == 4
    for text in texts:
        assert KEY not in text and "hunter2-hunter2" not in text
        assert "authorization" not in text.lower()


ONE_CALL = """
from agent_eval.models.client import ChatClient

PROMPT = {prompt!r}
TEMPERATURE = {temperature!r}
CALLS = {calls!r}


def run_task(task, options):
    tokens, content = 0, ""
    with ChatClient(options["base_url"], options.get("api_key")) as client:
        for _ in range(CALLS):
            messages = [{{"role": "user", "content": PROMPT.format(task=task)}}]
            reply = client.chat(options["model"], messages, temperature=TEMPERATURE)
            tokens += reply.prompt_tokens + reply.completion_tokens
            content = reply.content or ""
    return {{"answer": content, "steps": CALLS, "tokens": tokens}}
"""


def one_call_agent(
    write_agent: Callable[..., Path],
    prompt: str = "Answer briefly: {task}",
    temperature: float = 0.0,
    calls: int = 1,
    name: str = "agent.py",
) -> str:
    source = ONE_CALL.format(prompt=prompt, temperature=temperature, calls=calls)
    return str(write_agent(source, name))


def test_a_line_separator_in_a_prompt_records_and_replays(
    tmp_path: Path, mock_model: Callable[..., MockModelServer], write_agent: Callable[..., Path]
) -> None:
    """U+2028 and NEL are text inside a recording's line (written as they are), not line
    ends: the recording reads back call by call and replays."""
    server = mock_model({"default": ANSWER})
    agent = one_call_agent(write_agent, prompt="Answer\u2028briefly\x85: {task}")
    (recorded,) = run(tmp_path, "rec.json", agent=agent, base_url=server.base_url, record=True,
                      task_ids=TASKS[:1], repeats=1)  # fmt: skip
    path = tmp_path / str(recorded.recording_file)
    assert "\u2028" in path.read_text(encoding="utf-8")  # the case under test
    _, (call,) = read_recording(path)
    assert call["request"]["json"]["messages"][0]["content"].startswith("Answer\u2028briefly\x85: ")
    server.stop()
    replayed = run(tmp_path, "rep.json", agent=agent, base_url=server.base_url,
                   replay=tmp_path / "rec.json", task_ids=TASKS[:1], repeats=1)  # fmt: skip
    assert verdicts(replayed) == verdicts([recorded])
    assert recorded.failure_class == "passed"


def test_a_changed_prompt_stops_as_replay_mismatch_naming_the_message(
    tmp_path: Path, mock_model: Callable[..., MockModelServer], write_agent: Callable[..., Path]
) -> None:
    server = mock_model({"default": ANSWER})
    agent = one_call_agent(write_agent)
    recorded = run(tmp_path, "rec.json", agent=agent, base_url=server.base_url, record=True)
    assert {r.failure_class for r in recorded} <= {"passed", "wrong_answer"}
    server.stop()
    changed = one_call_agent(write_agent, prompt="Reply in one line: {task}", name="changed.py")
    rows = run(tmp_path, "rep.json", agent=changed, base_url=server.base_url,
               replay=tmp_path / "rec.json")  # fmt: skip
    for row in rows:
        assert (row.failure_class, row.stopped, row.infra_retries) == (
            "replay_mismatch", "replay_mismatch", 0)  # fmt: skip
        assert row.error is not None and "messages[0].content differs" in row.error
        assert "Answer briefly" in row.error and "Reply in one line" in row.error
        score = json.loads((tmp_path / str(row.trajectory_file)).read_text().splitlines()[-1])
        assert (score["failure_class"], score["stopped"]) == ("replay_mismatch", "replay_mismatch")


def test_a_changed_parameter_or_model_is_named(
    tmp_path: Path, mock_model: Callable[..., MockModelServer], write_agent: Callable[..., Path]
) -> None:
    server = mock_model({"default": ANSWER})
    run(tmp_path, "rec.json", agent=one_call_agent(write_agent), base_url=server.base_url,
        record=True, task_ids=TASKS[:1], repeats=1)  # fmt: skip
    server.stop()
    warmer = one_call_agent(write_agent, temperature=0.7, name="warmer.py")
    (row,) = run(tmp_path, "t.json", agent=warmer, base_url=server.base_url,
                 replay=tmp_path / "rec.json", task_ids=TASKS[:1], repeats=1)  # fmt: skip
    assert (
        row.error is not None
        and "call 1: temperature differs (recorded 0.0, sent 0.7)" in row.error
    )
    (row,) = run(tmp_path, "m.json", agent=one_call_agent(write_agent), model="other",
                 base_url=server.base_url, replay=tmp_path / "rec.json", task_ids=TASKS[:1],
                 repeats=1, replay_missing="pass-through")  # fmt: skip
    # pass-through is for calls the recording lacks; a differing call is never sent on
    assert row.failure_class == "replay_mismatch"
    assert row.error is not None and 'model differs (recorded "mock", sent "other")' in row.error


def test_a_call_the_recording_lacks_is_a_mismatch_unless_passed_through(
    tmp_path: Path, mock_model: Callable[..., MockModelServer], write_agent: Callable[..., Path]
) -> None:
    server = mock_model({"default": ANSWER})
    agent = one_call_agent(write_agent)
    (recorded,) = run(tmp_path, "rec.json", agent=agent, base_url=server.base_url,
                      record=True, task_ids=TASKS[:1], repeats=1)  # fmt: skip
    twice = one_call_agent(write_agent, calls=2, name="twice.py")
    (row,) = run(tmp_path, "a.json", agent=twice, base_url=server.base_url,
                 replay=tmp_path / "rec.json", task_ids=TASKS[:1], repeats=1)  # fmt: skip
    assert row.failure_class == "replay_mismatch"
    assert row.error is not None and "call 2 (POST /v1/chat/completions) is new" in row.error
    assert server.request_count == 1  # the replay never reached the endpoint
    (row,) = run(tmp_path, "b.json", agent=twice, base_url=server.base_url,
                 replay=tmp_path / "rec.json", task_ids=TASKS[:1], repeats=1,
                 replay_missing="pass-through")  # fmt: skip
    assert (row.failure_class, row.answer, server.request_count) == (
        recorded.failure_class, recorded.answer, 2)  # fmt: skip
    _, calls = read_recording(tmp_path / str(row.recording_file))
    assert [c["source"] for c in calls] == ["recording", "endpoint"]
    # an agent that stops before the recording's end diverged too
    server.stop()
    (row,) = run(tmp_path, "c.json", agent=one_call_agent(write_agent, calls=0, name="none.py"),
                 base_url=server.base_url, replay=tmp_path / "rec.json", task_ids=TASKS[:1],
                 repeats=1)  # fmt: skip
    assert row.failure_class == "replay_mismatch"
    assert row.error == "replay_mismatch: the agent stopped after 0 of the recording's 1 call(s)"


def test_repeats_under_cache_keep_their_own_replies(
    tmp_path: Path, mock_model: Callable[..., MockModelServer]
) -> None:
    script = {"rules": [{"times": 1, "reply": {"content": "First: port 4000."}}],
              "default": {"content": "Second: port 4000."}}  # fmt: skip
    server = mock_model(script)
    cache = tmp_path / "cache"
    first = run(tmp_path, "one.json", base_url=server.base_url, cache_dir=cache,
                task_ids=TASKS[:1])  # fmt: skip
    answers = {r.attempt: r.answer for r in first}
    assert sorted(answers.values()) == ["First: port 4000.", "Second: port 4000."]
    assert all(r.recording_file is None for r in first)  # --cache alone records nothing
    server.stop()
    again = run(tmp_path, "two.json", base_url=server.base_url, cache_dir=cache,
                task_ids=TASKS[:1], record=True)  # fmt: skip
    assert {r.attempt: r.answer for r in again} == answers  # each repeat its own reply
    assert all(r.passed for r in again)
    for row in again:
        _, calls = read_recording(tmp_path / str(row.recording_file))
        assert [c["source"] for c in calls] == ["cache"]
    # a replay, too, gives each repeat its own recorded reply
    replayed = run(tmp_path, "four.json", base_url=server.base_url, task_ids=TASKS[:1],
                   replay=tmp_path / "two.json")  # fmt: skip
    assert {r.attempt: r.answer for r in replayed} == answers
    # another attempt number is not in the cache: it goes to the (stopped) endpoint
    more = run(tmp_path, "three.json", base_url=server.base_url, cache_dir=cache,
               task_ids=TASKS[:1], repeats=3, max_infra_retries=0)  # fmt: skip
    assert [r.failure_class for r in more] == ["passed", "passed", "infra_error"]


def test_an_endpoint_failure_is_recorded_and_replayed_try_by_try(
    tmp_path: Path, mock_model: Callable[..., MockModelServer]
) -> None:
    server = mock_model({"rules": [{"times": 1, "reply": {"fault": "503"}}], "default": ANSWER})
    (row,) = run(tmp_path, "rec.json", base_url=server.base_url, record=True,
                 task_ids=TASKS[:1], repeats=1)  # fmt: skip
    assert (row.failure_class, row.infra_retries) == ("passed", 1)
    names = sorted(p.name.rsplit("-", 1)[-1] for p in (tmp_path / "traj").glob("*.ndjson"))
    assert names == ["r1.recording.ndjson", "r1.try1.recording.ndjson"]
    failed = next((tmp_path / "traj").glob("*.try1.recording.ndjson"))
    _, (call,) = read_recording(failed)
    assert call["response"]["status"] == 503
    server.stop()
    (again,) = run(tmp_path, "rep.json", base_url=server.base_url,
                   replay=tmp_path / "rec.json", task_ids=TASKS[:1], repeats=1)  # fmt: skip
    assert verdicts([again]) == verdicts([row])
    assert again.infra_retries == 1


def test_a_refused_connection_is_recorded_as_an_error(tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (row,) = run(tmp_path, "rec.json", base_url=f"http://127.0.0.1:{port}/v1", record=True,
                 task_ids=TASKS[:1], repeats=1, max_infra_retries=0)  # fmt: skip
    assert row.failure_class == "infra_error"
    _, (call,) = read_recording(tmp_path / str(row.recording_file))
    assert call["response"] is None and call["error"]["kind"] == "connection"
    (again,) = run(tmp_path, "rep.json", base_url=f"http://127.0.0.1:{port}/v1",
                   replay=tmp_path / "rec.json", task_ids=TASKS[:1], repeats=1,
                   max_infra_retries=0)  # fmt: skip
    assert (again.failure_class, again.stopped) == ("infra_error", "model_error")
    # the agent quotes its endpoint in the error: the replay's proxy took the same address
    assert trajectory(tmp_path, again) == trajectory(tmp_path, row)


def test_resume_continues_the_recording(
    tmp_path: Path, mock_model: Callable[..., MockModelServer]
) -> None:
    server = mock_model(SCRIPT)
    first = run(tmp_path, "rec.json", base_url=server.base_url, record=True, repeats=1,
                task_ids=TASKS[:1])  # fmt: skip
    assert json.loads((tmp_path / "rec.json").read_text())["run"]["recorded"] is True
    # more repeats of the finished run, without --record: the new ones are recorded too
    more = run(tmp_path, "rec.json", base_url=server.base_url, repeats=2, task_ids=TASKS[:1],
               resume=tmp_path / "rec.json")  # fmt: skip
    assert [r.recording_file is not None for r in more] == [True, True]
    assert more[0].recording_file == first[0].recording_file
    server.stop()
    replayed = run(tmp_path, "rep.json", base_url=server.base_url, repeats=2,
                   task_ids=TASKS[:1], replay=tmp_path / "rec.json")  # fmt: skip
    assert verdicts(replayed) == verdicts(more)
    assert json.loads((tmp_path / "rep.json").read_text())["run"]["replayed_from"] == str(
        tmp_path / "rec.json"
    )


def test_a_call_cut_off_by_the_time_budget_replays_as_over_budget(
    tmp_path: Path, mock_model: Callable[..., MockModelServer]
) -> None:
    server = mock_model({"default": {"fault": "timeout"}}, hang_seconds=5)
    (row,) = run(tmp_path, "rec.json", base_url=server.base_url, record=True,
                 task_ids=TASKS[:1], repeats=1, timeout_per_task=1.5)  # fmt: skip
    assert row.failure_class == "over_budget"
    _, (call,) = read_recording(tmp_path / str(row.recording_file))
    assert call["response"] is None and call["error"]["kind"] == "unanswered"
    server.stop()
    # the replayed call gets no reply either, until the budget stops the attempt again
    (again,) = run(tmp_path, "rep.json", base_url=server.base_url, task_ids=TASKS[:1],
                   repeats=1, timeout_per_task=1.5, replay=tmp_path / "rec.json")  # fmt: skip
    assert verdicts([again]) == verdicts([row])
