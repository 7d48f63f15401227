"""Name and write per-attempt trajectory files that can never leave their folder."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agent_eval.records import RESULTS_SCHEMA

UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_PART = 60
_encode = json.JSONEncoder(ensure_ascii=False, default=str).encode


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


def trajectory_text(
    meta: dict[str, Any], records: Iterable[dict[str, Any]], score: dict[str, Any]
) -> str:
    """A trajectory file's text: the meta line, the agent's records, the score line."""
    lines = [{"meta": {"schema": RESULTS_SCHEMA, **meta}}, *records, {"type": "score", **score}]
    return "".join(_encode(record) + "\n" for record in lines)


def write_new_file(folder: Path, name: str, text: str) -> Path:
    """Write ``text`` to ``folder/name``; return the path.

    ``name`` must be one plain file name (see trajectory_name), and the file is opened
    without following a symbolic link, so the write cannot land outside ``folder``.
    """
    if "/" in name or name in {"", ".", ".."}:
        raise ValueError(f"file name {name!r} would leave {folder}")
    path = folder / name
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
    with open(os.open(path, flags, 0o644), "w", encoding="utf-8") as handle:
        handle.write(text)
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


def trajectory_path(results_file: Path, trajectory_file: str) -> Path:
    """Where a results row's ``trajectory_file`` is: relative to the results file's
    folder, as it is written, unless it is absolute."""
    return results_file.parent / trajectory_file
