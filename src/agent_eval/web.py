"""The one HTTP stack of the package: a Starlette app served by uvicorn on a bound socket.

The scripted model server, the embedded model server and the viewer all run through
:class:`AppServer`. It binds the socket itself, so ``port=0`` is resolved before serving
starts and a port in use is a clear error, refuses a non-loopback host unless allowed,
serves from a background thread or the calling one, and stops cleanly. asyncio sets
``TCP_NODELAY`` on every accepted connection, so no reply waits on a delayed ACK.

Unless remote access is allowed, a request must also name the server by a loopback
address and its own port in its ``Host`` header: a web page that rebinds its own name to
127.0.0.1 sends that name, and is refused. The model servers read their JSON bodies
through :func:`read_json`, which refuses anything but ``application/json`` (a web page
can send ``text/plain`` without asking first) and input nested too deep.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import socket
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

import uvicorn
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from agent_eval.errors import ConfigError

MAX_BODY = 16 * 1024 * 1024
"""The largest request body any of the servers reads, in bytes."""
MAX_JSON_DEPTH = 64
"""How deeply a request body's arrays and objects may nest; a tool's parameter schema
nests a few levels, and deeper input would only exhaust the parser's stack."""


class _QuietDrops(logging.Filter):
    """Drop uvicorn's complaint about a reply cut short: the scripted server's timeout
    fault cuts replies short on purpose, and every other error is still logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "returned without completing response" not in record.getMessage()


logging.getLogger("uvicorn.error").addFilter(_QuietDrops())


async def read_body(request: Request, limit: int = MAX_BODY) -> bytes | None:
    """The request body, or None when it is longer than ``limit`` bytes (read no further)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


class BadBody(Exception):
    """A request body a server refuses: its HTTP status and a one-line reason."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


async def read_json(request: Request, limit: int = MAX_BODY) -> Any:
    """The request's JSON body; BadBody (415, 413 or 400) when it is not ``application/json``,
    longer than ``limit`` bytes, not JSON, or nested deeper than MAX_JSON_DEPTH."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise BadBody(
            415,
            f"send the body as Content-Type: application/json (got {kind or 'none'!r})",
        )
    raw = await read_body(request, limit)
    if raw is None:
        raise BadBody(413, f"send a JSON body of at most {limit} bytes")
    return parse_json(raw)


def parse_json(raw: bytes) -> Any:
    """``raw`` parsed; BadBody 400 when it is not JSON or nests deeper than MAX_JSON_DEPTH."""
    try:
        value = json.loads(raw)
        too_deep = json_depth(value) > MAX_JSON_DEPTH
    except RecursionError:  # deeper than the parser's own stack
        too_deep = True
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadBody(400, f"the request body is not JSON: {exc}") from None
    if too_deep:
        raise BadBody(400, f"the request body nests deeper than {MAX_JSON_DEPTH} levels")
    return value


def json_depth(value: Any) -> int:
    """How deeply arrays and objects nest in a parsed JSON value (a scalar is 0), counted
    without recursion, so any depth the parser accepted can be measured."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


def is_loopback(host: str) -> bool:
    """True when ``host`` names this machine only: localhost, 127.0.0.0/8 or ::1, also
    written as an IPv4-mapped IPv6 address (::ffff:127.0.0.1), which Python before 3.13
    does not count. The one test of it: the servers' --host and Host header checks and
    the Ray cluster's reachability check all use it."""
    if host.lower() == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    return (mapped or address).is_loopback


def check_host(host: str, allow_remote: bool) -> None:
    """ConfigError for a host other machines can reach, unless that is allowed."""
    if not allow_remote and not is_loopback(host):
        raise ConfigError(
            f"--host {host} is reachable from other machines and the server "
            "has no authentication; add --allow-remote if that is intended"
        )


def host_names_us(header: str, port: int) -> bool:
    """True when a ``Host`` header names a loopback address with this port: ``localhost``,
    127.0.0.0/8 or ``[::1]``, then ``:port``. A name without a port means port 80, since
    browsers leave the default port out, so it is accepted on port 80 only."""
    if header.startswith("["):
        name, closed, rest = header[1:].partition("]")
        if not closed or (rest and not rest.startswith(":")):
            return False
        given = rest[1:] if rest else "80"
    else:
        name, colon, given = header.partition(":")  # an unbracketed IPv6 fails here
        given = given if colon else "80"
    return given == str(port) and is_loopback(name)


