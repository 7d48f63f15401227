"""`agent-eval history` black-box: runs over time, damaged lines, suites changed silently."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

Invoke = Any


def _run(
    run_id: str, date: str, suite_hash: str, version: str = "1.0", passed: int = 9, runs: int = 15
) -> str:
    return json.dumps(
        {
            "run_id": run_id,
            "date": date,
            "scaffold": "builtin:minimal",
            "model": "local/chat",
            "quant": "Q4_K_M",
            "task_set": "part26",
            "task_set_version": version,
            "suite_hash": suite_hash,
            "repeats": 1,
            "summary": {"runs": runs, "passed": passed, "total_tokens": 1234},
        }
    )


def test_lists_runs_oldest_first_and_flags_a_silent_suite_change(
    agent_eval: Invoke, tmp_path: Path
) -> None:
    labbook = tmp_path / "lb.jsonl"
    labbook.write_text(
        "\n".join(
            [
                _run("r2", "2025-02-01T10:00:00+00:00", "b" * 64),
                _run("r1", "2025-01-01T10:00:00+00:00", "a" * 64),
                '{"run_id": "torn", "scaff',
                "[1, 2]",
                _run("r3", "2025-03-01T10:00:00+00:00", "c" * 64, version="1.1"),
                "",
            ]
        )
    )
    code, out, err = agent_eval("history", "--labbook", labbook)
    lines = out.splitlines()
    assert (code, err) == (0, "")
    assert lines[0] == (
        f"WARNING: suite part26 1.0 changed content without a version bump: "
        f"{'a' * 12} in r1; {'b' * 12} in r2. Results across these hashes are "
        "not comparable; bump the suite version whenever tasks change."
    )
    assert lines[1].startswith(f"WARNING: {labbook} line 3: not valid JSON (")
    assert lines[2] == (f"WARNING: {labbook} line 4: not a run record (not a JSON object); skipped")
    assert lines[3] == f"3 run(s) in {labbook}"
    rows = [line for line in lines if line.startswith("│ 2025")]
    assert [row.split("│")[1].strip() for row in rows] == [
        "2025-01-01 10:00",
        "2025-02-01 10:00",
        "2025-03-01 10:00",
    ]
    assert "│ Q4_K_M │ part26 1.0 │ 0.600 (9/15) │ [0.357, 0.802] │ 1234" in rows[0]


def test_json_and_missing_file(agent_eval: Invoke, tmp_path: Path) -> None:
    labbook = tmp_path / "lb.jsonl"
    labbook.write_text(_run("r1", "2025-01-01", "a" * 64) + "\n")
    code, out, _ = agent_eval("history", "--labbook", labbook, "--format", "json")
    history = json.loads(out)
    assert code == 0 and history["problems"] == [] and history["suite_changes"] == []
    assert history["runs"][0]["success_rate"] == 0.6
    assert [round(x, 3) for x in history["runs"][0]["wilson95"]] == [0.357, 0.802]
    gone = tmp_path / "gone.jsonl"
    assert agent_eval("history", "--labbook", gone) == (
        1,
        "",
        f"Error: labbook {gone}: not found (runs append to it with 'agent-eval run "
        "--labbook FILE')\n",
    )
