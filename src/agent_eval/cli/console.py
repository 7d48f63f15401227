"""The console layout of the course harness, kept exactly so scripts that read it work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_eval.results import AttemptResult, describe_failure
from agent_eval.score import AT_LENGTH, MOSTLY


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


def crash_lines(row: AttemptResult, every: bool = False) -> list[str]:
    """Where the agent raised, under its BAD line: the innermost frame of its own files,
    or with ``every`` (``--debug``) each of them, outermost first."""
    frames = row.traceback or []
    return [f"        at {f.file}:{f.line} in {f.function}: {f.code}"
            for f in (frames if every else frames[-1:])]  # fmt: skip


def attempt_detail(row: AttemptResult) -> list[str]:
    """The --verbose lines under an attempt: its answer and whatever failed."""
    answer = " ".join(row.answer.split())
    lines = [f"      answer: {answer[:200]}{'...' if len(answer) > 200 else ''}"]
    if not row.passed:
        reason = describe_failure(row, numbered=False)
        stopped = row.stopped or "finished"
        # Which budget ran out, an echo...; an error says it all by itself.
        if row.error is None and stopped != "finished" and stopped not in reason:
            reason += f"; stopped: {stopped}"
        lines.append(f"      {row.failure_class}: {reason}")
    return lines


NO_PRICE = "cost not computed: pass --cost-per-million from Part 23's cost-model.py"
"""The course's line for a run without a price, word for word."""


def summary_block(
    summary: dict[str, Any], prices: dict[str, float | None], copied: list[str] | None = None
) -> list[str]:
    """The course's lines, character for character (success rate, mean steps, mean
    tokens, mean seconds, then the cost or how to get it), then agent-eval's own;
    ``copied`` names the passes flagged as copied (task r1, ...)."""
    if not summary["runs"]:
        return ["no attempts ran"]
    lines = [
        f"success rate  {summary['success_rate']:.2f}  ({summary['passed']} of {summary['runs']})",
        f"mean steps    {summary['mean_steps']}",
        f"mean tokens   {summary['mean_tokens']}",
        f"mean seconds  {summary['mean_seconds']}",
    ]
    if summary.get("cost_per_task") is None:
        lines.append(NO_PRICE)  # `run --help` tells of the separate prices
    elif summary.get("cost_per_million_tokens") is not None:
        lines.append(
            f"cost per task {summary['cost_per_task']}  "
            f"(at {summary['cost_per_million_tokens']} per million tokens, your figure)"
        )
    else:
        lines.append(
            f"cost per task {summary['cost_per_task']}  (at "
            f"{prices.get('input_per_million') or 0:g} in / "
            f"{prices.get('output_per_million') or 0:g} out per million tokens, your figures)"
        )
    if summary.get("cost_unpriced_attempts"):
        lines.append(
            f"              {summary['cost_unpriced_attempts']} attempt(s) left out: "
            "they did not report prompt and completion tokens"
        )
    return lines + _reliability(summary) + copied_lines(summary, copied or [])


def written(out: Path, trajectories: Path, labbook: Path | None) -> list[str]:
    """The course's closing lines: a blank line, where the results and trajectories
    are, and the labbook the run was recorded in."""
    lines = ["", f"results written to {out}; trajectories in {trajectories}/"]
    return lines + ([f"recorded in {labbook}"] if labbook is not None else [])


def copied_lines(summary: dict[str, Any], names: list[str]) -> list[str]:
    """The warning for passes made mostly of text copied from the task or documents."""
    flagged = summary.get("copied_passes") or 0
    if not flagged:
        return []
    which = f": {', '.join(names)}" if names else ""
    return [
        f"copied        {flagged} of {summary['passed']} pass(es) mostly copy the task or the "
        f"documents (copied_share >= {MOSTLY:g}, {AT_LENGTH}+ words){which}"
    ]


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
