"""The console layout of the course harness, kept exactly so scripts that read it work."""

from __future__ import annotations

from typing import Any

from agent_eval.results import AttemptResult


def header(scaffold: str, model: str, tasks: int, repeats: int) -> str:
    return f"{scaffold} x {model}: {tasks} task(s), {repeats} attempt(s) each"


ID_WIDTH = 16
"""The course's task-id column; a run with longer ids widens it to the longest."""


def id_width(task_ids: list[str]) -> int:
    """The task-id column's width for a run of these tasks."""
    return max([ID_WIDTH, *(len(task_id) for task_id in task_ids)])


def attempt_line(row: AttemptResult, width: int = ID_WIDTH) -> str:
    mark = "ok " if row.passed else "BAD"
    return (
        f"  {mark} {row.id:<{width}} r{row.attempt}  {row.steps:>2} step(s)"
        f"  {row.tokens:>7} tok  {row.seconds:6.1f}s"
    )


def attempt_detail(row: AttemptResult) -> list[str]:
    """The --verbose lines under an attempt: its answer and whatever failed."""
    answer = " ".join(row.answer.split())
    lines = [f"      answer: {answer[:200]}{'...' if len(answer) > 200 else ''}"]
    if not row.passed:
        reason = row.failure or ""
        if row.stopped and row.stopped != "finished" and row.stopped not in reason:
            reason += f"; stopped: {row.stopped}"  # which budget ran out, an echo...
        lines.append(f"      {row.failure_class}: {reason}")
    return lines


def summary_block(summary: dict[str, Any], prices: dict[str, float | None]) -> list[str]:
    """success rate, mean steps, mean tokens, mean seconds, then cost or how to get it."""
    exact = summary["exact"]
    if not summary["runs"]:
        return ["no attempts ran"]
    lines = [
        f"success rate  {exact['success_rate']:.2f}  ({summary['passed']} of {summary['runs']})",
        f"mean steps    {exact['mean_steps']:.1f}",
        f"mean tokens   {exact['mean_tokens']:.1f}",
        f"mean seconds  {exact['mean_seconds']:.1f}",
    ]
    lines += _reliability(summary)
    if summary.get("cost_per_task") is None:
        lines.append(
            "cost          not computed: give --cost-per-million PRICE "
            "(or --input-cost-per-million and --output-cost-per-million)"
        )
        return lines
    if prices.get("per_million") is not None:
        used = f"at {prices['per_million']:g} per million tokens"
    else:
        used = (
            f"at {prices.get('input_per_million') or 0:g} in / "
            f"{prices.get('output_per_million') or 0:g} out per million tokens"
        )
    lines.append(f"cost per task {summary['cost_per_task']:.6f}  ({used})")
    if summary.get("cost_unpriced_attempts"):
        lines.append(
            f"              {summary['cost_unpriced_attempts']} attempt(s) left out: "
            "they did not report prompt and completion tokens"
        )
    return lines


def _reliability(summary: dict[str, Any]) -> list[str]:
    """Usable and model rates, shown when an endpoint failed or an attempt was retried."""
    infra, retried = summary.get("infra_errors", 0), summary.get("retried_attempts", 0)
    if not infra and not retried:
        return []
    runs, passed = summary["runs"], summary["passed"]
    model = summary.get("model_success_rate")
    lines = [
        f"usable rate   {passed / runs:.2f}  ({passed} of {runs} attempts, after retries)",
        f"model rate    {model if model is not None else 'n/a'}  ({passed} of "
        f"{summary['model_runs']}; {infra} infra error(s) left out)",
    ]
    if retried:
        after = summary.get("retried_passed")
        said = f"{retried} attempt(s) were retried after an endpoint failure"
        if after is not None:  # files from before this count say only how many were retried
            said = (
                f"{passed - after} of {runs} passed at the first try; {said}, and "
                f"{after or 'none'} of them passed then"
            )
        lines.append(f"first try     {summary['first_try_success_rate']:.2f}  ({said})")
    return lines
