"""The statistics of one run as a plain dict: the JSON report, and the source of every
other format, so that text, Markdown, JUnit and HTML never disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_eval.report.figures import task_figure
from agent_eval.report.headline import headline
from agent_eval.results import (
    UNKNOWN_CLASS,
    RunResults,
    TaskOutcome,
    TaskSummary,
    tally,
)
from agent_eval.score import cluster_labels, clustered_mean, is_copied_pass, stats

RUN_KEYS = (
    "run_id",
    "lab",
    "scaffold",
    "model",
    "router_model",
    "quant",
    "engine",
    "task_set",
    "task_set_version",
    "suite_hash",
    "repeats",
    "date",
    "host",
    "harness_version",
)
"""Run metadata repeated in the report so that it names what it describes."""


def _rate(passed: int, attempts: int) -> dict[str, Any]:
    return {"rate": passed / attempts if attempts else None, "passed": passed, "attempts": attempts}


def _interval(est: stats.MeanEstimate) -> list[float] | None:
    return None if est.lo is None or est.hi is None else [est.lo, est.hi]


def _pass_k(counts: list[stats.TaskCount]) -> tuple[dict[str, Any], dict[str, Any]]:
    """pass@k and pass^k means and SEs over tasks, for k up to the most attempts."""
    top = max((n for n, _ in counts), default=0)
    at: dict[str, Any] = {}
    hat: dict[str, Any] = {}
    for k in range(1, top + 1):
        at[str(k)] = stats.pass_at_k_over_tasks(counts, k)
        hat[str(k)] = stats.pass_hat_k_over_tasks(counts, k)
    return at, hat


def task_row(
    task: TaskOutcome, course: TaskSummary, prices: dict[str, float | None]
) -> dict[str, Any]:
    """One task's figures: the course's per-task keys in its order, as the results file's
    one summary computes them (``course``), then agent-eval's (the rate with its interval,
    pass@k, pass^k, means and every failure in words)."""
    n, c = task.attempts, task.passes
    classes: dict[str, int] = {}
    for row in task.rows:
        name = row.failure_class or UNKNOWN_CLASS
        classes[name] = classes.get(name, 0) + 1
    return {
        **course.model_dump(mode="json", exclude={"pass_hat_k"}),
        "task_id": task.task_id,
        "exact_success_rate": task.rate,
        "wilson95": list(stats.wilson_interval(c, n)),
        "pass_at_k": stats.pass_at_every_k(n, c),
        "pass_hat_k": course.pass_hat_k,
        "unstable": 0 < c < n,
        "failure_classes": dict(sorted(classes.items())),
        "mean_steps": task_figure(task, "steps", prices),
        "min_steps": course.steps_min,
        "max_steps": course.steps_max,
        "mean_tokens": task_figure(task, "tokens", prices),
        "mean_seconds": task_figure(task, "seconds", prices),
        "failures": [row.failure for row in task.rows if not row.passed],
    }


def task_clusters(tasks: Sequence[TaskOutcome], by: str) -> list[str]:
    """Each task's cluster label under ``--cluster by`` (score/clusters.py)."""
    return cluster_labels(
        [t.task_id for t in tasks], by,
        {t.task_id: t.rows[0].group for t in tasks}, {t.task_id: t.category for t in tasks},
    )  # fmt: skip


