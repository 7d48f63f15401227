"""The first worker starts, and its agent builds, while the console opens; whatever ends
the run before its attempts leaves no worker running and no scratch folder behind."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agent_eval.run import EachAttempt, PreparedRun, RunConfig
from agent_eval.run.workspace import RUN_PREFIX, scratch_parent
from agent_eval.sandbox.bwrap import unavailable
from agent_eval.workflows import run_one
from agent_eval.workflows.one_run import OneRun

# build() tells a server on loopback that it ran, and from which process: through the
# sandbox's relay when the sandbox is on, so the same agent serves both.
AGENT = """
import os, urllib.request

def build(options):
    urllib.request.urlopen(f"{options['base_url']}/built/{os.getpid()}", timeout=30).read()

def run_task(task, options):
    return {"answer": "fine", "steps": 1, "tokens": 1}
"""
BUILD_WAIT = 30.0
"""How long the console waits for build(): a bound for a slow machine, never a timing."""


class Builds:
    """A server on 127.0.0.1 that hears each build() and the pid it ran in."""

    def __init__(self) -> None:
        self.pids: list[int] = []
        self.heard = threading.Event()
        builds = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                builds.pids.append(int(self.path.rpartition("/")[2]))
                builds.heard.set()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def builds() -> Iterator[Builds]:
    server = Builds()
    yield server
    server.close()


class Console:
    """A console whose opening waits for build() (bounded), then fails if asked to."""

    def __init__(self, builds: Builds, fail: BaseException | None = None) -> None:
        self._builds, self._fail = builds, fail
        self.built_while_opening: bool | None = None

    @contextmanager
    def opening(self, prepared: PreparedRun) -> Iterator[EachAttempt]:
        self.built_while_opening = self._builds.heard.wait(BUILD_WAIT)
        if self._fail is not None:
            raise self._fail
        yield EachAttempt(lambda row: None)

    def closing(self, done: OneRun) -> None:
        pass


def my_scratch() -> list[str]:
    """This process's run scratch folders that still exist."""
    mine = f"{RUN_PREFIX}{os.getpid()}-"
    return [name for name in os.listdir(scratch_parent()) if name.startswith(mine)]


def config_for(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[[str], Path],
    builds: Builds, sandbox: str,
) -> RunConfig:  # fmt: skip
    return RunConfig(
        agent=str(write_agent(AGENT)),
        tasks=str(write_suite([{"id": "t", "task": "q", "expect_in_answer": ["fine"]}])),
        base_url=builds.base_url,
        trajectory_dir=tmp_path / "traj",
        out=tmp_path / "r.json",
        sandbox=sandbox,
        preflight=False,
    )


@pytest.mark.parametrize(
    "sandbox",
    [
        "off",
        pytest.param(
            "on", marks=pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))
        ),
    ],
)
def test_the_agent_builds_while_the_console_opens(
    tmp_path: Path,
    write_suite: Callable[..., Path],
    write_agent: Callable[[str], Path],
    builds: Builds,
    sandbox: str,
) -> None:
    """The console is still opening when build() runs, and the run then uses that very
    worker: one build, and the attempt passes."""
    console = Console(builds)
    done = run_one(config_for(tmp_path, write_suite, write_agent, builds, sandbox), console)
    assert console.built_while_opening is True
    assert len(builds.pids) == 1
    assert [row.failure_class for row in done.report.rows] == ["passed"]
    assert my_scratch() == []


@pytest.mark.parametrize("fail", [RuntimeError("the console broke"), KeyboardInterrupt()])
def test_a_run_ended_while_the_console_opens_leaves_nothing_running(
    tmp_path: Path,
    write_suite: Callable[..., Path],
    write_agent: Callable[[str], Path],
    builds: Builds,
    alive: Callable[[int], bool],
    fail: BaseException,
) -> None:
    """The error (or Ctrl-C) reaches the caller, the built worker is ended, and neither
    a scratch folder nor a journal is left: nothing ran."""
    config = config_for(tmp_path, write_suite, write_agent, builds, "off")
    with pytest.raises(type(fail)):
        run_one(config, Console(builds, fail))
    assert len(builds.pids) == 1
    assert not alive(builds.pids[0])  # killed and reaped before run_one returned
    assert my_scratch() == []
    assert not (tmp_path / "r.json").exists()
    assert list((tmp_path / "traj").glob("*.journal*")) == []
