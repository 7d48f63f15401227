"""What an agent prints reaches the harness's stderr as text: it cannot drive the
terminal (clear it, move the cursor, hide what follows) where the user reads verdicts.
What it returns reaches the files of the run as text UTF-8 can hold: a lone surrogate is
shown as U+FFFD, and the run goes on."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.run.conftest import AGENT_EVAL, needs_sandbox, write_in_pieces

from agent_eval.redaction import Redactor, ShownStream
from agent_eval.trajectory import read_trajectory

CONTROLS = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\xc2[\x80-\x9f]")

PIECES = ["plain words ", "é 日本 🙂 ", "\n", "\t", "\r", "\x1b[2J", "\x1b[8m", "\x07",
          "\x00", "\x7f", "\x9b31m", "\u0085", "sk-secret-7781"]  # fmt: skip


SHOWN = {"\x1b[2J": "\\x1b[2J", "\x1b[8m": "\\x1b[8m", "\x07": "\\x07", "\x00": "\\x00",
         "\x7f": "\\x7f", "\x9b31m": "\\x9b31m", "\u0085": "\\x85",
         "sk-secret-7781": "[redacted]"}  # fmt: skip
"""How each piece is shown: controls as escapes, the secret redacted, the rest as it is."""


@given(st.lists(st.sampled_from(PIECES), max_size=12), st.lists(st.integers(0, 300), max_size=6))
def test_a_stream_cut_anywhere_shows_every_control_and_keeps_the_text(
    pieces: list[str], cuts: list[int]
) -> None:
    data = "".join(pieces).encode("utf-8")
    got: list[bytes] = []
    stream = ShownStream(Redactor(["sk-secret-7781"]).stream(got.append))
    write_in_pieces(stream, data, cuts)
    shown = b"".join(got)
    assert not CONTROLS.search(shown)
    assert b"sk-secret-7781" not in shown
    expected = "".join(SHOWN.get(piece, piece) for piece in pieces)
    assert shown.decode("utf-8") == expected


LOUD_AGENT = """
import sys
print("import: \\x1b[2J\\x1b[Hsuccess rate  1.00", file=sys.stderr, flush=True)

def run_task(task, options):
    print("attempt: \\x1b[8m\\u009b8m", flush=True)
    sys.stderr.buffer.write(b"split: \\xc2")
    sys.stderr.flush()
    sys.stderr.buffer.write(b"\\x9b2J\\n")
    sys.stderr.flush()
    return {"answer": "no", "steps": 1, "tokens": 1}
"""


@pytest.mark.parametrize("sandbox", [pytest.param("on", marks=needs_sandbox), "off"])
def test_what_an_agent_prints_cannot_drive_the_terminal(
    tmp_path: Path,
    write_suite: Callable[..., Path],
    write_agent: Callable[..., Path],
    sandbox: str,
) -> None:
    """Escape sequences printed at import and in an attempt, a C1 control split across
    two writes among them, arrive as visible text; the verdict lines are untouched."""
    suite = write_suite([{"id": "t1", "category": "c", "task": "x", "expect_in_answer": ["yes"]}])
    agent = write_agent(LOUD_AGENT)
    done = subprocess.run(
        [str(AGENT_EVAL), "run", "--agent", str(agent), "--tasks", str(suite),
         "--sandbox", sandbox, "--out", "r.json"],
        cwd=tmp_path, capture_output=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert not CONTROLS.search(done.stderr), done.stderr
    assert not CONTROLS.search(done.stdout), done.stdout
    err = done.stderr.decode("utf-8")
    assert "import: \\x1b[2J\\x1b[Hsuccess rate  1.00" in err
    assert "attempt: \\x1b[8m\\x9b8m" in err
    assert "split: \\x9b2J" in err
    assert "success rate  0.00  (0 of 1)" in done.stdout.decode("utf-8")


SURROGATE_AGENT = r"""
SCAFFOLD_NAME = "odd\udcffname"


