"""The headline every report opens with: the run's success, one figure with one interval
and the name of both, next to the budgets it was earned under (steps, tokens, time, cost)
and the authority granted (tools, writes)."""

from __future__ import annotations

from typing import Any


def _limit(spread: dict[str, Any] | None, unit: str) -> str | None:
    """'≤ 6 steps', '≤ 5-8 steps', or '≤ 6 steps on 3 of 15 tasks'; None without a limit."""
    if not spread:
        return None
    low, high = (f"{spread[key]:g}" for key in ("low", "high"))
    text = f"≤ {low} {unit}" if low == high else f"≤ {low}-{high} {unit}"
    if spread["tasks"] < spread["of"]:
        text += f" on {spread['tasks']} of {spread['of']} tasks"
    return text


def budget_terms(budgets: dict[str, Any]) -> tuple[list[str], str]:
    """The stated limits as short phrases in a fixed order, and the authority granted."""
    terms = [
        _limit(budgets.get("max_steps"), "steps"),
        _limit(budgets.get("max_tokens"), "tokens"),
        _limit(budgets.get("max_seconds"), "s"),
    ]
    cost = budgets.get("max_cost_per_task")
    if cost is not None:
        terms.append(f"≤ {cost:g} cost per task")
    if budgets.get("writes"):
        authority = "tools that write (" + ", ".join(budgets.get("tools") or []) + ")"
    else:
        authority = "read-only tools"
    return [term for term in terms if term], authority


def headline_success(summary: dict[str, Any]) -> tuple[float | None, list[float] | None]:
    """The success figure a headline gives: the attempt rate with its Wilson interval
    when each task ran once and tasks are not clustered, else the mean over tasks with
    its (cluster-robust) interval."""
    if _uses_attempt_rate(summary):
        return summary["success_rate"], summary["wilson95"]
    return summary["task_mean"], summary["task_ci95"]


def _uses_attempt_rate(summary: dict[str, Any]) -> bool:
    clustered = summary.get("cluster", {}).get("by", "none") != "none"
    return bool(summary["attempts"] == summary["tasks"] and not clustered)


def headline_figure_name(summary: dict[str, Any]) -> str:
    """Which figure of the Success table the headline gives, and its interval's kind."""
    if _uses_attempt_rate(summary):
        return "success rate, Wilson interval"
    by = summary.get("cluster", {}).get("by", "none")
    name = "mean over tasks" + ("" if by == "none" else f" clustered by {by}")
    return name + (", t-interval" if summary.get("task_ci95") is not None else "")


def headline(summary: dict[str, Any]) -> str:
    """'success 0.733 [0.610, 0.830] (mean over tasks, t-interval) at ≤ 6 steps, ≤ 0.002
    cost per task, read-only tools': the same figure and interval, to the same digits,
    as its row of the Success table."""
    value, interval = headline_success(summary)
    figure = "-" if value is None else f"{value:.3f}"
    if interval is not None:
        figure += f" [{interval[0]:.3f}, {interval[1]:.3f}]"
    figure += f" ({headline_figure_name(summary)})"
    budgets = summary.get("budgets")
    if not budgets:
        unknown = "an older results file, or another harness's run"
        return f"success {figure}; budgets not recorded ({unknown})"
    limits, authority = budget_terms(budgets)
    stated = f"at {', '.join(limits)}" if limits else "with no step, token, time or cost limit"
    return f"success {figure} {stated}, {authority}"
