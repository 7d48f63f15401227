"""Where two trajectories part ways, and where a failed attempt went wrong.

Two attempts of one task are aligned on what each step did (the tools a reply asked
for, a tool and its arguments, a route, a stop), not on the wording, which differs on
every sample. The first row where the two sides differ is the divergence.
"""

from __future__ import annotations

import json
from difflib import SequenceMatcher
from typing import Any

from agent_eval.trajectory import STEP_KINDS

ALIGN_LIMIT = 2_000
"""Records per side aligned; past this the rest is shown unaligned (the matcher is
quadratic in the worst case)."""


def signature(record: dict[str, Any]) -> str:
    """What a step did, in a form equal for equal actions."""
    kind = record.get("type")
    if kind == "model":
        return f"model:{record.get('role', '')}:{json.dumps(record.get('tool_calls') or [])}"
    if kind == "tool":
        args = json.dumps(record.get("args"), sort_keys=True, default=str)
        return f"tool:{record.get('tool')}:{args}:{bool(record.get('error'))}"
    if kind == "route":
        return f"route:{record.get('route')}"
    if kind == "stop":
        return f"stop:{record.get('reason')}"
    if kind == "score":
        return "score"
    return f"other:{json.dumps(record, sort_keys=True, default=str)[:200]}"


def align(
    left: list[dict[str, Any]], right: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], int | None]:
    """Rows ``{"left", "right", "same"}`` pairing the two sides step by step (a missing
    side is None), and the index of the first row that differs, None when none does."""
    head_l, head_r = left[:ALIGN_LIMIT], right[:ALIGN_LIMIT]
    sig_l = [signature(r) for r in head_l]
    sig_r = [signature(r) for r in head_r]
    rows: list[dict[str, Any]] = []
    matcher = SequenceMatcher(None, sig_l, sig_r, autojunk=False)
    for op, l1, l2, r1, r2 in matcher.get_opcodes():
        if op == "equal":
            rows += [{"left": head_l[l1 + k], "right": head_r[r1 + k], "same": True}
                     for k in range(l2 - l1)]  # fmt: skip
            continue
        # A replaced block is paired row by row, so that "step 3 read x, step 3 read y"
        # sit side by side; the longer side runs on alone.
        for k in range(max(l2 - l1, r2 - r1)):
            rows.append(
                {
                    "left": head_l[l1 + k] if l1 + k < l2 else None,
                    "right": head_r[r1 + k] if r1 + k < r2 else None,
                    "same": False,
                }
            )
    rows += [{"left": r, "right": None, "same": False} for r in left[ALIGN_LIMIT:]]
    rows += [{"left": None, "right": r, "same": False} for r in right[ALIGN_LIMIT:]]
    first = next((i for i, row in enumerate(rows) if not row["same"]), None)
    return rows, first


def step_numbers(records: list[dict[str, Any]]) -> list[int | None]:
    """Each record's step number (1-based, as an attempt's "N step(s)" counts), None for
    a record that is no step."""
    numbers: list[int | None] = []
    count = 0
    for record in records:
        is_step = record.get("type") in STEP_KINDS
        count += is_step
        numbers.append(count if is_step else None)
    return numbers


def went_wrong(records: list[dict[str, Any]], failure_class: str) -> dict[str, Any] | None:
    """The record a reader should look at first in a failed attempt (``step``: its index
    among the records), with why and where in steps (``label``: "step 2", "the stop
    after step 1"): the stop that ended a run out of budget or in error, else the first
    tool error, else the final reply (a wrong answer)."""
    found = _went_wrong(records, failure_class)
    if found is not None:
        number = step_numbers(records[: found["step"] + 1])[-1]
        if number is not None:
            found["label"] = f"step {number}"
        else:
            before = sum(r.get("type") in STEP_KINDS for r in records[: found["step"]])
            kind = records[found["step"]].get("type") or "record"
            found["label"] = f"the {kind} after step {before}" if before else f"the {kind}"
    return found


def _went_wrong(records: list[dict[str, Any]], failure_class: str) -> dict[str, Any] | None:
    for index, record in enumerate(records):
        if record.get("type") == "stop" and record.get("reason") not in (None, "finished"):
            return {"step": index, "why": f"stopped: {record.get('reason')}"
                    + (f" ({record['detail']})" if record.get("detail") else "")}  # fmt: skip
    for index, record in enumerate(records):
        if record.get("type") == "tool" and record.get("error"):
            return {"step": index, "why": f"tool {record.get('tool')} failed"}
    replies = [i for i, r in enumerate(records) if r.get("type") == "model"]
    if replies:
        why = (
            "the final answer failed the checks"
            if failure_class == "wrong_answer"
            else failure_class
        )
        return {"step": replies[-1], "why": why}
    if records:
        return {"step": len(records) - 1, "why": failure_class}
    return None
