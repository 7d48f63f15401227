"""The sandbox's one way out: bytes relayed to the model endpoint and nowhere else.

Each slot, confining itself, listens on a loopback port of its own network namespace
(`listen`) and sends the listening sockets out (agent_eval.sandbox.slot). Outside,
:class:`ModelRelay` accepts on them, though they belong to the slots' namespaces, and
connects each connection to the endpoint's host and port: one hop, in one thread of the
parent, for every slot. The relay carries bytes, not HTTP, so TLS to a named endpoint
works end to end; whatever the run puts at base_url (a server, a recording proxy) is
what answers.
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import selectors
import socket
import threading
import urllib.parse
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

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


def listen(port: int) -> list[socket.socket]:
    """The listening sockets on ``port`` of this network namespace's loopback: 127.0.0.1,
    and ::1 where there is IPv6."""
    listeners = [_listen(socket.AF_INET, "127.0.0.1", port)]
    if socket.has_ipv6:
        with contextlib.suppress(OSError):  # no IPv6 loopback in this namespace
            listeners.append(_listen(socket.AF_INET6, "::1", port))
    return listeners


def _listen(family: socket.AddressFamily, host: str, port: int) -> socket.socket:
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(128)
    return listener


class ModelRelay:
    """Outside: relays every connection that the slots' listeners accept to the endpoint.

    One thread serves every slot with a selector: an attempt's connection costs no thread
    and no process, only the bytes it moves. Each direction of a connection holds at most
    CHUNK bytes not yet sent on, and reads no more until they are (back-pressure)."""

    def __init__(self, endpoint: Endpoint) -> None:
        self._target = (endpoint.host, endpoint.port)
        self._selector = selectors.DefaultSelector()
        self._listeners: dict[Hashable, list[socket.socket]] = {}
        self._requests: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self._wake, self._woken = socket.socketpair()
        self._woken.setblocking(False)
        self._selector.register(self._woken, selectors.EVENT_READ, None)
        self._closed = False
        self._thread = threading.Thread(target=self._serve, daemon=True, name="model-relay")
        self._thread.start()

    def serve(self, key: Hashable, listeners: list[socket.socket]) -> None:
        """Accept on ``listeners`` from now on, and close those ``key`` had before (a slot's
        previous worker's: its namespace went with it). Takes ownership of them."""
        if not self._ask(lambda: self._replace(key, listeners)):
            for listener in listeners:
                listener.close()

    def close(self) -> None:
        """Stop accepting, end every connection, and wait for the relay's thread."""
        if self._ask(self._stop, last=True):
            self._thread.join()

    def _ask(self, request: Callable[[], None], last: bool = False) -> bool:
        """Have the relay's thread, which owns the selector, run ``request``; False when
        it has been told to stop (``last``) already."""
        with self._lock:
            if self._closed:
                return False
            self._closed = last
            self._requests.append(request)
        with contextlib.suppress(OSError):
            self._wake.send(b"w")
        return True

    def _replace(self, key: Hashable, listeners: list[socket.socket]) -> None:
        for old in self._listeners.pop(key, []):
            self._selector.unregister(old)
            old.close()
        for listener in listeners:
            listener.setblocking(False)
            self._selector.register(listener, selectors.EVENT_READ, None)
        self._listeners[key] = listeners

    def _stop(self) -> None:
        for key in list(self._listeners):
            self._replace(key, [])
        for selected in list(self._selector.get_map().values()):
            if isinstance(selected.data, _End):
                selected.data.connection.close()
        raise _Stopped

    def _serve(self) -> None:
        try:
            while True:
                for selected, events in self._selector.select():
                    end = selected.data
                    if isinstance(end, _End):
                        end.connection.handle(end, events)
                    elif selected.fileobj is self._woken:
                        self._run_requests()
                    elif isinstance(selected.fileobj, socket.socket):
                        self._accept(selected.fileobj)
        except _Stopped:
            pass
        finally:
            self._selector.close()
            self._wake.close()
            self._woken.close()

    def _run_requests(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while self._woken.recv(4096):
                pass
        with self._lock:
            requests, self._requests = self._requests, []
        for request in requests:
            request()

    def _accept(self, listener: socket.socket) -> None:
        try:
            client, _ = listener.accept()
        except OSError:  # the client gave up already, or no descriptor is free
            return
        try:
            addresses = socket.getaddrinfo(*self._target, type=socket.SOCK_STREAM)
        except OSError:
            client.close()
            return
        _Connection(self._selector, client, [(a[0], a[4]) for a in addresses])


class _Stopped(Exception):
    pass


@dataclass(eq=False)
class _End:
    """One socket of a relayed connection, and the bytes waiting to be sent on it."""

    sock: socket.socket
    connection: _Connection
    outbox: bytearray = field(default_factory=bytearray)
    reading: bool = True
    """Whether this socket may still bring bytes (no EOF read from it yet)."""
    shut: bool = False
    """Whether this socket's write side is shut (its peer's EOF passed on)."""
    mask: int = 0
    """The events the selector watches it for (0: not registered)."""


class _Connection:
    """A client, accepted on a slot's loopback, and its connection to the endpoint:
    connected without blocking, trying each of the endpoint's addresses in turn.

    A TCP end sends each piece at once (TCP_NODELAY): a request or a reply arrives in
    pieces (headers, then body), and Nagle's algorithm would hold the second one back
    until the first is acknowledged, which the other side delays by some 40 ms."""

    def __init__(
        self,
        selector: selectors.BaseSelector,
        client: socket.socket,
        addresses: list[tuple[socket.AddressFamily, Any]],
    ) -> None:
        self._selector = selector
        self._addresses = addresses
        client.setblocking(False)
        _no_delay(client)
        self.client = _End(client, self)
        self.upstream: _End | None = None
        self._connecting = False
        self._closed = False
        self._connect_next()

    def _connect_next(self) -> None:
        while self._addresses:
            family, address = self._addresses.pop(0)
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setblocking(False)
            code = sock.connect_ex(address)
            if code in (0, errno.EINPROGRESS):
                _no_delay(sock)
                self.upstream = _End(sock, self)
                self._connecting = code != 0
                self._watch()
                return
            sock.close()
        self.close()  # nothing answers: the client sees its connection closed

    def handle(self, end: _End, events: int) -> None:
        if self._closed:
            return
        if self._connecting:  # the upstream end is writable: connected, or refused
            if end.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                self._selector.unregister(end.sock)
                end.sock.close()
                self.upstream = None
                self._connect_next()
            else:
                self._connecting = False
                self._watch()
            return
        try:
            if events & selectors.EVENT_WRITE:
                self._flush(end)
            if events & selectors.EVENT_READ and end.reading:
                self._read(end)
        except OSError:  # reset by either side: the other sees its end closed too
            self.close()
            return
        assert self.upstream is not None
        if not (self.client.reading or self.upstream.reading) and not (
            self.client.outbox or self.upstream.outbox
        ):
            self.close()
        else:
            self._watch()

    def _peer(self, end: _End) -> _End:
        assert self.upstream is not None
        return self.upstream if end is self.client else self.client

    def _read(self, end: _End) -> None:
        peer = self._peer(end)
        try:
            data = end.sock.recv(CHUNK)
        except BlockingIOError:
            return
        if data:
            peer.outbox += data
            self._flush(peer)
        else:
            end.reading = False
            self._flush(peer)

    def _flush(self, end: _End) -> None:
        if end.outbox:
            try:
                sent = end.sock.send(end.outbox)
            except BlockingIOError:
                sent = 0
            del end.outbox[:sent]
        if not end.outbox and not self._peer(end).reading and not end.shut:
            end.shut = True
            end.sock.shutdown(socket.SHUT_WR)

    def _watch(self) -> None:
        """Register each end for what it waits on: room to send what it holds; bytes to
        read while its peer holds nothing yet to send (and it has not ended)."""
        assert self.upstream is not None
        if self._connecting:
            ends = [(self.upstream, selectors.EVENT_WRITE)]
        else:
            ends = [
                (end, (selectors.EVENT_WRITE if end.outbox else 0)
                 | (selectors.EVENT_READ if end.reading and not self._peer(end).outbox else 0))
                for end in (self.client, self.upstream)
            ]  # fmt: skip
        for end, mask in ends:
            if mask == end.mask:
                continue
            if end.mask == 0:
                self._selector.register(end.sock, mask, end)
            elif mask == 0:
                self._selector.unregister(end.sock)
            else:
                self._selector.modify(end.sock, mask, end)
            end.mask = mask

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for end in (self.client, self.upstream):
            if end is None:
                continue
            if end.mask:
                self._selector.unregister(end.sock)
            end.sock.close()


def _no_delay(sock: socket.socket) -> None:
    if sock.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
