"""The labbook as a history of runs, with a loud flag on suites changed without a bump.

A labbook holds one JSON line per run (the results file's ``run`` object). A damaged
line is skipped and named, never fatal: one torn append must not hide a year of runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.table import Table

from agent_eval.errors import ResultsError
from agent_eval.report.text import fmt, fmt_interval, render_tables, short_hash
from agent_eval.score import stats

NEEDED = ("run_id", "scaffold", "model", "task_set", "task_set_version", "suite_hash")
"""Keys a labbook line must carry to be listed."""


def _entry(run: dict[str, Any]) -> dict[str, Any]:
    raw = run.get("summary")
    summary: dict[str, Any] = raw if isinstance(raw, dict) else {}
    attempts, passed = summary.get("runs"), summary.get("passed")
    counted = isinstance(attempts, int) and isinstance(passed, int) and 0 <= passed <= attempts
    return {
        "date": run.get("date"),
        "run_id": run["run_id"],
        "scaffold": run["scaffold"],
        "model": run["model"],
        "quant": run.get("quant"),
        "suite": run["task_set"],
        "suite_version": run["task_set_version"],
        "suite_hash": run["suite_hash"],
        "repeats": run.get("repeats"),
        "attempts": attempts if counted else None,
        "passed": passed if counted else None,
        "success_rate": passed / attempts if counted and attempts else None,
        "wilson95": (
            list(stats.wilson_interval(passed, attempts))
            if isinstance(attempts, int) and isinstance(passed, int) and counted
            else None
        ),
        "total_tokens": summary.get("total_tokens"),
        "mean_tokens": summary.get("mean_tokens"),
    }


def suite_changes(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each (suite, version) seen with more than one content hash, with the runs per hash."""
    seen: dict[tuple[str, str], dict[str, list[str]]] = {}
    for run in runs:
        hashes = seen.setdefault((run["suite"], run["suite_version"]), {})
        hashes.setdefault(run["suite_hash"], []).append(run["run_id"])
    return [
        {"suite": suite, "version": version, "hashes": hashes}
        for (suite, version), hashes in seen.items()
        if len(hashes) > 1
    ]


def read_history(path: str | Path) -> dict[str, Any]:
    """``{"runs": [...], "problems": [...], "suite_changes": [...]}``, runs oldest first."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
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
            run = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"line {number}: not valid JSON ({exc.msg}); skipped")
            continue
        missing = [
            k for k in NEEDED if not isinstance(run, dict) or not isinstance(run.get(k), str)
        ]
        if missing:
            problems.append(
                f"line {number}: not a run record (missing {', '.join(missing)}); skipped"
            )
            continue
        runs.append(_entry(run))
    # ISO-8601 dates sort as text; a run without a date keeps its place at the start.
    runs.sort(key=lambda r: r["date"] if isinstance(r["date"], str) else "")
    return {
        "labbook": str(path),
        "runs": runs,
        "problems": problems,
        "suite_changes": suite_changes(runs),
    }


def render_history_text(history: dict[str, Any], width: int = 120) -> str:
    """The runs over time as a table, with warnings first so that they are seen."""
    items: list[Table | str] = []
    for change in history["suite_changes"]:
        parts = "; ".join(
            f"{short_hash(h)} in {', '.join(ids)}" for h, ids in change["hashes"].items()
        )
        items.append(
            f"WARNING: suite {change['suite']} {change['version']} changed content "
            f"without a version bump: {parts}. Results across these hashes are not "
            "comparable; bump the suite version whenever tasks change."
        )
    items += [f"WARNING: {history['labbook']} {problem}" for problem in history["problems"]]
    table = Table(
        title=f"{len(history['runs'])} run(s) in {history['labbook']}", title_justify="left"
    )
    for column in (
        "date",
        "scaffold",
        "model",
        "quant",
        "suite",
        "success",
        "95% interval",
        "tokens",
    ):
        table.add_column(column, no_wrap=column in ("date", "success", "95% interval"))
    for run in history["runs"]:
        counts = "" if run["attempts"] is None else f" ({run['passed']}/{run['attempts']})"
        table.add_row(
            str(run["date"] or "-")[:16].replace("T", " "),
            run["scaffold"],
            run["model"],
            run["quant"] or "-",
            f"{run['suite']} {run['suite_version']}",
            fmt(run["success_rate"]) + counts,
            fmt_interval(run["wilson95"]),
            "-" if run["total_tokens"] is None else str(run["total_tokens"]),
        )
    items.append(table)
    return render_tables(items, width)
