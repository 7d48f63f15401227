"""A sandbox's first program when the model endpoint is relayed: listen, then run.

`python -m agent_eval.sandbox.inside SOCKET PORT -- COMMAND...` listens on 127.0.0.1:PORT
in the sandbox's network namespace, runs COMMAND as its child, relays every connection
to the unix SOCKET (the relay outside), and exits with COMMAND's status. It listens
before COMMAND starts, so the first model call never finds the port closed. It is the
parent, not a child, of COMMAND, which then has no process of ours among its children.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading

from agent_eval.sandbox.relay import pipe


def main(argv: list[str]) -> int:
    socket_path, port, separator, *command = argv
    if separator != "--" or not command:
        print("usage: inside SOCKET PORT -- COMMAND...", file=sys.stderr)
        return 2
    listeners = [_listen(socket.AF_INET, "127.0.0.1", int(port))]
    if socket.has_ipv6:
        with contextlib.suppress(OSError):  # no IPv6 loopback in this namespace
            listeners.append(_listen(socket.AF_INET6, "::1", int(port)))
    child = os.fork()
    if child == 0:
        for listener in listeners:
            listener.close()
        try:
            os.execvp(command[0], command)
        finally:
            os._exit(127)
    for listener in listeners:
        threading.Thread(target=_serve, args=(listener, socket_path), daemon=True).start()
    _, status = os.waitpid(child, 0)
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


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


if __name__ == "__main__":
    sys.stdout.flush()
    os._exit(main(sys.argv[1:]))
