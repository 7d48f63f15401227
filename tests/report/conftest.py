"""Build results files in the runner's shape, so reports are tested on files alone."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

Outcome = bool | str
"""True/False for passed/wrong_answer, or a failure class name."""

MakeResults = Callable[..., Path]


def attempt_row(
    task_id: str, category: str, attempt: int, outcome: Outcome, **extra: Any
) -> dict[str, Any]:
    """One attempt row as AttemptResult expects it."""
    failure = ("passed" if outcome else "wrong_answer") if isinstance(outcome, bool) else outcome
    passed = failure == "passed"
    row: dict[str, Any] = {
        "id": task_id,
        "category": category,
        "attempt": attempt,
        "answer": f"answer to {task_id}",
        "steps": 3 + attempt,
        "tokens": 1000 + 100 * attempt,
        "prompt_tokens": 800,
        "completion_tokens": 200 + 100 * attempt,
        "seconds": 1.5,
        "stopped": "finished",
        "checks": {
            "missing": ["4000"] if failure == "wrong_answer" else [],
            "forbidden": [],
            "regex_ok": True,
            "tool_ok": True,
            "within_steps": True,
            "tools_used": ["search_documents"],
            "passed": passed,
        },
        "trajectory_file": None,
        "failure_class": failure,
        "error": None if failure in ("passed", "wrong_answer") else f"{failure} happened",
        "roles": None,
    }
    row.update(extra)
    return row


def results_document(
    outcomes: dict[str, Sequence[Outcome]],
    *,
    suite_hash: str = "a" * 64,
    model: str = "local/chat",
    scaffold: str = "builtin:minimal",
    categories: dict[str, str] | None = None,
    prices: dict[str, float | None] | None = None,
    row_extra: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A whole results document: per task, the outcome of each attempt in order."""
    rows = []
    for task_id, attempts in outcomes.items():
        category = (categories or {}).get(task_id, "retrieval")
        for index, outcome in enumerate(attempts, start=1):
            rows.append(
                attempt_row(task_id, category, index, outcome, **(row_extra or {}).get(task_id, {}))
            )
    repeats = max((len(a) for a in outcomes.values()), default=0)
    passed = sum(r["checks"]["passed"] for r in rows)
    return {
        "schema": 2,
        "run": {
            "lab": None,
            "run_id": f"run-{model}",
            "scaffold": scaffold,
            "agent_entry_point": scaffold,
            "task_set": "part26",
            "task_set_version": "1.0",
            "model": model,
            "router_model": None,
            "quant": None,
            "engine": None,
            "engine_version": None,
            "base_url": None,
            "repeats": repeats,
            "host": "testhost",
            "date": "2025-01-01",
            "wall_seconds": 1.0,
            "notes": None,
            "started_at": "2025-01-01T00:00:00+00:00",
            "suite_hash": suite_hash,
            "harness_version": "0.1.0",
            "concurrency": 1,
            "limits": {"max_infra_retries": 2},
            "prices": prices
            or {"per_million": None, "input_per_million": None, "output_per_million": None},
            "summary": {
                "runs": len(rows),
                "passed": passed,
                "success_rate": round(passed / len(rows), 3) if rows else None,
            },
        },
        # Deliberately wrong: reports must recompute per-task figures from the rows.
        "per_task": [
            {"id": t, "attempts": 99, "successes": 99, "success_rate": 1.0} for t in outcomes
        ],
        "results": rows,
    }


@pytest.fixture
def make_results(tmp_path: Path) -> MakeResults:
    """Write a results file from per-task outcomes and return its path."""

    def make(outcomes: dict[str, Sequence[Outcome]], name: str = "r.json", **kwargs: Any) -> Path:
        path = tmp_path / name
        path.write_text(json.dumps(results_document(outcomes, **kwargs)), encoding="utf-8")
        return path

    return make


CliResult = tuple[int, str, str]
"""(exit code, stdout, stderr) of one agent-eval invocation."""


@pytest.fixture
def agent_eval(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Run the real console entry point in-process and capture what a user would see."""
    from agent_eval.cli import main

    def invoke(*args: str | Path) -> CliResult:
        capsys.readouterr()
        with pytest.raises(SystemExit) as exit_info:
            main([str(a) for a in args])
        out, err = capsys.readouterr()
        code = exit_info.value.code
        return (code if isinstance(code, int) else 1), out, err

    return invoke
