"""A command run in its own process group ends with everything it started."""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agent_eval.processes import kill_group, run_in_group

ENV = {"PATH": "/usr/bin:/bin"}


def _background(tmp_path: Path) -> list[str]:
    """A command that leaves a sleeper behind, writes its pid, and exits 3."""
    script = (
        "import subprocess, sys\n"
        "p = subprocess.Popen(['sleep', '60'])\n"
        f"open({str(tmp_path / 'pid')!r}, 'w').write(str(p.pid))\n"
        "print('started')\n"
        "sys.exit(3)\n"
    )
    return [sys.executable, "-c", script]


def test_a_finished_command_leaves_nothing_running(
    tmp_path: Path, gone_soon: Callable[[int], bool]
) -> None:
    with tempfile.TemporaryFile() as output:
        code = run_in_group(_background(tmp_path), cwd=tmp_path, env=ENV, timeout=30,
                            output=output)  # fmt: skip
        output.seek(0)
        assert output.read() == b"started\n"
    assert code == 3
    assert gone_soon(int((tmp_path / "pid").read_text()))


def test_past_its_timeout_a_command_is_stopped_and_none_is_its_code(tmp_path: Path) -> None:
    with tempfile.TemporaryFile() as output:
        started = time.monotonic()
        code = run_in_group(["sleep", "60"], cwd=tmp_path, env=ENV, timeout=0.5, output=output)
    assert code is None
    assert time.monotonic() - started < 30


def test_the_grace_lets_a_stopped_command_finish_its_own_way(tmp_path: Path) -> None:
    script = (
        "import signal, sys, time\n"
        "def done(*_):\n"
        "    print('cleaned up', flush=True)\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, done)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    with tempfile.TemporaryFile() as output:
        code = run_in_group([sys.executable, "-c", script], cwd=tmp_path, env=ENV, timeout=5,
                            output=output, grace=10)  # fmt: skip
        output.seek(0)
        said = output.read()
    assert code is None
    assert said.endswith(b"cleaned up\n")


def test_ending_a_group_that_is_gone_is_no_error() -> None:
    kill_group(2**22 + 12345)  # no such process
    kill_group(2**22 + 12345, or_process=True)
