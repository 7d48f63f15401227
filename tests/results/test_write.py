"""Writing results files: json.dumps's layout, piece by piece, redacted, atomically."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_eval.redaction import REDACTED, Redactor
from agent_eval.results import ResultsHead, write_results


@pytest.mark.parametrize("rows", [[], [b'{"n": 1}', b'{"n": 2, "s": "\\u00e9"}']])
def test_results_are_written_in_json_dumps_layout_piece_by_piece(
    tmp_path: Path, rows: list[bytes]
) -> None:
    document = {
        "schema": 2,
        "run": {
            "run_id": "r",
            "scaffold": "s",
            "task_set": "t",
            "task_set_version": "1",
            "model": "m",
            "base_url": "http://x/sk-secret-1234",
            "options": {"a": [1, 2.5, None, "é"], "empty": {}},
            "warnings": [],
        },
        "per_task": [
            {"id": "a", "attempts": 2, "successes": 1, "pass_hat_k": {"1": 0.5, "2": 0.0}},
            {"id": "b", "attempts": 1, "successes": 0},
        ],
    }
    head = ResultsHead.model_validate(document)
    path = tmp_path / "r.json"
    redact = Redactor(["sk-secret-1234"])
    assert write_results(path, head, rows, redact) == len(rows)
    # json.dumps(indent=2)'s layout, with each row on one line as the journal has it.
    opening, closing = json.dumps({**document, "results": []}, indent=2, ensure_ascii=False).rsplit(
        "[]", 1
    )
    lines = [row.decode() for row in rows]
    body = "[\n    " + ",\n    ".join(lines) + "\n  ]" if lines else "[]"
    text = (opening + body + closing).replace("sk-secret-1234", REDACTED)
    assert path.read_text(encoding="utf-8") == text + "\n"
    assert json.loads(text)["results"] == [json.loads(row) for row in rows]
    empty_tasks = head.model_copy(update={"per_task": []})
    write_results(path, empty_tasks, [], redact)
    assert json.loads(path.read_text())["per_task"] == []
