"""The sandbox's model relay, as a slot's agent sees it: every byte arrives, both ways.

The relay accepts on listening sockets handed to it (a slot's, in a sandbox; here, the
test's own on 127.0.0.1 port 0) and connects each connection to the endpoint, a real
server on loopback.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import socketserver
import threading
from collections.abc import Iterator

import pytest

from agent_eval.sandbox.relay import Endpoint, ModelRelay


class _Echo(socketserver.BaseRequestHandler):
    """Sends back every byte it reads, then ends its side once the client has ended its."""

    def handle(self) -> None:
        while data := self.request.recv(65536):
            self.request.sendall(data)
        self.request.shutdown(socket.SHUT_WR)


class _Digest(socketserver.BaseRequestHandler):
    """Reads to the client's end, then answers with the request's sha256 and closes: a
    reply that only comes once the client has shut its writing side."""

    def handle(self) -> None:
        digest = hashlib.sha256()
        while data := self.request.recv(65536):
            digest.update(data)
        self.request.sendall(digest.hexdigest().encode())


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    request_queue_size = 128  # not 5: forty clients at once must not overflow it


def _server(handler: type[socketserver.BaseRequestHandler]) -> socketserver.ThreadingTCPServer:
    server = _Server(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def echo() -> Iterator[socketserver.ThreadingTCPServer]:
    server = _server(_Echo)
    yield server
    server.shutdown()
    server.server_close()


def _listener() -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    return listener


def _relay_to(base_url: str) -> tuple[ModelRelay, int]:
    """A relay to ``base_url`` and the loopback port it accepts on."""
    endpoint = Endpoint.parse(base_url)
    assert endpoint is not None
    relay = ModelRelay(endpoint)
    listener = _listener()
    port = listener.getsockname()[1]
    relay.serve("slot-0", [listener])
    return relay, port


def _receive_all(sock: socket.socket) -> bytes:
    chunks = []
    while data := sock.recv(65536):
        chunks.append(data)
    return b"".join(chunks)


def test_megabytes_cross_both_ways_at_once_intact(echo: socketserver.ThreadingTCPServer) -> None:
    """The client sends 8 MB without reading while the endpoint echoes it back: neither
    direction stalls the other, and every byte comes back in order."""
    relay, port = _relay_to(f"http://127.0.0.1:{echo.server_address[1]}/v1")
    payload = os.urandom(8 * 1024 * 1024)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as client:

            def send() -> None:
                client.sendall(payload)
                client.shutdown(socket.SHUT_WR)

            sender = threading.Thread(target=send)
            sender.start()
            received = _receive_all(client)
            sender.join()
        assert received == payload
    finally:
        relay.close()


def test_a_reply_after_the_clients_end_still_arrives() -> None:
    """Half-close passes through: the endpoint sees the end of the request, and its reply
    then reaches the client, followed by the end of the connection."""
    server = _server(_Digest)
    relay, port = _relay_to(f"http://127.0.0.1:{server.server_address[1]}")
    request = os.urandom(300_000)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as client:
            client.sendall(request)
            client.shutdown(socket.SHUT_WR)
            assert _receive_all(client) == hashlib.sha256(request).hexdigest().encode()
    finally:
        relay.close()
        server.shutdown()
        server.server_close()


def test_many_connections_at_once_each_get_their_own_bytes(
    echo: socketserver.ThreadingTCPServer,
) -> None:
    relay, port = _relay_to(f"http://127.0.0.1:{echo.server_address[1]}")
    replies: dict[int, bytes] = {}

    def talk(n: int) -> None:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as client:
            client.sendall(f"connection {n}\n".encode() * 1000)
            client.shutdown(socket.SHUT_WR)
            replies[n] = _receive_all(client)

    threads = [threading.Thread(target=talk, args=(n,)) for n in range(40)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert replies == {n: f"connection {n}\n".encode() * 1000 for n in range(40)}
    finally:
        relay.close()


def test_an_endpoint_nobody_listens_on_closes_the_clients_connection() -> None:
    """The agent sees its connection end (as a refused call), and the relay goes on."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        free_port = taken.getsockname()[1]
    relay, port = _relay_to(f"http://127.0.0.1:{free_port}")
    try:
        for _ in range(3):
            client = socket.create_connection(("127.0.0.1", port), timeout=30)
            with client, contextlib.suppress(ConnectionResetError):
                assert client.recv(1) == b""
    finally:
        relay.close()


def test_an_endpoint_named_by_a_host_name_is_reached(
    echo: socketserver.ThreadingTCPServer,
) -> None:
    """The relay resolves the name itself (where localhost also names ::1, on which
    nothing listens here, it goes on to the next address, as a client's connect does)."""
    relay, port = _relay_to(f"http://localhost:{echo.server_address[1]}")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as client:
            client.sendall(b"hello")
            client.shutdown(socket.SHUT_WR)
            assert _receive_all(client) == b"hello"
    finally:
        relay.close()


def test_a_slots_new_listeners_replace_its_old_ones(echo: socketserver.ThreadingTCPServer) -> None:
    """A slot's next worker brings listeners of its own: the last worker's are closed."""
    relay, old_port = _relay_to(f"http://127.0.0.1:{echo.server_address[1]}")
    new = _listener()
    new_port = new.getsockname()[1]
    try:
        relay.serve("slot-0", [new])
        with socket.create_connection(("127.0.0.1", new_port), timeout=30) as client:
            client.sendall(b"new")
            client.shutdown(socket.SHUT_WR)
            assert _receive_all(client) == b"new"
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", old_port), timeout=30).close()
    finally:
        relay.close()


def test_close_ends_open_connections_and_refuses_new_ones(
    echo: socketserver.ThreadingTCPServer,
) -> None:
    relay, port = _relay_to(f"http://127.0.0.1:{echo.server_address[1]}")
    client = socket.create_connection(("127.0.0.1", port), timeout=30)
    client.sendall(b"ping")
    assert client.recv(4) == b"ping"
    relay.close()
    try:
        assert client.recv(1) == b""
    except ConnectionResetError:
        pass
    finally:
        client.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=30).close()
    late = _listener()
    relay.serve("slot-1", [late])  # after close: taken and closed, not served
    assert late.fileno() == -1
