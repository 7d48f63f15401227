"""How a run hands on what it produced: the writer thread and in-order emission."""

from __future__ import annotations

import threading

import pytest

from agent_eval.run.outputs import BackgroundWriter, InOrder


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
