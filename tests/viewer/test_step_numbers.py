"""The attempt page numbers steps as the attempt counts them, and says where it went wrong
in those numbers: a 1-step attempt never went wrong "at step 2"."""

from __future__ import annotations

from agent_eval.viewer.align import step_numbers, went_wrong

ONE_STEP = [
    {"type": "tool", "tool": "search_documents", "args": {"query": "backup"}, "error": False},
    {"type": "stop", "reason": "model_error", "detail": "connection refused"},
    {"type": "score", "passed": False},
]


def test_a_stop_after_one_step_is_named_after_that_step() -> None:
    assert step_numbers(ONE_STEP) == [1, None, None]
    found = went_wrong(ONE_STEP, "infra_error")
    assert found is not None
    assert (found["step"], found["label"]) == (1, "the stop after step 1")


def test_routes_and_stops_are_not_steps() -> None:
    records = [
        {"type": "route", "route": "search"},
        {"type": "model", "tool_calls": ["read_file"]},
        {"type": "tool", "tool": "read_file", "error": True},
        {"type": "model", "tool_calls": []},
        {"type": "stop", "reason": "finished"},
    ]
    assert step_numbers(records) == [None, 1, 2, 3, None]
    found = went_wrong(records, "wrong_answer")
    assert found is not None and found["label"] == "step 2"  # the failed tool call
    crashed = [{"type": "stop", "reason": "agent_error", "detail": "run_task raised"}]
    assert went_wrong(crashed, "agent_error") == {
        "step": 0, "why": "stopped: agent_error (run_task raised)", "label": "the stop"
    }  # fmt: skip