def run_task(task, options):
    if options["task_id"] == "answer":
        return {"answer": "yes \ud800 and\u2028on", "steps": 1, "tokens": 1}
    if options["task_id"] == "record":
        return {"answer": "yes", "steps": 1, "tokens": 1,
                "trajectory": [{"tool": "x\udcff", "said": "a\u2028b\x85c"}]}
    if options["task_id"] == "raises":
        raise ValueError("bad \udcff text")
    return {"answer": "yes", "steps": 1, "tokens": 1}
"""

ESCAPING_CMD_AGENT = r"""
import sys

for line in sys.stdin:
    print('{"answer": "yes \\ud800", "steps": 1, "tokens": 1}', flush=True)
"""


def yes_tasks(*ids: str) -> list[dict[str, str | list[str]]]:
    return [{"id": i, "category": "c", "task": "say yes", "expect_in_answer": ["yes"]} for i in ids]


def results(path: Path) -> dict[str, Any]:
    """The results file, read as UTF-8 strictly: a lone surrogate written would not decode."""
    written: dict[str, Any] = json.loads(path.read_bytes().decode("utf-8"))
    return written


def test_a_lone_surrogate_an_agent_returns_is_shown_and_the_run_goes_on(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    """In the answer, a trajectory record, a raised exception's message and SCAFFOLD_NAME;
    the task after them runs, the answer with U+FFFD is scored as the agent's answer,
    and a resume reads the files back."""
    suite = write_suite(yes_tasks("answer", "record", "raises", "after"))
    agent = write_agent(SURROGATE_AGENT)
    args = [str(AGENT_EVAL), "run", "--agent", str(agent), "--tasks", str(suite), "--out", "r.json"]
    done = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr  # the one that raised failed
    assert "Traceback" not in done.stderr
    written = results(tmp_path / "r.json")
    assert written["run"]["scaffold"] == "odd\ufffdname"
    rows = {row["id"]: row for row in written["results"]}
    classes = {"answer": "passed", "record": "passed", "raises": "agent_error", "after": "passed"}
    assert {i: row["failure_class"] for i, row in rows.items()} == classes
    assert rows["answer"]["answer"] == "yes \ufffd and\u2028on"
    assert rows["raises"]["error"] == "run_task raised ValueError: bad \ufffd text"
    assert rows["record"]["checks"]["tools_used"] == ["x\ufffd"]
    for row in rows.values():
        path = tmp_path / row["trajectory_file"]
        path.read_bytes().decode("utf-8")  # strict: a lone surrogate written would not decode
        meta = read_trajectory(path).meta
        assert meta is not None and meta.get("scaffold") == "odd\ufffdname"
    records = read_trajectory(tmp_path / rows["record"]["trajectory_file"]).records
    assert records[0] == {"tool": "x\ufffd", "said": "a\u2028b\x85c"}  # one line, whole

    more = subprocess.run([*args, "--resume", "r.json", "--repeats", "2"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert more.returncode == 2, more.stderr
    assert "resumed: 4 finished attempt(s) kept, not re-run" in more.stderr
    resumed = results(tmp_path / "r.json")["results"]
    assert [row for row in resumed if row["attempt"] == 1] == list(rows.values())
    assert [row["id"] for row in resumed if row["attempt"] == 2] == list(rows)


def test_a_cmd_agents_escaped_lone_surrogate_is_shown(
    tmp_path: Path, write_suite: Callable[..., Path]
) -> None:
    """A cmd: agent's result line may escape a lone surrogate ("\\ud800" is valid JSON)."""
    suite = write_suite(yes_tasks("one", "two"))
    (tmp_path / "escaping.py").write_text(ESCAPING_CMD_AGENT, encoding="utf-8")
    done = subprocess.run(
        [str(AGENT_EVAL), "run", "--agent", "cmd:python3 escaping.py", "--tasks", str(suite),
         "--out", "r.json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = results(tmp_path / "r.json")["results"]
    assert {row["id"]: row["answer"] for row in rows} == {"one": "yes \ufffd", "two": "yes \ufffd"}
