"""The model proxy: one HTTP server of ours between the agents and the model endpoint.

Each attempt's try gets its own URL prefix, ``http://127.0.0.1:PORT/a/{token}/v1``, handed
to the agent as ``options["base_url"]``, so agents in any language are recorded without
knowing it. In front of the endpoint the proxy forwards every request and records it
(``record``), or answers it from the cache when the same attempt asked it before
(``cache``; only replies the harness accepts are kept). In front of a recording
(``replay``) it answers each request with the attempt's own recorded reply, in call
order, and never contacts the endpoint; a request that differs from the recording is a
mismatch, answered with HTTP 409, and the attempt is stopped as ``replay_mismatch`` by
the harness.

The proxy starts on first use in whichever process runs attempts (the driver, or a Ray
node's slot group): it pickles without its server.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from agent_eval.errors import ConfigError
from agent_eval.redaction import Redactor
from agent_eval.replay.cache import ResponseCache
from agent_eval.replay.recording import (
    DROPPED_HEADERS,
    Exchange,
    body_bytes,
    body_record,
    first_difference,
    kept_headers,
    parse_events,
    recording_text,
    request_part,
    scrub_fields,
    value_at,
)
from agent_eval.replay.source import ReplaySource
from agent_eval.trajectory import safe_part
from agent_eval.web import AppServer, read_body

METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
ERROR_STATUS = {"connection": 502, "timeout": 504, "stream": 502, "unanswered": 504}
"""The status the agent sees when the endpoint failed instead of answering."""
SHOWN = 80
"""Characters of a differing value quoted in a mismatch detail."""
OnCall = Callable[["Session", Exchange], None]


@dataclass(frozen=True)
class Traffic:
    """What one attempt's try did with the model: its recording and any mismatch."""

    text: str
    """The recording file's text (not yet redacted by the run's redactor)."""
    calls: int
    mismatch: str | None
    """Why a replay diverged from its recording, naming the first differing field."""
    stopped_short: bool = False
    """The mismatch is only that the agent made fewer calls than the recording."""

    def divergence(self, failure: str | None) -> str | None:
        """The replay_mismatch detail for an attempt whose worker ended with ``failure``:
        an attempt lost to infrastructure (its worker or node gone) made fewer calls
        for that reason, which is no divergence of the agent's."""
        if self.stopped_short and failure == "infra_error":
            return None
        return self.mismatch


@dataclass
class Session:
    """One try of one attempt, from the proxy's side."""

    token: str
    task_id: str
    attempt: int
    try_number: int
    url: str
    mode: str
    upstream: str
    expected: tuple[Exchange, ...] | None
    """The recorded calls to replay; None when the endpoint answers."""
    calls: list[Exchange] = field(default_factory=list)
    mismatch: str | None = None
    closed: bool = False
    started: float = field(default_factory=time.perf_counter)
    started_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    lock: threading.Lock = field(default_factory=threading.Lock)

    def begin(self, request: Exchange) -> Exchange:
        """Take a call in arrival order; its reply comes later (finish)."""
        with self.lock:
            call = {"call": len(self.calls) + 1, "offset": round(self.now(), 4), **request}
            self.calls.append(call)
        return call

    def now(self) -> float:
        return time.perf_counter() - self.started

    def fail(self, detail: str) -> None:
        with self.lock:
            self.mismatch = self.mismatch or detail

    def seen(self, call: Exchange) -> int:
        """How many identical requests this try made before ``call``."""
        with self.lock:
            earlier = self.calls[: call["call"] - 1]
        same = (call["method"], call["path"], request_part(call))
        return sum((c["method"], c["path"], request_part(c)) == same for c in earlier)

    def close(self) -> Traffic:
        """End the try: a call still waiting is recorded as unanswered; a replay that
        stopped before the recording's end is a mismatch."""
        with self.lock:
            self.closed = True
            for call in self.calls:
                if "seconds" not in call:
                    call.update(response=None, seconds=round(self.now() - call["offset"], 4),
                                error={"kind": "unanswered", "message": "the attempt ended "
                                       "before the reply came"})  # fmt: skip
            short = self.expected is not None and len(self.calls) < len(self.expected)
            short = short and self.mismatch is None
            if short:
                self.mismatch = (
                    f"the agent stopped after {len(self.calls)} of the recording's "
                    f"{len(self.expected or ())} call(s)"
                )
            header = {"task_id": self.task_id, "attempt": self.attempt, "try": self.try_number,
                      "mode": self.mode, "upstream": self.upstream, "proxy": self.url,
                      "started": self.started_at, "mismatch": self.mismatch}  # fmt: skip
            text = recording_text(header, self.calls)
            return Traffic(text, len(self.calls), self.mismatch, short)


