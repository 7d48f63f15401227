"""The model relay's inside end: listen on a slot's loopback, relay to the unix socket.

A slot with a network namespace of its own (agent_eval.sandbox.slot) listens on
127.0.0.1:PORT, and ::1 where there is IPv6, before any agent code runs, so the first
model call never finds the port closed; every connection is relayed to the unix socket
that the relay outside (agent_eval.sandbox.relay) accepts on.
"""

from __future__ import annotations

import contextlib
import socket
import threading

from agent_eval.sandbox.relay import pipe


def listen(port: int) -> list[socket.socket]:
    """The listening sockets on ``port`` of this network namespace's loopback."""
    listeners = [_listen(socket.AF_INET, "127.0.0.1", port)]
    if socket.has_ipv6:
        with contextlib.suppress(OSError):  # no IPv6 loopback in this namespace
            listeners.append(_listen(socket.AF_INET6, "::1", port))
    return listeners


def serve_forever(listeners: list[socket.socket], socket_path: str) -> None:
    """Relay every connection to ``socket_path``; never returns."""
    threads = [threading.Thread(target=_serve, args=(listener, socket_path), daemon=True)
               for listener in listeners]  # fmt: skip
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _listen(family: socket.AddressFamily, host: str, port: int) -> socket.socket:
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(128)
    return listener


def _serve(listener: socket.socket, socket_path: str) -> None:
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_relay, args=(client, socket_path), daemon=True).start()


def _relay(client: socket.socket, socket_path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(socket_path)
    except OSError:
        client.close()
        upstream.close()
        return
    pipe(client, upstream)
