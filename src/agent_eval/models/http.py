"""How a ChatClient reaches its endpoint: keep-alive connections, one pool per process.

A plain-http endpoint reached directly (a local server, a mock, the replay proxy) is
spoken to with the standard library's http.client. An attempt's copy of a built worker
pays for every page of shared memory its code touches, and httpx's request path touches
about three times as many as http.client's: about 5 ms of CPU per attempt. TLS and
proxies (taken from the environment) go through httpx, which handles both well.
"""

from __future__ import annotations

import http.client
import json
import select
import ssl
import sys
import threading
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit
from urllib.request import getproxies

# httpx imports its own command-line client (click, rich, pygments: ~70 ms of CPU) whenever
# those are installed. Nothing here runs it, so that import is declined (httpx then
# defines a stand-in `main`); every process that talks to a model, workers included,
# starts lighter.
if "httpx" not in sys.modules:
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

HTTPX_MODULES = ["httpx", "httpcore"]
"""What HttpxPool needs, imported only where one is made: it is ~11 MB and 170 modules,
40% of a worker, and every copy of a worker maps and unmaps what the worker holds. httpx
imports its transport (httpcore) on its first Client; a zygote whose workers will need
both preloads them (`pool_modules`)."""

__all__ = [
    "EndpointTimeout", "EndpointUnreachable", "HttpReply", "Pool", "open_pool", "pool_modules",
]  # fmt: skip


class EndpointTimeout(Exception):
    """The endpoint did not connect or answer in time."""


class EndpointUnreachable(Exception):
    """No answer could be had: refused, reset, closed mid-reply, or a TLS failure."""


@dataclass(frozen=True)
class HttpReply:
    """An endpoint's whole answer to one request."""

    status_code: int
    reason_phrase: str
    headers: dict[str, str]
    """Header names in lower case."""
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.content)


class Pool(Protocol):
    def renewed(self) -> Pool:
        """This pool's settings with none of its connections, for a fork."""
        ...

    def request(
        self, method: str, url: str, body: Any | None = None, timeout: float | None = None
    ) -> HttpReply:
        """Send ``body`` (a JSON value, or None for no body) to ``url`` and read the whole
        answer; raise EndpointTimeout or EndpointUnreachable when there is none."""
        ...

    def close(self) -> None: ...

    @property
    def is_closed(self) -> bool: ...


def open_pool(base_url: str, headers: dict[str, str], timeout: float) -> Pool:
    """A pool for ``base_url`` that sends ``headers`` with every request."""
    if _reached_directly(base_url):
        return DirectPool(base_url, headers, timeout)
    return HttpxPool(headers, timeout)


def pool_modules(base_url: str | None) -> list[str]:
    """The modules a pool for ``base_url`` imports (none for no endpoint)."""
    return HTTPX_MODULES if base_url and not _reached_directly(base_url) else []


def _reached_directly(base_url: str) -> bool:
    return base_url.lower().startswith("http://") and not getproxies()


def encode(body: Any) -> bytes:
    """JSON as httpx sends it, so a recording made through either pool matches."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


class DirectPool:
    """Keep-alive HTTP/1.1 connections to one plain-http endpoint, safe across threads.

    An idle connection the server has closed (or sent anything on) is dropped before a
    request would be written to it, as httpcore does, so a restarted server costs no
    failed request. A fork starts with no connections (`renewed`)."""

    def __init__(self, base_url: str, headers: dict[str, str], timeout: float) -> None:
        parts = urlsplit(base_url)
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port or 80
        self._origin = f"{parts.scheme}://{parts.netloc}"
        """What a request's URL starts with; the rest (path and query) is sent as is."""
        self._headers = {**headers, "Content-Type": "application/json", "User-Agent": "agent-eval"}
        self._timeout = timeout
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._closed = False

    def renewed(self) -> DirectPool:
        """This pool's settings with no connections, for a fork: sharing a socket with
        another process would let one read the other's reply."""
        fresh = DirectPool.__new__(DirectPool)
        fresh.__dict__.update(self.__dict__, _idle=[], _lock=threading.Lock())
        return fresh

    def request(
        self, method: str, url: str, body: Any | None = None, timeout: float | None = None
    ) -> HttpReply:
        if self._closed:
            raise EndpointUnreachable("the client is closed")
        connection = self._take()
        limit = self._timeout if timeout is None else timeout
        connection.timeout = limit
        if connection.sock is not None:
            connection.sock.settimeout(limit)
        try:
            target = url[len(self._origin) :] if url.startswith(self._origin) else url
            connection.request(
                method, target, None if body is None else encode(body), self._headers
            )
            response = connection.getresponse()
            content = response.read()
        except TimeoutError:
            connection.close()
            raise EndpointTimeout from None
        except (OSError, http.client.HTTPException) as exc:
            connection.close()
            raise EndpointUnreachable(str(exc) or type(exc).__name__) from None
        if response.will_close:
            connection.close()
        else:
            with self._lock:
                self._idle.append(connection)
        headers = {name.lower(): value for name, value in response.getheaders()}
        return HttpReply(response.status, response.reason, headers, content)

    def _take(self) -> http.client.HTTPConnection:
        with self._lock:
            while self._idle:
                connection = self._idle.pop()
                if _still_open(connection):
                    return connection
                connection.close()
        return http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)

    def close(self) -> None:
        self._closed = True
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    @property
    def is_closed(self) -> bool:
        return self._closed


def _still_open(connection: http.client.HTTPConnection) -> bool:
    """Whether an idle connection can take a request: readable means closed, or junk."""
    sock = connection.sock
    if sock is None:
        return False
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable


class HttpxPool:
    """httpx's pool, for TLS (verified with httpx's trust store, built once per client:
    loading it is ~35 ms of CPU) and for proxies."""

    def __init__(
        self, headers: dict[str, str], timeout: float, tls: ssl.SSLContext | None = None
    ) -> None:
        import httpx  # here only: see HTTPX_MODULES

        self._httpx = httpx
        tls = tls or httpx.create_ssl_context()
        self._settings = (headers, timeout, tls)
        self._client = httpx.Client(timeout=timeout, headers=headers, verify=tls)

    def renewed(self) -> HttpxPool:
        """This pool's settings with no connections, for a fork. The old pool is dropped,
        not closed, so nothing is sent on the parent's sockets."""
        return HttpxPool(*self._settings)

    def request(
        self, method: str, url: str, body: Any | None = None, timeout: float | None = None
    ) -> HttpReply:
        httpx = self._httpx
        limit = self._settings[1] if timeout is None else timeout
        try:
            response = self._client.request(method, url, json=body, timeout=limit)
        except httpx.TimeoutException:
            raise EndpointTimeout from None
        except httpx.TransportError as exc:
            raise EndpointUnreachable(str(exc) or type(exc).__name__) from None
        headers = {name.lower(): value for name, value in response.headers.items()}
        return HttpReply(response.status_code, response.reason_phrase, headers, response.content)

    def close(self) -> None:
        self._client.close()

    @property
    def is_closed(self) -> bool:
        return self._client.is_closed
