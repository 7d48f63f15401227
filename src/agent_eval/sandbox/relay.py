"""The sandbox's one way out: bytes relayed to the model endpoint and nowhere else.

Outside, :class:`ModelRelay` accepts on a unix socket bound into the sandboxes and
connects each connection to the endpoint's host and port. Inside, each slot's relay
(agent_eval.sandbox.inside) listens on a loopback port of the slot's own network
namespace and relays each connection to that socket. The relay
carries bytes, not HTTP, so TLS to a named endpoint works end to end; whatever the run
puts at base_url (a server, a recording proxy) is what answers.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import threading
import urllib.parse
from dataclasses import dataclass

CHUNK = 65536
FIRST_FREE_PORT = 1024
"""Ports below this need a capability the sandbox does not have: such an endpoint is
reached inside on ``port + PORT_SHIFT`` instead, and base_url says so."""
PORT_SHIFT = 40000


@dataclass(frozen=True)
class Endpoint:
    """Where the model endpoint is, outside, and how it is reached inside."""

    host: str
    port: int
    inside_port: int
    base_url: str
    """base_url as the sandboxed agent uses it."""

    @classmethod
    def parse(cls, base_url: str) -> Endpoint | None:
        """The endpoint a base_url names; None when it names no host."""
        parts = urllib.parse.urlsplit(base_url)
        if not parts.hostname:
            return None
        port = parts.port or (443 if parts.scheme == "https" else 80)
        inside = port if port >= FIRST_FREE_PORT else port + PORT_SHIFT
        host = parts.hostname
        netloc_host = host
        if _is_address(host):  # reached inside on loopback, whatever address it has
            netloc_host = "127.0.0.1"
        elif ":" in host:
            netloc_host = f"[{host}]"
        userinfo = parts.netloc.rpartition("@")[0]
        netloc = f"{userinfo + '@' if userinfo else ''}{netloc_host}:{inside}"
        if inside == port and parts.port is None:
            netloc = f"{userinfo + '@' if userinfo else ''}{netloc_host}"
        rewritten = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
        return cls(host, port, inside, rewritten)

    @property
    def name(self) -> str | None:
        """The host name the sandbox must resolve to its loopback, if it is a name."""
        return None if _is_address(self.host) else self.host


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class ModelRelay:
    """Outside: a unix socket whose every connection is relayed to the endpoint."""

    def __init__(self, path: str, endpoint: Endpoint) -> None:
        self.path = path
        self._target = (endpoint.host, endpoint.port)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(path)
        self._listener.listen(128)
        self._closed = False
        threading.Thread(target=self._serve, daemon=True, name="model-relay").start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._connect, args=(client,), daemon=True).start()

    def _connect(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self._target, timeout=30)
            upstream.settimeout(None)
        except OSError:
            client.close()
            return
        pipe(client, upstream)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)


def pipe(one: socket.socket, other: socket.socket) -> None:
    """Relay both ways until both sides are done; closes both.

    A TCP end sends each piece at once (TCP_NODELAY): a request or a reply arrives in
    pieces (headers, then body), and Nagle's algorithm would hold the second one back
    until the first is acknowledged, which the other side delays by some 40 ms."""
    for end in (one, other):
        if end.family in (socket.AF_INET, socket.AF_INET6):
            with contextlib.suppress(OSError):
                end.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(CHUNK):
                sink.sendall(data)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    back = threading.Thread(target=pump, args=(other, one), daemon=True)
    back.start()
    pump(one, other)
    back.join()
    one.close()
    other.close()
