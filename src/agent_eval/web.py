"""The one HTTP stack of the package: a Starlette app served by uvicorn on a bound socket.

The scripted model server, the embedded model server and the viewer all run through
:class:`AppServer`. It binds the socket itself, so ``port=0`` is resolved before serving
starts and a port in use is a clear error, refuses a non-loopback host unless allowed,
serves from a background thread or the calling one, and stops cleanly. asyncio sets
``TCP_NODELAY`` on every accepted connection, so no reply waits on a delayed ACK.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
import threading
from typing import Any

import uvicorn
from starlette.requests import Request
from starlette.types import ASGIApp

from agent_eval.errors import ConfigError

MAX_BODY = 16 * 1024 * 1024
"""The largest request body any of the servers reads, in bytes."""


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


def is_loopback(host: str) -> bool:
    """True when ``host`` names this machine only (127.0.0.0/8, ::1 or localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_host(host: str, allow_remote: bool) -> None:
    """ConfigError for a host other machines can reach, unless that is allowed."""
    if not allow_remote and not is_loopback(host):
        raise ConfigError(
            f"--host {host} is reachable from other machines and the server "
            "has no authentication; add --allow-remote if that is intended"
        )


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
    """An ASGI app on uvicorn, bound at construction; start() or serve_forever(), then stop()."""

    def __init__(
        self,
        app: ASGIApp,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        allow_remote: bool = False,
        keep_alive: float = 60.0,
    ) -> None:
        check_host(host, allow_remote)
        self.host = host
        self._socket = bind(host, port)
        self.port = int(self._socket.getsockname()[1])
        config = uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_keep_alive=int(keep_alive),
            # The servers read bodies themselves and cap them; no limit on connections.
            limit_concurrency=None,
        )
        self._server = uvicorn.Server(config)
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