def summarise_run(results: RunResults, cluster: str = "none") -> dict[str, Any]:
    """``{"summary": {...}, "per_task": [...]}`` for one run; the report JSON contract.

    The course's figures (counts, means, failure classes, cost) come from the one summary
    of a results file (results.summary), unrounded; the statistics are added here.
    ``cluster`` (none, group, category) makes the mean over tasks' SE and interval
    cluster-robust; with none every task is its own cluster.
    """
    tasks = results.tasks
    rows = results.rows
    # Tasks in first-seen order and each task's attempts in order, as ``tasks`` has them,
    # so that the per-task view's first failure is the first by attempt number.
    counted = tally([row for task in tasks for row in task.rows], results.prices)
    figures = counted.summary()
    exact = figures.exact or {}
    counts = [(t.attempts, t.passes) for t in tasks]
    attempts, passed = counted.runs, counted.passed
    task_est = stats.mean_estimate(stats.task_means(counts), bounds=(0, 1), what="pass rate")
    clusters = len(tasks)
    if cluster != "none":
        labels = task_clusters(tasks, cluster)
        found = clustered_mean([t.rate for t in tasks], labels, bounds=(0, 1))
        task_est, clusters = found.estimate, found.clusters
    at, hat = _pass_k(counts)
    split = stats.variance_split(counts)
    within, between = (
        (split.within, split.between) if isinstance(split, stats.VarianceSplit) else (None, None)
    )
    roles: dict[str, int] = {}
    for row in rows:
        for role, tokens in (row.roles or {}).items():
            roles[role] = roles.get(role, 0) + tokens
    run = results.run
    priced = any(v is not None for v in results.prices.values())
    cost = counted.cost()
    summary: dict[str, Any] = {
        "run": {key: getattr(run, key) for key in RUN_KEYS},
        "interrupted": bool(run.interrupted),
        "tasks": len(tasks),
        "attempts": attempts,
        "passed": passed,
        "success_rate": exact.get("success_rate"),
        "wilson95": list(stats.wilson_interval(passed, attempts)),
        "task_mean": task_est.mean,
        "task_se": task_est.se,
        "task_ci95": _interval(task_est),
        "cluster": {"by": cluster, "clusters": clusters},
        "pass_at_k": {k: e.mean for k, e in at.items()},
        "pass_at_k_se": {k: e.se for k, e in at.items()},
        "pass_hat_k": {k: e.mean for k, e in hat.items()},
        "pass_hat_k_se": {k: e.se for k, e in hat.items()},
        "within_task_var": within,
        "between_task_var": between,
        "unstable_tasks": [t.task_id for t in tasks if 0 < t.passes < t.attempts],
        "changed_files": [
            {"task_id": r.id, "attempt": r.attempt, "files": list(r.changed_files)}
            for r in rows
            if r.changed_files
        ],
        "categories": _categories(tasks),
        "failure_classes": figures.failure_classes,
        "usable_success": _rate(passed, attempts),
        "model_success": _rate(passed, attempts - counted.infra),
        "infra_retries": run.limits.max_infra_retries if run.limits else None,
        "mean_steps": exact.get("mean_steps"),
        "mean_seconds": exact.get("mean_seconds"),
        "total_tokens": counted.tokens,
        "mean_tokens": exact.get("mean_tokens"),
        "tokens_by_role": dict(sorted(roles.items())) or None,
        "cost": ({**cost, "prices": results.prices} if priced else None),
        "not_estimable": _not_estimable(task_est, at, hat, split),
        "budgets": run.budgets.model_dump(mode="json") if run.budgets else None,
        "copied_passes": [
            {"task_id": r.id, "attempt": r.attempt, "copied_share": r.copied_share}
            for r in rows
            if is_copied_pass(r.passed, r.answer, r.copied_share)
        ],
        "cited_attempts": sum(1 for r in rows if r.citations),
        "bad_citation_attempts": sum(1 for r in rows if r.checks.bad_citations),
    }
    summary["headline"] = headline(summary)
    return {
        "summary": summary,
        "per_task": [
            task_row(task, course, results.prices)
            for task, course in zip(tasks, counted.per_task(), strict=True)
        ],
    }


def _not_estimable(
    task_est: stats.MeanEstimate,
    at: dict[str, stats.MeanEstimate],
    hat: dict[str, stats.MeanEstimate],
    split: stats.VarianceSplit | stats.NotEstimable,
) -> dict[str, Any]:
    """Why each figure of the summary that is null could not be estimated."""
    why: dict[str, Any] = {}
    if task_est.why_not is not None:
        why["task_se"] = why["task_ci95"] = task_est.why_not
    for key, estimates in (("pass_at_k_se", at), ("pass_hat_k_se", hat)):
        reasons = {k: e.why_not for k, e in estimates.items() if e.why_not is not None}
        if reasons:
            why[key] = reasons
    if isinstance(split, stats.NotEstimable):
        why["within_task_var"] = why["between_task_var"] = split.reason
    return why


def _categories(tasks: Sequence[TaskOutcome]) -> dict[str, dict[str, Any]]:
    """Per category: tasks, attempts, pass rate with Wilson, and the mean over its tasks."""
    grouped: dict[str, list[TaskOutcome]] = {}
    for task in tasks:
        grouped.setdefault(task.category, []).append(task)
    view = {}
    for name, members in sorted(grouped.items()):
        attempts = sum(t.attempts for t in members)
        passed = sum(t.passes for t in members)
        est = stats.mean_estimate([t.rate for t in members], bounds=(0, 1), what="pass rate")
        view[name] = {
            "tasks": len(members),
            "attempts": attempts,
            "passed": passed,
            "success_rate": passed / attempts if attempts else None,
            "wilson95": list(stats.wilson_interval(passed, attempts)),
            "task_mean": est.mean,
            "task_ci95": _interval(est),
            "not_estimable": {} if est.why_not is None else {"task_ci95": est.why_not},
        }
    return view
