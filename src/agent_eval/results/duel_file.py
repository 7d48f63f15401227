"""The duel file: what `agent-eval duel` decided, the outcomes it decided on, and what it
needs to resume. The only code that reads or writes it.

It sits next to the two sides' ordinary results files (``duel.json`` beside
``duel-a.json`` and ``duel-b.json``), which `report`, `compare` and `view` read as any run.
The duel keeps its own copy of each round's outcomes: the sequence was computed from
them, round by round, and must not change when a results file does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_eval.errors import ResultsError
from agent_eval.results.write import atomic_file
from agent_eval.score import Decision

DUEL_SCHEMA = 1
SIDES = ("a", "b")

Stop = Literal["decided", "max_repeats", "token_budget", "cost_budget", "interrupted", "running"]


class DuelRecord(BaseModel):
    """One duel, as its file holds it."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_version: int = Field(DUEL_SCHEMA, alias="schema")
    """The duel file's schema."""
    decision: Decision
    """a_better, b_better, no_difference, or undecided."""
    rounds: int
    """Rounds played: one attempt per task on each side each."""
    attempts: int
    """Attempts on both sides together."""
    difference: float | None
    """Mean over tasks of B's success minus A's, over the rounds played."""
    interval: tuple[float, float]
    """The anytime-valid confidence interval of that difference."""
    alpha: float
    """The error rate the interval allows, however often it was looked at."""
    margin: float | None
    """Differences within plus or minus this count as none; None: only a difference ends it."""
    fixed_design_attempts: int | None
    """Attempts a fixed-size design with 80% power would need, as `compare` plans it."""
    projected_rounds: int | None = None
    """Rounds in all that would likely settle an undecided duel, were later rounds alike."""
    stopped: Stop
    """Why the duel stopped, or running while it plays."""
    results: dict[str, str]
    """Each side's results file, relative to the duel file."""
    tasks: list[str]
    """The task ids, in the order of each round's outcomes."""
    passed: dict[str, list[list[int]]]
    """Per side, per round, per task: 1 when the attempt passed."""
    settings: dict[str, Any]
    """The duel's flags, secrets left out: `--resume` takes them from here."""

    def summary(self) -> dict[str, Any]:
        """What `duel --format json` prints."""
        keys = (
            "decision",
            "rounds",
            "attempts",
            "difference",
            "interval",
            "alpha",
            "margin",
            "fixed_design_attempts",
            "projected_rounds",
            "stopped",
        )
        data = self.model_dump(mode="json", include=set(keys))
        data["results"] = self.results
        return {key: data[key] for key in (*keys, "results")}

    def differences(self) -> list[list[int]]:
        """Per round, per task: B's outcome minus A's, in {-1, 0, 1}."""
        return [
            [b - a for a, b in zip(ra, rb, strict=True)]
            for ra, rb in zip(self.passed["a"], self.passed["b"], strict=True)
        ]


def side_results(duel: Path, side: str) -> Path:
    """Where a side's results file goes: ``duel.json`` -> ``duel-a.json``."""
    return duel.with_name(f"{duel.stem}-{side}{duel.suffix or '.json'}")


def write_duel(path: Path, record: DuelRecord) -> None:
    """Write the duel file atomically: a crash leaves the old one or the new one."""
    with atomic_file(path) as handle:
        text = json.dumps(record.model_dump(mode="json", by_alias=True), indent=2)
        handle.write(text.encode("utf-8") + b"\n")


def read_duel(path: Path) -> DuelRecord:
    """A duel file, validated; ResultsError naming the file when it is not one."""
    try:
        return DuelRecord.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise ResultsError(f"--resume {path}: cannot read it ({exc.strerror})") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "file"
        raise ResultsError(
            f"--resume {path}: not a duel file ({where}: {first['msg']}); give the duel's "
            f"own file, not a side's results"
        ) from None
