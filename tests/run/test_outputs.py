"""What a run writes: the writer thread, in-order emission, the results file's layout."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from agent_eval.run.outputs import BackgroundWriter, InOrder, write_results
from agent_eval.run.secrets import REDACTED, Redactor


def test_the_writer_runs_jobs_in_order_and_close_waits_for_them() -> None:
    done: list[int] = []
    writer = BackgroundWriter(depth=2)  # a small queue: submit blocks rather than grows
    for n in range(50):
        writer.submit(lambda n=n: done.append(n))
    writer.close()
    assert done == list(range(50))


def test_a_failed_write_is_raised_and_nothing_after_it_runs() -> None:
    done: list[str] = []
    gate = threading.Event()
    writer = BackgroundWriter()

    def fail() -> None:
        gate.set()
        raise OSError("disk full")

    writer.submit(fail)
    writer.submit(lambda: done.append("after"))
    gate.wait(5)
    with pytest.raises(OSError, match="disk full"):
        writer.close()
    assert done == []
    with pytest.raises(OSError, match="disk full"):
        writer.submit(lambda: done.append("later"))


def test_in_order_emits_in_dispatch_order_and_flush_skips_gaps() -> None:
    seen: list[str] = []
    ordered = InOrder(seen.append)
    for index, row in [(2, "c"), (0, "a"), (5, "f"), (1, "b")]:
        ordered.put(index, row)
    assert seen == ["a", "b", "c"]
    ordered.flush()  # an interrupted run: 3 and 4 never finished
    assert seen == ["a", "b", "c", "f"]


@pytest.mark.parametrize("rows", [[], [b'{"n": 1}', b'{"n": 2, "s": "\\u00e9"}']])
def test_results_are_written_in_json_dumps_layout_piece_by_piece(
    tmp_path: Path, rows: list[bytes]
) -> None:
    head = {
        "schema": "agent-eval/results@1",
        "run": {
            "model": "m",
            "base_url": "http://x/sk-secret-1234",
            "warnings": [],
            "nested": {"a": [1, 2.5, None, "é"], "empty": {}},
        },
        "per_task": [{"task_id": "a", "pass_hat_k": {"1": 1.0, "2": 0.5}}, {"task_id": "b"}],
    }
    path = tmp_path / "r.json"
    redact = Redactor(["sk-secret-1234"])
    assert write_results(path, head, rows, redact) == len(rows)
    # json.dumps(indent=2)'s layout, with each row on one line as the journal has it.
    opening, closing = json.dumps({**head, "results": []}, indent=2, ensure_ascii=False).rsplit(
        "[]", 1
    )
    lines = [row.decode() for row in rows]
    body = "[\n    " + ",\n    ".join(lines) + "\n  ]" if lines else "[]"
    text = (opening + body + closing).replace("sk-secret-1234", REDACTED)
    assert path.read_text(encoding="utf-8") == text + "\n"
    assert json.loads(text)["results"] == [json.loads(row) for row in rows]
    empty_tasks = {**head, "per_task": []}
    write_results(path, empty_tasks, [], redact)
    assert json.loads(path.read_text())["per_task"] == []
