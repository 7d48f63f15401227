"""Read a labbook: one JSON line per run, the results file's ``run`` object.

Lines of every shape are read: agent-eval's, older ones, and the course harness's
(no ``suite_hash``). A damaged line is skipped and named, never fatal: one torn append
must not hide a year of runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from agent_eval.errors import ResultsError
from agent_eval.results.legacy import upgrade_run
from agent_eval.results.schema import RunHead


@dataclass(frozen=True)
class Labbook:
    """The runs of a labbook in file order, and the lines that could not be read."""

    path: Path
    """The labbook file."""
    runs: tuple[RunHead, ...]
    """One validated run per readable line."""
    problems: tuple[str, ...]
    """One line per skipped line: its number and why."""


def read_labbook(path: str | Path) -> Labbook:
    """Every run recorded in the labbook at ``path``; ResultsError when it cannot be read."""
    path = Path(path)
    try:
        # "\n" alone ends a line: splitlines() would also cut at U+2028, U+0085 and the
        # like, which a line written with ensure_ascii=False holds as text
        lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    except FileNotFoundError:
        raise ResultsError(
            f"labbook {path}: not found (runs append to it with 'agent-eval run --labbook FILE')"
        ) from None
    except OSError as exc:
        raise ResultsError(f"labbook {path}: cannot be read ({exc})") from None
    runs, problems = [], []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"line {number}: not valid JSON ({exc.msg}); skipped")
            continue
        try:
            runs.append(RunHead.model_validate(upgrade_run(raw)))
        except ValidationError as exc:
            problems.append(f"line {number}: not a run record ({_why(exc)}); skipped")
    return Labbook(path, tuple(runs), tuple(problems))


def _why(exc: ValidationError) -> str:
    """What makes a line no run record: the keys it lacks, or its first wrong value."""
    errors = exc.errors()
    if errors[0]["type"] == "model_type":
        return "not a JSON object"
    missing = [str(e["loc"][0]) for e in errors if e["type"] == "missing" and len(e["loc"]) == 1]
    if missing:
        return "missing " + ", ".join(missing)
    first = errors[0]
    return ".".join(str(part) for part in first["loc"]) + ": " + first["msg"]
