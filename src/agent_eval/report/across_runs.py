"""One report across configurations: a row per run with the four numbers and cost, and
the paired verdict of every run against a baseline.

`agent-eval report A.json B.json C.json` and `agent-eval sweep` end here. Every run is
paired with the baseline (the first file, or --baseline) by task id, exactly as
`compare` pairs two runs, so the verdicts below the table are compare's verdicts.
"""

from __future__ import annotations

from typing import Any

from agent_eval.errors import ConfigError
from agent_eval.report.compare import compare_runs
from agent_eval.report.figures import run_figures
from agent_eval.report.headline import headline_success
from agent_eval.report.run_report import summarise_run
from agent_eval.results import RunResults

VERDICT_KEYS = ("difference", "ci95", "p_fixed_suite", "fixed_suite_test", "p_population",
                "suite_changed", "tasks", "figures", "verdict")  # fmt: skip
"""What each paired verdict keeps of compare's result."""


def _names(results: RunResults) -> dict[str, str]:
    """How a configuration is named: its file's stem (distinct in a sweep), its label and
    its path."""
    return {"name": results.path.stem, "label": results.label, "path": str(results.path)}


def configuration_row(results: RunResults, cluster: str = "none") -> dict[str, Any]:
    """One configuration's row: what it was, its success with interval, the four numbers."""
    summary = summarise_run(results, cluster)["summary"]
    value, interval = headline_success(summary)
    run = results.run
    return {
        **_names(results),
        "scaffold": run.scaffold,
        "model": run.model,
        "quant": run.quant,
        "engine": run.engine,
        "tasks": summary["tasks"],
        "attempts": summary["attempts"],
        "success": value,
        "success_ci95": interval,
        **run_figures(results),
        "headline": summary["headline"],
    }


def multi_report(
    runs: list[RunResults],
    *,
    baseline: RunResults | None = None,
    allow_suite_change: bool = False,
    alpha: float = 0.05,
    cluster: str = "none",
) -> dict[str, Any]:
    """The multi-configuration report: rows, and each run's verdict against the baseline."""
    if not runs:
        raise ConfigError("report: give at least one results file")
    if baseline is not None and all(r.path.resolve() != baseline.path.resolve() for r in runs):
        runs = [baseline, *runs]
    base = baseline or runs[0]
    others = [r for r in runs if r.path.resolve() != base.path.resolve()]
    verdicts = []
    for other in others:
        result = compare_runs(base, other, alpha=alpha, allow_suite_change=allow_suite_change,
                              cluster=cluster)  # fmt: skip
        verdicts.append({**_names(other), **{key: result[key] for key in VERDICT_KEYS}})
    return {
        "baseline": _names(base),
        "suite": {
            key: getattr(base.run, key) for key in ("task_set", "task_set_version", "suite_hash")
        },
        "cluster": cluster,
        "configurations": [configuration_row(r, cluster) for r in runs],
        "verdicts": verdicts,
    }
