"""The side-by-side benchmark runs end to end: its flags are explained, the agent-eval
side completes a tiny run and every loop passes, and a bad flag is refused.

Only what is not timing is asserted: the figures themselves are the machine's."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "inspect_side_by_side.py"


def bench(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip


def test_help_explains_every_flag() -> None:
    done = bench("--help")
    assert done.returncode == 0, done.stderr
    flags = ("--loops", "--rounds", "--cases", "--latency-ms", "--skip-inspect", "--ae-args",
             "--inspect-version", "--venv-dir", "--pss-interval", "--rusage")  # fmt: skip
    for flag in flags:
        assert flag in done.stdout
    assert "c1, c32, latency, start" in done.stdout


def test_unknown_case_is_refused() -> None:
    done = bench("--cases", "c64", "--skip-inspect")
    assert done.returncode == 2
    assert "--cases takes c1, c32, latency, start" in done.stderr


def table(stdout: str) -> dict[tuple[str, str], list[str]]:
    """(case, side) -> the figures of each table row."""
    rows: dict[tuple[str, str], list[str]] = {}
    for line in stdout.splitlines():
        if " loops, " not in line:
            continue
        case, side = line[:28].strip(), line[29:59].strip()
        rows[(case, side)] = line[59:].split()
    return rows


def test_a_tiny_agent_eval_run_completes_and_every_loop_passes() -> None:
    done = bench("--loops", "4", "--rounds", "1", "--skip-inspect", "--cases", "c32,latency",
                 "--latency-ms", "20")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "load average" in done.stdout
    rows = table(done.stdout)
    assert set(rows) == {
        ("4 loops, 32 conc.", "agent-eval"),
        ("4 loops, 32 conc.", "agent-eval --isolation worker"),
        ("4 loops, 20 ms, 32 conc.", "agent-eval"),
    }
    for figures in rows.values():
        wall, cpu, _, pss, largest, passed = (float(x) for x in figures[:6])
        assert wall > 0 and cpu > 0 and pss > 0
        # one process's peak RSS: more than a bare interpreter's, and far from a gigabyte
        # in a four-loop run
        assert 10 < largest < 1024
        assert passed == 4
    # the ideal: 2 calls x 4 loops x 20 ms / 32
    latency = rows[("4 loops, 20 ms, 32 conc.", "agent-eval")]
    assert latency[6] == "0.01"
    # and the run once started, from its own records: its attempts' span lies within its
    # wall time, which includes the start-up and the exit
    found = re.fullmatch(r"\(([\d.]+)x; ([\d.]+)x once started\)", " ".join(latency[8:]))
    assert found is not None, latency
    assert 0 < float(found[2]) <= float(found[1])


@pytest.mark.slow
def test_both_sides_complete_with_inspect_in_its_own_venv(tmp_path: Path) -> None:
    """Installs Inspect AI into a throwaway venv (needs the package index)."""
    done = bench("--loops", "2", "--rounds", "1", "--cases", "c1", "--venv-dir",
                 str(tmp_path / "venv"), timeout=1200)  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = table(done.stdout)
    assert float(rows[("2 loops, 1 conc.", "Inspect AI react")][5]) == 2
    assert float(rows[("2 loops, 1 conc.", "agent-eval")][5]) == 2
    # Inspect ran from the throwaway venv, not from agent-eval's own (whose optional
    # "inspect" extra reads Inspect logs and may hold another version)
    assert (tmp_path / "venv" / "bin" / "inspect").exists()


def test_extra_agent_eval_flags_reach_the_run() -> None:
    """A flag agent-eval refuses stops the benchmark with agent-eval's own error."""
    done = bench("--loops", "1", "--rounds", "1", "--skip-inspect", "--cases", "c1",
                 "--ae-args", "--isolation nowhere")  # fmt: skip
    assert done.returncode != 0
    assert "--isolation" in done.stderr and "nowhere" in done.stderr
