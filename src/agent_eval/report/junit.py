"""The run report as JUnit XML: one testcase per task, for CI test dashboards."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from agent_eval.report.xml_text import xml_safe
from agent_eval.results import NOT_RECORDED, UNKNOWN_CLASS, Attempt, CheckValues, RunResults


def _checks_text(
    failed: list[Attempt], failures: list[str], shown_for: dict[CheckValues, str]
) -> str:
    """Every failed attempt's checks, one line each, for the failure body; ``shown_for``
    keeps each distinct checks' text, as rows repeat a few combinations."""
    lines = []
    for row, reason in zip(failed, failures, strict=True):
        shown = shown_for.get(row.checks)
        if shown is None:
            checks = row.check_record().model_dump()
            # A check that holds says nothing here; what failed and what was used does.
            shown = ", ".join(f"{k}={v!r}" for k, v in checks.items() if v not in (None, [], True))
            shown_for[row.checks] = shown
        lines.append(f"{reason} [{row.failure_class}] checks: {shown}")
    return "\n".join(lines)


def render_junit(results: RunResults, report: dict[str, Any]) -> str:
    """JUnit XML for a run: a task fails when any of its attempts failed."""
    s = report["summary"]
    tasks = results.tasks
    failing = [t for t in tasks if t.passes < t.attempts]
    suite = ET.Element(
        "testsuite",
        {
            "name": f"{results.run.task_set} {results.run.task_set_version}",
            "tests": str(len(tasks)),
            "failures": str(len(failing)),
            "errors": "0",
            "time": f"{sum(r.seconds for r in results.rows):.3f}",
        },
    )
    properties = ET.SubElement(suite, "properties")
    run = results.run
    for key, value in (("scaffold", run.scaffold), ("model", run.model),
                       ("suite_hash", run.suite_hash), ("run_id", run.run_id)):  # fmt: skip
        shown = NOT_RECORDED if value is None else str(value)  # a course file has no hash
        ET.SubElement(properties, "property", {"name": key, "value": shown})
    ET.SubElement(properties, "property", {"name": "success_rate", "value": f"{s['success_rate']}"})
    copied = s["copied_passes"]
    ET.SubElement(properties, "property", {"name": "copied_passes", "value": str(len(copied))})
    shown_for: dict[CheckValues, str] = {}
    for task, view in zip(tasks, report["per_task"], strict=True):
        case = ET.SubElement(
            suite,
            "testcase",
            {
                "classname": task.category,
                "name": task.task_id,
                "time": f"{sum(r.seconds for r in task.rows):.3f}",
            },
        )
        if task.passes < task.attempts:
            failed = [r for r in task.rows if not r.passed]
            failures = view["failures"]  # each failed attempt's reason, in this order
            failure = ET.SubElement(
                case,
                "failure",
                {
                    "message": f"{len(failed)} of {task.attempts} attempt(s) failed: "
                    + "; ".join(map(str, failures)),
                    "type": ",".join(sorted({r.failure_class or UNKNOWN_CLASS for r in failed})),
                },
            )
            failure.text = _checks_text(failed, failures, shown_for)
        flagged = [c for c in copied if c["task_id"] == task.task_id]
        if flagged:  # a pass the checks count, flagged for a person to look at
            out = ET.SubElement(case, "system-out")
            out.text = "copied: " + ", ".join(
                f"r{c['attempt']} copied_share {c['copied_share']:.2f}" for c in flagged
            )
    ET.indent(suite)
    body = xml_safe(ET.tostring(suite, encoding="unicode"))  # an agent's error may hold ESC
    return f'<?xml version="1.0" encoding="utf-8"?>\n{body}\n'