def _public_url(url: str) -> str:
    """A URL without user and password, as it may be recorded."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    netloc += f":{parts.port}" if parts.port else ""
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class ModelProxy:
    """The proxy for one run: ``session(task_id, attempt)`` gives each try its URL."""

    def __init__(
        self,
        upstream: str,
        redact: Redactor,
        *,
        keep: bool = True,
        replay: ReplaySource | None = None,
        pass_through: bool = False,
        cache_dir: Path | None = None,
        on_call: OnCall | None = None,
        timeout: float = 600.0,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.redact = redact
        self.keep = keep
        """Whether the recording is kept (written beside the trajectory)."""
        self.replay = replay
        self.pass_through = pass_through
        self.cache = ResponseCache(cache_dir) if cache_dir is not None else None
        self.on_call = on_call
        self.timeout = timeout
        self._start_local()

    def _start_local(self) -> None:
        self._lock = threading.Lock()
        self._server: AppServer | None = None
        self._sessions: dict[str, Session] = {}
        self._tries: dict[tuple[str, int], int] = {}
        self._client: httpx.AsyncClient | None = None
        """One client for the server's event loop: a new one per call costs ~50 ms."""

    def __getstate__(self) -> dict[str, Any]:
        """The proxy as it travels to another process: without its server, and without
        the run's secrets (the process it lands in gives its own: use_redactor)."""
        state = dict(self.__dict__)
        for name in ("_lock", "_server", "_sessions", "_tries", "_client", "redact", "on_call"):
            state.pop(name)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, redact=Redactor([]), on_call=None)
        self._start_local()

    def use_redactor(self, redact: Redactor) -> None:
        """Scrub these secrets from what the proxy keeps (recordings, the cache)."""
        self.redact = redact

    @property
    def mode(self) -> str:
        return "replay" if self.replay is not None else "cache" if self.cache else "record"

    @property
    def root_url(self) -> str:
        """Where the proxy listens (started on first use): the one endpoint a sandbox's
        relay needs to reach when the proxy stands in front of the model."""
        return self._root()

    def _root(self) -> str:
        with self._lock:
            if self._server is None:
                app = Starlette(routes=[Route("/a/{token}/{rest:path}", self._handle,
                                              methods=METHODS)])  # fmt: skip
                self._server = _listen(app, self.replay.port if self.replay else None).start()
            return self._server.root_url

    @contextmanager
    def session(self, task_id: str, attempt: int) -> Iterator[Session]:
        """A try of an attempt: its own URL while the agent runs, closed after."""
        root = self._root()
        with self._lock:
            number = self._tries[(task_id, attempt)] = self._tries.get((task_id, attempt), 0) + 1
            # The same address for the same try when the port is free again: an agent
            # that quotes its endpoint in an error says the same thing in a replay.
            token = f"{safe_part(task_id)}-r{attempt}-t{number}"
            while token in self._sessions:  # two ids made one safe name ("a/b", "a_b")
                token += "-"
            expected = None
            if self.replay is not None:
                expected = self.replay.calls(task_id, attempt, number) or ()
            path = urlsplit(self.upstream).path.rstrip("/")
            opened = Session(token, task_id, attempt, number, f"{root}/a/{token}{path}",
                             self.mode, _public_url(self.upstream), expected)  # fmt: skip
            self._sessions[token] = opened
        try:
            yield opened
        finally:
            with self._lock:
                self._sessions.pop(token, None)

    def close(self) -> None:
        """Stop the server (when this process started one)."""
        with self._lock:
            server, self._server = self._server, None
        if server is not None:
            server.stop(timeout=2.0)
        self._client = None  # it belonged to the stopped server's event loop

    async def _handle(self, request: Request) -> Response:
        with self._lock:
            session = self._sessions.get(request.path_params["token"])
        if session is None or session.closed:
            return _error(404, "no attempt is running under this URL", "unknown_attempt")
        raw = await read_body(request)
        if raw is None:
            return _error(413, "request body too large", "too_large")
        path = "/" + request.path_params["rest"]
        if request.url.query:  # as recorded: a secret-named parameter's value replaced
            path += "?" + urlencode(scrub_fields(dict(parse_qsl(request.url.query, True))))
        record = body_record(self.redact(raw.decode("utf-8", errors="replace")).encode())
        call = session.begin({"method": request.method, "path": path,
                              "request": {"headers": kept_headers(request.headers.items()),
                                          **record}})  # fmt: skip
        if session.expected is not None:
            return await self._replay(session, call, request, raw)
        return await self._answer(session, call, request, raw)

    async def _replay(
        self, session: Session, call: Exchange, request: Request, raw: bytes
    ) -> Response:
        if session.mismatch is not None:
            return self._mismatch(session, call, session.mismatch)
        expected = session.expected or ()
        index = call["call"] - 1
        if index >= len(expected):
            if self.pass_through:
                return await self._forward(session, call, request, raw)
            what = (f"the recording has {len(expected)} call(s)" if expected else
                    f"task {session.task_id} attempt {session.attempt} try "
                    f"{session.try_number} has no recording")  # fmt: skip
            detail = f"call {call['call']} ({call['method']} {call['path']}) is new: {what}"
            return self._mismatch(session, call, detail)
        recorded = expected[index]
        if (recorded.get("method"), recorded.get("path")) != (call["method"], call["path"]):
            detail = (
                f"call {call['call']}: the recording has {recorded.get('method')} "
                f"{recorded.get('path')}, the agent sent {call['method']} {call['path']}"
            )
            return self._mismatch(session, call, detail)
        before, now = request_part(recorded), request_part(call)
        differs = first_difference(before, now)
        if differs is not None:
            detail = (f"call {call['call']}: {differs} differs (recorded "
                      f"{_shown(before, differs)}, sent {_shown(now, differs)})")  # fmt: skip
            return self._mismatch(session, call, detail)
        error = recorded.get("error")
        if isinstance(error, dict) and error.get("kind") == "unanswered":
            while not session.closed:  # as then: no reply until the attempt is stopped
                await asyncio.sleep(0.05)
        return self._serve(session, call, recorded.get("response"), error, "recording")

    def _mismatch(self, session: Session, call: Exchange, detail: str) -> Response:
        session.fail(detail)
        self._finish(session, call, None, {"kind": "replay_mismatch", "message": detail}, "proxy")
        return _error(409, f"replay_mismatch: {detail}", "replay_mismatch")

    async def _answer(
        self, session: Session, call: Exchange, request: Request, raw: bytes
    ) -> Response:
        if self.cache is not None:
            asked = {"method": call["method"], "path": call["path"], "body": request_part(call)}
            key = self.cache.key(self.upstream, session.task_id, session.attempt, asked,
                                 session.seen(call))  # fmt: skip
            hit = self.cache.get(key, call["path"])
            if hit is not None:
                return self._serve(session, call, hit, None, "cache")
            return await self._forward(session, call, request, raw, key)
        return await self._forward(session, call, request, raw)

    def _serve(
        self,
        session: Session,
        call: Exchange,
        response: dict[str, Any] | None,
        error: Any,
        source: str,
    ) -> Response:
        """Answer from a stored reply (a recording's or the cache's)."""
        self._finish(session, call, response, error, source)
        if response is None:
            kind = error.get("kind") if isinstance(error, dict) else "connection"
            message = error.get("message") if isinstance(error, dict) else "no reply"
            return _error(ERROR_STATUS.get(str(kind), 502), str(message), str(kind))
        headers = {k: v for k, v in (response.get("headers") or {}).items()
                   if k not in DROPPED_HEADERS}  # fmt: skip
        return Response(body_bytes(response), int(response.get("status", 200)), headers)

    async def _forward(
        self,
        session: Session,
        call: Exchange,
        request: Request,
        raw: bytes,
        cache_key: str | None = None,
    ) -> Response:
        """Send the request to the endpoint, stream its reply back, and record both."""
        origin = urlsplit(self.upstream)
        path = "/" + request.path_params["rest"]
        url = urlunsplit((origin.scheme, origin.netloc, path, request.url.query, ""))
        headers = {k: v for k, v in request.headers.items()
                   if k.lower() not in {"host", "content-length", "connection", "accept-encoding",
                                        "keep-alive", "transfer-encoding"}}  # fmt: skip
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout, connect=10.0))
        client = self._client
        try:
            reply = await client.send(
                client.build_request(request.method, url, headers=headers, content=raw),
                stream=True,
            )
        except httpx.HTTPError as exc:
            kind = "timeout" if isinstance(exc, httpx.TimeoutException) else "connection"
            message = f"model endpoint {_public_url(self.upstream)}: {type(exc).__name__}: {exc}"
            return self._serve(session, call, None, {"kind": kind, "message": message},
                               "endpoint")  # fmt: skip
        kept = kept_headers(reply.headers.items())
        status = reply.status_code

        def done(response: dict[str, Any], error: dict[str, Any] | None) -> None:
            self._finish(session, call, response, error, "endpoint")
            if cache_key is not None and self.cache is not None and error is None:
                scrubbed = json.loads(self.redact(json.dumps(response)))
                self.cache.put(cache_key, call["path"], scrubbed)

        if reply.headers.get("content-type", "").startswith("text/event-stream"):

            async def relay() -> AsyncIterator[bytes]:
                chunks: list[bytes] = []
                error = None
                try:
                    async for chunk in reply.aiter_bytes():
                        chunks.append(chunk)
                        yield chunk
                except httpx.HTTPError as exc:
                    error = {"kind": "stream", "message": f"{type(exc).__name__}: {exc}"}
                finally:
                    await reply.aclose()
                    text = self.redact(b"".join(chunks).decode("utf-8", errors="replace"))
                    done({"status": status, "headers": kept,
                          "events": parse_events(text.encode())}, error)  # fmt: skip

            return StreamingResponse(relay(), status, kept)
        error = None
        try:
            data = await reply.aread()
        except httpx.HTTPError as exc:
            data, error = b"", {"kind": "stream", "message": f"{type(exc).__name__}: {exc}"}
        finally:
            await reply.aclose()
        record = body_record(self.redact(data.decode("utf-8", errors="replace")).encode())
        done({"status": status, "headers": kept, **record}, error)
        return Response(data, status, kept)

    def _finish(
        self,
        session: Session,
        call: Exchange,
        response: dict[str, Any] | None,
        error: Any,
        source: str,
    ) -> None:
        with session.lock:
            if session.closed:  # the attempt ended first: recorded as unanswered
                return
            call.update(response=response, error=error, source=source,
                        seconds=round(session.now() - call["offset"], 4))  # fmt: skip
        if self.on_call is not None:
            self.on_call(session, call)


def _listen(app: Starlette, port: int | None) -> AppServer:
    """The proxy's server: on the recorded run's port when it is free, else any."""
    if port:
        try:
            return AppServer(app, port=port)
        except ConfigError:
            pass
    return AppServer(app)


def _shown(body: Any, path: str) -> str:
    value = body if path == "body" else value_at(body, path)
    text = json.dumps(value, ensure_ascii=False) if value is not None else "nothing"
    return text if len(text) <= SHOWN else text[: SHOWN - 3] + "..."


def _error(status: int, message: str, kind: str) -> JSONResponse:
    """An error in the OpenAI shape, which every client reads."""
    return JSONResponse({"error": {"message": message, "type": kind, "code": kind}}, status)
