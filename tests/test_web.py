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
from agent_eval.web import AppServer, bind, host_names_us, is_loopback


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


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.0.1", True),
        ("localhost", True),
        ("LocalHost", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),  # IPv4-mapped: loopback on every Python version
        ("0:0:0:0:0:0:0:1", True),
        ("0.0.0.0", False),
        ("::", False),
        ("::ffff:10.0.0.5", False),
        ("192.168.1.5", False),
        ("10.0.0.5", False),
        ("example.org", False),
        ("localhost.example.org", False),
        ("127.0.0.1.example.org", False),
        ("", False),
    ],
)
def test_only_loopback_hosts_count_as_local(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@pytest.mark.parametrize(
    ("header", "ours"),
    [
        ("127.0.0.1:8000", True),
        ("localhost:8000", True),
        ("[::1]:8000", True),
        ("[::ffff:127.0.0.1]:8000", True),
        ("127.0.0.1:8001", False),
        ("evil.example:8000", False),
        ("localhost.evil.example:8000", False),
        ("::1:8000", False),  # an unbracketed IPv6 address
        ("127.0.0.1", False),  # no port means 80
    ],
)
def test_a_host_header_names_us_only_by_loopback_and_our_port(header: str, ours: bool) -> None:
    assert host_names_us(header, 8000) is ours


def test_an_ipv4_mapped_loopback_host_needs_no_allow_remote() -> None:
    with AppServer(_app(), host="::ffff:127.0.0.1", port=0) as server:
        assert server.port > 0
    with pytest.raises(ConfigError, match="--allow-remote"):
        AppServer(_app(), host="::ffff:10.0.0.5", port=0)
