"""What an agent prints reaches the harness's stderr as text: it cannot drive the
terminal (clear it, move the cursor, hide what follows) where the user reads verdicts."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.run.conftest import AGENT_EVAL, needs_sandbox, write_in_pieces

from agent_eval.redaction import Redactor, ShownStream

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
