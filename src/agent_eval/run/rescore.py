"""Score saved attempts again after a suite change, without running the agent.

Checks are pure functions of the task and what the attempt recorded (answer, steps,
tokens, seconds, tools used), so a rescore of an unchanged suite gives the same verdicts.
Attempts that never produced a reply (agent or infrastructure errors) keep their class.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agent_eval.errors import ResultsError
from agent_eval.records import AttemptResult
from agent_eval.run.outputs import write_json_atomic
from agent_eval.score.checks import classify, score_attempt
from agent_eval.score.summary import per_task, summarise
from agent_eval.suite import load_suite

KEEP = ("agent_error",)
"""Classes with no reply to score: the agent crashed or misbehaved."""


@dataclass(frozen=True)
class Rescored:
    """The rescored document and the lines that tell the user what changed."""

    document: dict[str, Any]
    lines: list[str]
    all_passed: bool


def load_results(path: Path) -> dict[str, Any]:
    """A results file's document, or ResultsError naming the file and the fix."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultsError(f"results {path}: no such file; give the --out of a run") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ResultsError(f"results {path}: not a JSON results file ({exc})") from None
    if not isinstance(document, dict) or not {"run", "results"} <= document.keys():
        raise ResultsError(f"results {path}: lacks 'run' and 'results'; is it a run's --out?")
    return document


def rescore(path: Path, suite_spec: str, out: Path | None) -> Rescored:
    """Rescore every attempt of ``path`` against ``suite_spec``; write to ``out`` if given."""
    document = load_results(path)
    loaded = load_suite(suite_spec)
    tasks = {task.id: task for task in loaded.suite.tasks}
    try:
        rows = [AttemptResult.model_validate(row) for row in document["results"]]
    except ValidationError as exc:
        raise ResultsError(f"results {path}: a row does not validate ({exc.errors()[0]})") from None
    lines: list[str] = []
    rescored = []
    for row in rows:
        task = tasks.get(row.task_id)
        if task is None:
            lines.append(f"  skip {row.task_id} r{row.attempt}: not in suite {loaded.suite.name}")
            continue
        if row.failure_class in KEEP:
            rescored.append(row)
            continue
        checks = score_attempt(
            task,
            row.answer,
            row.steps,
            row.checks.tools_used,
            row.tokens,
            row.seconds,
            row.checks.state,  # the world is gone; its recorded verdicts stand
        )
        new = row.model_copy(
            update={
                "checks": checks,
                "passed": checks.passed,
                "failure_class": classify(checks, row.stopped),
                "category": task.category,
            }
        )
        if new.passed != row.passed:
            was, now = ("ok", "BAD") if row.passed else ("BAD", "ok")
            lines.append(f"  {row.task_id:<16} r{row.attempt}  {was} -> {now}")
        rescored.append(new)
    run = dict(document["run"])
    prices = run.get("prices") or {}
    run.update(
        task_set=loaded.suite.name,
        task_set_version=loaded.suite.version,
        suite_hash=loaded.hash,
        summary=summarise(rescored, prices),
        rescored_from=str(path),
    )
    new_document = {
        **document,
        "run": run,
        "per_task": per_task(rescored),
        "results": [row.model_dump(mode="json") for row in rescored],
    }
    summary = run["summary"]
    changed = sum(1 for line in lines if "->" in line)
    lines.append(
        f"rescored {len(rescored)} attempt(s) against {loaded.suite.name} {loaded.suite.version}: "
        f"{changed} verdict(s) changed, success rate {summary['success_rate']}"
    )
    if out is not None:
        write_json_atomic(out, new_document)
        lines.append(f"written to {out}")
    all_passed = bool(rescored) and all(row.passed for row in rescored)
    return Rescored(new_document, lines, all_passed)