class LoopbackOnly:
    """ASGI middleware that answers 403 to a request whose ``Host`` header does not name
    this server by a loopback address and its port, which is what DNS rebinding sends."""

    def __init__(self, app: ASGIApp, port: int) -> None:
        self.app, self.port = app, port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        hosts = [value.decode("latin-1") for key, value in scope.get("headers", ())
                 if key == b"host"]  # fmt: skip
        if scope["type"] == "lifespan" or (len(hosts) == 1 and host_names_us(hosts[0], self.port)):
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": 1008})
            return
        given = hosts[0][:100] if len(hosts) == 1 else ("none" if not hosts else "several")
        reason = (
            f"Host {given!r} is not 127.0.0.1:{self.port}, localhost:{self.port} or "
            f"[::1]:{self.port}; this server answers loopback requests only (start it "
            "with --allow-remote to answer other names)\n"
        ).encode()
        await send({"type": "http.response.start", "status": 403, "headers": [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"x-content-type-options", b"nosniff"),
            (b"content-length", str(len(reason)).encode())]})  # fmt: skip
        await send({"type": "http.response.body", "body": reason})


class _Server(uvicorn.Server):
    """uvicorn's server that also tells its owner at once when Ctrl-C (or SIGTERM) arrives,
    before it waits for open requests, so that they can be cut short."""

    def __init__(self, config: uvicorn.Config, on_signal: Callable[[], None] | None) -> None:
        super().__init__(config)
        self._on_signal = on_signal

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        if self._on_signal is not None:
            self._on_signal()


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (0 picks a free port); ConfigError when it cannot."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # Named TCP, so that asyncio turns Nagle off on each accepted connection (it looks at
    # the protocol number): otherwise a response's second write waits out the client's
    # delayed ACK, 40 ms on every request.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}; pick another --port "
            "(0 picks a free one)"
        ) from None
    sock.set_inheritable(True)
    return sock


class AppServer:
    """An ASGI app on uvicorn, bound at construction; start() or serve_forever(), then stop().

    ``on_signal`` is called as soon as Ctrl-C or SIGTERM reaches ``serve_forever``, before
    the server waits for open requests to finish.
    """

    def __init__(
        self,
        app: ASGIApp,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        allow_remote: bool = False,
        keep_alive: float = 60.0,
        on_signal: Callable[[], None] | None = None,
    ) -> None:
        check_host(host, allow_remote)
        self.host = host
        self._socket = bind(host, port)
        self.port = int(self._socket.getsockname()[1])
        config = uvicorn.Config(
            app if allow_remote else LoopbackOnly(app, self.port),
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_keep_alive=int(keep_alive),
            # The servers read bodies themselves and cap them; no limit on connections.
            limit_concurrency=None,
        )
        self._server = _Server(config, on_signal)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._grace = 10.0

    @property
    def root_url(self) -> str:
        """``http://host:port`` with an IPv6 host in brackets."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> AppServer:
        """Serve from a daemon thread; return once the server accepts connections."""
        if self._thread is not None:
            return self
        ready = threading.Event()
        failure: list[BaseException] = []

        def serve() -> None:
            try:
                asyncio.run(self._serve_until_stopped(ready))
            except BaseException as exc:  # reported to start(), never lost in the thread
                failure.append(exc)
                ready.set()

        self._thread = threading.Thread(target=serve, daemon=True, name="agent-eval-http")
        self._thread.start()
        ready.wait()
        if failure:
            raise failure[0]
        return self

    async def _serve_until_stopped(self, ready: threading.Event) -> None:
        """uvicorn's serve() without its 0.1 s ticks: tests start and stop hundreds of
        servers, and each stop would otherwise cost 0.2 s."""
        server, config = self._server, self._server.config
        if not config.loaded:
            config.load()
        server.lifespan = config.lifespan_class(config)
        self._loop, self._wake = asyncio.get_running_loop(), asyncio.Event()
        await server.startup(sockets=[self._socket])
        ready.set()
        await self._wake.wait()
        for listener in server.servers:
            listener.close()
        for connection in list(server.server_state.connections):
            connection.shutdown()  # idle keep-alive connections close now, busy ones after
        deadline = self._loop.time() + self._grace
        while server.server_state.connections and self._loop.time() < deadline:
            await asyncio.sleep(0.005)
        for task in list(server.server_state.tasks):
            task.cancel()

    def serve_forever(self) -> None:
        """Serve in the calling thread until Ctrl-C or stop(); Ctrl-C returns normally."""
        try:
            asyncio.run(self._server.serve(sockets=[self._socket]))
        except KeyboardInterrupt:
            pass
        finally:
            self._socket.close()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop accepting, let open requests finish (up to ``timeout``), close the socket."""
        self._server.should_exit = True
        if self._thread is not None:
            self._grace = timeout
            if self._loop is not None and self._wake is not None:
                self._loop.call_soon_threadsafe(self._wake.set)
            self._thread.join(timeout + 5)
            self._thread = None
        self._socket.close()

    def __enter__(self) -> AppServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
