"""The scripted model server: a real OpenAI-compatible HTTP server on loopback.

It answers ``GET /v1/models``, ``GET /health``, ``POST /v1/chat/completions`` and
``POST /v1/completions`` (a plain prompt) from a script (see ``mock_script``), so tests,
benchmarks and users can drive a real agent loop without a model. It can add latency and
inject faults, at a seeded rate or exactly where the script says.

Replies follow the request's mode. A request with ``tools`` and no ``response_format``
is native: tool calls are OpenAI ``tool_calls``. Otherwise scripted tool calls become a
JSON action in the content (``{"action": NAME, "args": {...}}``), and with
``response_format`` a final answer becomes ``{"action": "finish", "answer": ...}``.
"""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from agent_eval.errors import ConfigError
from agent_eval.models.actions import render_action, render_finish
from agent_eval.models.mock_script import FAULT_KINDS, Reply, Script, load_script
from agent_eval.web import AppServer, BadBody, read_json

RETRY_AFTER_SECONDS = 1
"""What a 429 fault asks the client to wait."""
MAX_WORKERS = 256
"""Requests answered at once: a benchmark holds one per worker while latency passes."""


class MockModelServer:
    """A scripted chat-completions server in a background thread; use it as a context manager."""

    def __init__(
        self,
        script: Script,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        latency: float = 0.0,
        fault_rate: float = 0.0,
        faults: tuple[str, ...] = ("429", "500", "503", "timeout", "malformed"),
        seed: int = 0,
        hang_seconds: float = 30.0,
        allow_remote: bool = False,
    ) -> None:
        unknown = [f for f in faults if f not in FAULT_KINDS]
        if unknown or not 0.0 <= fault_rate <= 1.0 or (fault_rate > 0 and not faults):
            raise ConfigError(
                f"faults must be a non-empty subset of {', '.join(FAULT_KINDS)} and "
                f"fault_rate within 0..1 (got {faults!r}, {fault_rate})"
            )
        self.script = script
        self.latency = latency
        self.fault_rate = fault_rate
        self.faults = tuple(faults)
        self.hang_seconds = hang_seconds
        self.requests: list[dict[str, Any]] = []
        """One entry per request: model, turn, the fault injected (if any), the reply cap
        asked for (max_tokens), the endpoint (``chat`` or ``completions``) and the sampling
        seed sent (or None)."""
        self.connections = 0
        """How many connections clients have opened (a client that keeps one alive opens 1)."""
        self._random = random.Random(seed)
        self._used: dict[int, int] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._clients: set[tuple[Any, ...] | None] = set()
        # Ctrl-C ends scripted latency and held faults at once, so the server stops promptly.
        self._server = AppServer(
            _app(self), host, port, allow_remote=allow_remote, on_signal=self._stopping.set
        )

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, e.g. ``http://127.0.0.1:4001/v1``."""
        return f"{self._server.root_url}/v1"

    @property
    def request_count(self) -> int:
        """How many chat requests have arrived."""
        return len(self.requests)

    def start(self) -> MockModelServer:
        """Start serving in a daemon thread; return self once it accepts connections."""
        self._server.start()
        return self

    def stop(self) -> None:
        """Stop serving, release held connections and close the socket."""
        self._stopping.set()
        self._server.stop(timeout=5)

    def __enter__(self) -> MockModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def serve_until_interrupted(self) -> None:
        """Serve in the calling thread until Ctrl-C."""
        try:
            self._server.serve_forever()
        finally:
            self._stopping.set()

    def _connected(self, client: tuple[Any, ...] | None) -> None:
        """Count a connection the first time one of its requests arrives (a client's
        address and port name its connection)."""
        with self._lock:
            if client not in self._clients:
                self._clients.add(client)
                self.connections += 1

    def health(self) -> dict[str, Any]:
        """``GET /health``: the models, and whether the scripted model has a chat template
        when the script says."""
        health: dict[str, Any] = {"status": "ok", "models": list(self.script.models or [])}
        if self.script.chat_template is not None:
            health["chat_template"] = self.script.chat_template
        return health

    def answer(
        self, request: dict[str, Any], text: bool = False
    ) -> tuple[int, dict[str, str], bytes | None]:
        """Return status, headers and body for one chat request, or with ``text`` one plain
        completion whose prompt stands for a single user message (None body: hold, then drop)."""
        prompt = request.get("prompt")
        if text:
            if not isinstance(prompt, str):
                return _error(400, "'prompt' must be a string")
            messages: Any = [{"role": "user", "content": prompt}]
        else:
            messages = request.get("messages")
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            return _error(400, "'messages' must be a list of objects")
        if request.get("stream"):
            return _error(400, "the scripted model server does not stream; send stream=false")
        model = str(request.get("model", ""))
        served = self.script.models
        if served is not None and model not in served:
            return _error(
                404, f"model {model!r} is not served here; use one of {', '.join(served)}"
            )
        with self._lock:
            turn, reply = self.script.choose(messages, model, self._used)
        fault: str | None = reply.fault if reply is not None else None
        with self._lock:
            if fault is None and self.fault_rate and self._random.random() < self.fault_rate:
                fault = self._random.choice(self.faults)
            self.requests.append(
                {
                    "model": model,
                    "turn": turn,
                    "fault": fault,
                    "max_tokens": request.get("max_tokens"),
                    "endpoint": "completions" if text else "chat",
                    "seed": request.get("seed"),
                }
            )
        if self.latency:
            self._stopping.wait(self.latency)
        if fault is not None:
            return self._fault(fault)
        if reply is None:
            return _error(
                500,
                f"the script has no reply for turn {turn}: no rule matched and it has "
                f"{len(self.script.replies)} replies and no default; add one",
            )
        if text and isinstance(prompt, str):  # checked above; said again for the type checker
            body = render_text_completion(reply, prompt, model)
        else:
            body = render_completion(reply, request, model, turn)
        return 200, {}, json.dumps(body).encode()

    def _fault(self, fault: str) -> tuple[int, dict[str, str], bytes | None]:
        if fault == "429":
            status, _, body = _error(429, "rate limited by the scripted server")
            return status, {"Retry-After": str(RETRY_AFTER_SECONDS)}, body
        if fault in ("500", "503"):
            return _error(int(fault), f"injected HTTP {fault}")
        if fault == "malformed":
            return 200, {}, b'{"choices": [{"message": '
        if fault == "no_choices":
            return 200, {}, json.dumps({"object": "chat.completion", "choices": []}).encode()
        self._stopping.wait(self.hang_seconds)
        return 0, {}, None


