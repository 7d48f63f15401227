"""The package's one HTTP stack: a bound port before serving, clear errors, clean stops."""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from agent_eval.errors import ConfigError
from agent_eval.web import AppServer, bind


def _app() -> Starlette:
    return Starlette(routes=[Route("/", lambda request: PlainTextResponse("hello"))])


def test_port_0_is_resolved_before_serving_and_freed_by_stop() -> None:
    server = AppServer(_app(), port=0)
    assert server.port > 0 and server.root_url == f"http://127.0.0.1:{server.port}"
    with server:
        assert httpx.get(server.root_url + "/").text == "hello"
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.root_url + "/", timeout=2)


def test_a_port_in_use_and_a_remote_host_are_clear_errors() -> None:
    running = AppServer(_app()).start()
    try:
        with pytest.raises(ConfigError, match=f"cannot listen on 127.0.0.1:{running.port}"):
            AppServer(_app(), port=running.port)
    finally:
        running.stop()
    with pytest.raises(ConfigError, match="add --allow-remote if that is intended"):
        AppServer(_app(), host="0.0.0.0")


def test_a_keep_alive_client_does_not_hold_up_stop() -> None:
    server = AppServer(_app()).start()
    with httpx.Client() as client:
        assert client.get(server.root_url + "/").status_code == 200
        server.stop()  # the idle connection is closed, not waited for
        with pytest.raises(httpx.HTTPError):
            client.get(server.root_url + "/", timeout=2)


def test_connections_to_a_bound_socket_have_nagle_off() -> None:
    """asyncio, under uvicorn, sets TCP_NODELAY only on sockets it knows are TCP; with
    Nagle on, a response's second write waits for the client's delayed ACK (40 ms)."""
    seen: list[int] = []

    class Note(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            accepted = transport.get_extra_info("socket")
            seen.append(accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    async def accept_one() -> None:
        listener = bind("127.0.0.1", 0)
        server = await asyncio.get_running_loop().create_server(Note, sock=listener)
        async with server:
            _, writer = await asyncio.open_connection(*listener.getsockname())
            while not seen:
                await asyncio.sleep(0.01)
            writer.close()

    asyncio.run(asyncio.wait_for(accept_one(), 10))
    assert seen == [1]
