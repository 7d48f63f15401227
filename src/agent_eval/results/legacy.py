"""Older results shapes brought to the current one, so that old numbers carry over.

Three shapes are read besides the current one: agent-eval's schema 1 (rows keyed
``task_id``, ``checks.forbidden_found``, null for a check the task does not ask for,
``date`` a full timestamp), schema 2 (per-task ``min_steps``... and ``first_failure`` a
sentence) and the course harness's own files and labbook lines (its keys, no ``schema``,
no ``suite_hash`` and no failure class). A figure such a file does not hold stays
missing (None); only the failure class is derived, from the checks, where they tell it.
"""

from __future__ import annotations

from typing import Any

from agent_eval.records import RESULTS_SCHEMA
from agent_eval.score import BUDGET_STOPS

COURSE = None
"""The ``schema`` of a course-harness file: it writes none."""
KNOWN_SCHEMAS = (1, 2, RESULTS_SCHEMA, COURSE)
"""Shapes this agent-eval reads."""

RAISED = "entry point raised "
"""How the course's ``stopped`` begins when the agent raised."""
_HOLD_WHEN_ABSENT = ("regex_ok", "tool_ok", "within_steps", "within_tokens", "within_seconds")


def upgrade_row(raw: Any, schema: int | None) -> Any:
    """An attempt row of ``schema`` in the current shape; anything not a row is returned
    as it is, for validation to name."""
    if schema in (2, RESULTS_SCHEMA) or not isinstance(raw, dict):
        return raw  # schema 2's rows have the current keys
    row = dict(raw)
    checks = row.get("checks")
    if isinstance(checks, dict):
        checks = dict(checks)
        if "forbidden_found" in checks:
            checks["forbidden"] = checks.pop("forbidden_found")
        for key in _HOLD_WHEN_ABSENT:
            if key in checks and checks[key] is None:
                checks[key] = True  # schema 1's "no such check", the course's True
        row["checks"] = checks
    if schema == 1:
        if "task_id" in row:
            row["id"] = row.pop("task_id")
        row.pop("passed", None)  # checks.passed holds the verdict
    elif "failure_class" not in row and isinstance(checks, dict):
        row["failure_class"] = derive_failure_class(checks, row.get("stopped"))
    return row


def derive_failure_class(checks: dict[str, Any], stopped: Any) -> str | None:
    """The failure class a course-harness row's checks and stop reason tell, or None.

    An attempt whose failed checks do not say why (passed false, every check holding)
    has no class: guessing one would put a number in the report the file never held.
    """
    if checks.get("passed") is True:
        return "passed"
    if stopped == "model_error":
        return "infra_error"
    if stopped == "agent_error" or (isinstance(stopped, str) and stopped.startswith(RAISED)):
        return "agent_error"
    limits = ("within_steps", "within_tokens", "within_seconds")
    if stopped in BUDGET_STOPS or any(checks.get(key) is False for key in limits):
        return "over_budget"
    failed = checks.get("missing") or checks.get("forbidden")
    if failed or checks.get("regex_ok") is False or checks.get("tool_ok") is False:
        return "wrong_answer"
    return None


def upgrade_run(raw: Any) -> Any:
    """A ``run`` object (results head or labbook line) of any shape in the current one:
    schema 1 wrote the full timestamp under ``date``, where the course writes the day;
    the course writes a null version for a suite that names none, and its one price only
    in the summary, where ``prices`` is what every reader takes a run's price from."""
    if not isinstance(raw, dict):
        return raw
    run = dict(raw)
    summary = run.get("summary")
    price = summary.get("cost_per_million_tokens") if isinstance(summary, dict) else None
    if run.get("prices") is None and type(price) in (int, float):
        run["prices"] = {"per_million": price}
    date = run.get("date")
    if isinstance(date, str) and len(date) > 10 and "started_at" not in run:
        run.update(started_at=date, date=date[:10])
    if "task_set_version" in run and run["task_set_version"] is None:
        run["task_set_version"] = NOT_RECORDED
    return run


NOT_RECORDED = "not recorded"
"""What stands for a figure the file does not hold, where a text is needed."""

_OLD_TASK_KEYS = {"task_id": "id", "min_steps": "steps_min", "max_steps": "steps_max",
                  "min_tokens": "tokens_min", "max_tokens": "tokens_max"}  # fmt: skip


def upgrade_task(raw: Any, schema: int | None) -> Any:
    """A per-task entry of ``schema`` in the current shape: schemas 1 and 2 named the
    extremes ``min_steps``... and gave the first failure as a sentence, which moves to
    ``first_failure_reason`` (their checks object was never recorded)."""
    if schema not in (1, 2) or not isinstance(raw, dict):
        return raw
    task = {_OLD_TASK_KEYS.get(key, key): value for key, value in raw.items()}
    if isinstance(task.get("first_failure"), str):
        task["first_failure_reason"] = task.pop("first_failure")
    return task
