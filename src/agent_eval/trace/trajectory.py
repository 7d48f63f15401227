"""Name and write per-attempt trajectory files that can never leave their folder."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agent_eval.records import RESULTS_SCHEMA

UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_PART = 60


def safe_part(value: str) -> str:
    """One file-name part: only letters, digits, '.', '_' and '-', never '.' or '..'.

    Slashes, spaces and anything else become '_', so `local/answer` is `local_answer`,
    and leading dots are dropped so a part can neither climb out nor hide.
    """
    return UNSAFE.sub("_", value)[:MAX_PART].strip("_.") or "_"


def trajectory_name(stamp: str, scaffold: str, model: str, task_id: str, attempt: int) -> str:
    """`{stamp}-{scaffold}-{model}-{task_id}-r{attempt}.jsonl`, every part sanitised."""
    parts = (safe_part(stamp), safe_part(scaffold), safe_part(model), safe_part(task_id))
    return "-".join(parts) + f"-r{attempt}.jsonl"


def write_trajectory(
    folder: Path,
    name: str,
    meta: dict[str, Any],
    records: Iterable[dict[str, Any]],
    score: dict[str, Any],
    redact: Any = None,
) -> Path:
    """Write meta line, agent records and the harness's score line; return the path.

    ``redact`` maps each serialised line to its secret-free form before it is written.
    """
    path = folder / name
    if path.resolve().parent != folder.resolve():
        raise ValueError(f"trajectory name {name!r} would leave {folder}")
    lines = [{"meta": {"schema": RESULTS_SCHEMA, **meta}}, *records, {"type": "score", **score}]
    with path.open("w", encoding="utf-8") as handle:
        for record in lines:
            text = json.dumps(record, ensure_ascii=False, default=str)
            handle.write((redact(text) if redact else text) + "\n")
    return path


def read_trajectory(path: Path) -> list[dict[str, Any]]:
    """All records of a trajectory file, skipping a torn last line from a crash."""
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records