def render_completion(
    reply: Reply, request: dict[str, Any], model: str, turn: int
) -> dict[str, Any]:
    """Render a scripted reply as a chat-completion body in the request's mode."""
    constrained = request.get("response_format") is not None
    native = bool(request.get("tools")) and not constrained
    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish_reason = "stop"
    if reply.json_ is not None:
        message["content"] = json.dumps(reply.json_, ensure_ascii=False)
    elif reply.cut is not None:
        message["content"] = reply.cut
        finish_reason = "length"
    elif reply.content is not None:
        message["content"] = render_finish(reply.content) if constrained else reply.content
    elif reply.tool_calls and native:
        message["tool_calls"] = [
            {
                "id": f"call_{turn}_{i}",
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for i, c in enumerate(reply.tool_calls)
        ]
        finish_reason = "tool_calls"
    elif reply.tool_calls:
        first = reply.tool_calls[0]
        message["content"] = render_action(first.name, first.arguments)
    return {
        "id": f"chatcmpl-mock-{turn}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": _usage(reply, json.dumps(request.get("messages", [])), json.dumps(message)),
    }


def render_text_completion(reply: Reply, prompt: str, model: str) -> dict[str, Any]:
    """Render a scripted reply as a ``/v1/completions`` body: its text continues the prompt."""
    finish_reason = "length" if reply.cut is not None else "stop"
    if reply.json_ is not None:
        text = json.dumps(reply.json_, ensure_ascii=False)
    elif reply.tool_calls:
        text = render_action(reply.tool_calls[0].name, reply.tool_calls[0].arguments)
    else:
        text = reply.content or reply.cut or ""
    return {
        "id": "cmpl-mock",
        "object": "text_completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "text": text, "finish_reason": finish_reason}],
        "usage": _usage(reply, prompt, text),
    }


def _usage(reply: Reply, sent: str, said: str) -> dict[str, int]:
    """The scripted usage, or about four characters a token of what was sent and said:
    deterministic, and it grows with the context."""
    if reply.usage is not None:
        prompt, completion = reply.usage.prompt_tokens, reply.usage.completion_tokens
    else:
        prompt, completion = max(1, len(sent) // 4), max(1, len(said) // 4)
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}  # fmt: skip


def _error(status: int, message: str) -> tuple[int, dict[str, str], bytes]:
    body = {"error": {"message": message, "type": "mock_error", "code": status}}
    return status, {}, json.dumps(body).encode()


class _Dropped(Response):
    """No reply at all: a started response that never completes, so the server closes
    the connection and the client sees it drop, as a real endpoint does on a timeout."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", b"1")]})  # fmt: skip


def _reply(status: int, headers: dict[str, str], body: bytes) -> Response:
    return Response(body, status_code=status, headers=headers, media_type="application/json")


def _app(mock: MockModelServer) -> Starlette:
    """The scripted server's routes; each request is answered in a worker thread, since
    a scripted latency or a held fault blocks it."""
    limiter: list[anyio.CapacityLimiter] = []

    async def route(request: Request) -> Response:
        client = request.scope.get("client")
        mock._connected(tuple(client) if client else None)
        path, method = request.url.path.rstrip("/"), request.method
        if method == "GET" and path == "/v1/models":
            served = mock.script.models or []
            data = [{"id": m, "object": "model", "owned_by": "mock"} for m in served]
            if mock.script.tool_mode is not None:
                data = [{**entry, "tool_mode": mock.script.tool_mode} for entry in data]
            return _reply(200, {}, json.dumps({"object": "list", "data": data}).encode())
        if method == "GET" and path == "/health":
            return _reply(200, {}, json.dumps(mock.health()).encode())
        if method == "GET":
            return _reply(*_error(404, f"no route GET {request.url.path}; try /v1/models"))
        if path not in ("/v1/chat/completions", "/v1/completions"):
            return _reply(
                *_error(404, f"no route POST {request.url.path}; try /v1/chat/completions")
            )
        try:
            body = await read_json(request)
        except BadBody as bad:
            return _reply(*_error(bad.status, bad.message))
        if not isinstance(body, dict):
            return _reply(*_error(400, "the request body must be a JSON object"))
        if not limiter:  # made on the server's own loop
            limiter.append(anyio.CapacityLimiter(MAX_WORKERS))
        status, headers, answer = await anyio.to_thread.run_sync(
            mock.answer, body, path == "/v1/completions", limiter=limiter[0]
        )
        return _Dropped() if answer is None else _reply(status, headers, answer)

    return Starlette(routes=[Route("/{path:path}", route, methods=["GET", "POST"])])


def serve(
    script_path: str | Path,
    host: str = "127.0.0.1",
    port: int = 4001,
    latency: float = 0.0,
    fault_rate: float = 0.0,
    faults: tuple[str, ...] = ("429", "500", "503", "timeout", "malformed"),
    seed: int = 0,
    allow_remote: bool = False,
) -> None:
    """Load a script and serve it until Ctrl-C; the body of ``agent-eval mock-model``."""
    script = load_script(script_path)
    server = MockModelServer(
        script,
        allow_remote=allow_remote,
        host=host,
        port=port,
        latency=latency,
        fault_rate=fault_rate,
        faults=faults,
        seed=seed,
    )
    print(f"scripted model server on {server.base_url} (Ctrl-C stops it)", flush=True)
    started = time.monotonic()
    server.serve_until_interrupted()
    print(f"served {server.request_count} request(s) in {time.monotonic() - started:.0f}s")
