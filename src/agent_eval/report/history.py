"""The labbook, or a set of saved runs of any harness, as a history of runs, with a loud
flag on suites changed without a bump.

A labbook holds one JSON line per run (the results file's ``run`` object), read by
agent_eval.results; a damaged line is skipped and named there.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from agent_eval.errors import AgentEvalError
from agent_eval.interop import load_runs, run_paths
from agent_eval.report.text import fmt, fmt_interval, render_tables, short_hash
from agent_eval.results import RunHead, read_labbook
from agent_eval.score import stats


def _entry(run: RunHead) -> dict[str, Any]:
    summary = run.summary
    attempts = passed = None
    if summary is not None and 0 <= summary.passed <= summary.runs:
        attempts, passed = summary.runs, summary.passed
    return {
        "date": run.started_at or run.date,
        "run_id": run.run_id,
        "scaffold": run.scaffold,
        "model": run.model,
        "quant": run.quant,
        "suite": run.task_set,
        "suite_version": run.task_set_version,
        "suite_hash": run.suite_hash,
        "repeats": run.repeats,
        "attempts": attempts,
        "passed": passed,
        "success_rate": passed / attempts if attempts and passed is not None else None,
        "wilson95": (
            None
            if attempts is None or passed is None
            else list(stats.wilson_interval(passed, attempts))
        ),
        "total_tokens": summary.total_tokens if summary else None,
        "mean_tokens": summary.mean_tokens if summary else None,
        "splits": list(run.splits or []),
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


DEFAULT_MAX_TEST_LOOKS = 3
"""After this many evaluations of one test split, its numbers have been tuned against."""


def test_looks(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (suite, version), the runs that evaluated its test split: every look at the
    held-out tasks since the version last changed."""
    seen: dict[tuple[str, str], list[str]] = {}
    for run in runs:
        if "test" in run["splits"]:
            seen.setdefault((run["suite"], run["suite_version"]), []).append(run["run_id"])
    return [{"suite": suite, "version": version, "looks": len(ids), "run_ids": ids}
            for (suite, version), ids in seen.items()]  # fmt: skip


def overlooked(
    history: dict[str, Any], max_looks: int, suite: tuple[str, str] | None = None
) -> list[str]:
    """A warning for each test split evaluated more than ``max_looks`` times; only for
    ``suite`` (name, version) when given."""
    return [
        f"the test split of {look['suite']} {look['version']} has been evaluated "
        f"{look['looks']} times since that version (more than {max_looks}); its numbers "
        "have been tuned against: report them as dev figures, and bump the version with "
        "fresh held-out tasks"
        for look in history["test_looks"]
        if look["looks"] > max_looks and suite in (None, (look["suite"], look["version"]))
    ]


def read_history(path: str | Path) -> dict[str, Any]:
    """``{"runs", "problems", "suite_changes", "test_looks"}``, runs oldest first.

    Lines of every shape are listed, the course harness's too; a run that recorded no
    suite hash cannot show a suite change, and shows its hash as not recorded.
    """
    labbook = read_labbook(path)
    return _history(str(labbook.path), labbook.runs, list(labbook.problems))


def history_of_runs(paths: Sequence[str | Path]) -> dict[str, Any]:
    """The history of saved runs rather than of a labbook: results files, Inspect AI logs,
    ATIF folders and Harbor jobs, each path a run or a folder of them; a file that cannot
    be read is named among the problems."""
    heads: list[RunHead] = []
    problems: list[str] = []
    for given in paths:
        for path in run_paths(Path(given)):
            try:
                heads += [run.run for run in load_runs(path)]
            except AgentEvalError as exc:
                problems.append(str(exc))
    return _history(", ".join(str(p) for p in paths), heads, problems)


def _history(source: str, heads: Sequence[RunHead], problems: list[str]) -> dict[str, Any]:
    runs = [_entry(run) for run in heads]
    # ISO-8601 dates sort as text; a run without a date keeps its place at the start.
    runs.sort(key=lambda r: r["date"] if isinstance(r["date"], str) else "")
    return {
        "labbook": source,
        "runs": runs,
        "problems": problems,
        "suite_changes": suite_changes([run for run in runs if run["suite_hash"] is not None]),
        "test_looks": test_looks(runs),
    }


def render_history_text(
    history: dict[str, Any], width: int = 120, max_looks: int = DEFAULT_MAX_TEST_LOOKS
) -> str:
    """The runs over time as a table, with warnings first so that they are seen."""
    items: list[Table | str] = [f"WARNING: {line}" for line in overlooked(history, max_looks)]
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
