"""The console layout of the course harness, kept exactly so scripts that read it work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_eval.redaction import Redactor, ShownStream
from agent_eval.results import AttemptResult, describe_failure
from agent_eval.score import AT_LENGTH, MOSTLY


def header(scaffold: str, model: str, tasks: int, repeats: int) -> str:
    return f"{scaffold} x {model}: {tasks} task(s), {repeats} attempt(s) each"


def attempt_line(row: AttemptResult) -> str:
    """The course's line for an attempt: its id left-aligned in 16, a longer id running
    over, as the course's own does."""
    mark = "ok " if row.passed else "BAD"
    return (
        f"  {mark} {row.id:<16} r{row.attempt}  {row.steps:>2} step(s)"
        f"  {row.tokens:>7} tok  {row.seconds:>6.1f}s"
    )


def crash_lines(row: AttemptResult, every: bool = False) -> list[str]:
    """Where the agent raised, under its BAD line: the innermost frame of its own files,
    or with ``every`` (``--debug``) each of them, outermost first."""
    frames = row.traceback or []
    return [shown(f"        at {f.file}:{f.line} in {f.function}: {f.code}")
            for f in (frames if every else frames[-1:])]  # fmt: skip


def attempt_detail(row: AttemptResult) -> list[str]:
    """The --verbose lines under a failed attempt (none under a pass). First the
    course's, as it prints them: the answer's first 200 characters, its newlines kept,
    and the missing strings as a Python list when there are some. Then agent-eval's
    own, named by its failure class (``over_budget: ...``), when the course's lines do
    not already say it all: why the attempt failed, and which budget ran out."""
    if row.passed:
        return []
    lines = [f"        answer: {shown(row.answer[:200])}"]
    if row.checks.missing:
        lines.append(f"        missing: {row.checks.missing}")
    reason = describe_failure(row, numbered=False)
    stopped = row.stopped or "finished"
    # Which budget ran out, an echo...; an error says it all by itself.
    if row.error is None and stopped != "finished" and stopped not in reason:
        reason += f"; stopped: {stopped}"
    said = "missing " + ", ".join(map(repr, row.checks.missing))  # the course's line said it
    if row.failure_class != "wrong_answer" or reason != said:
        one_line = reason.replace("\n", " ")  # an error's own lines could pass for the course's
        lines.append(shown(f"        {row.failure_class or 'failed'}: {one_line}"))
    return lines


def shown(text: str) -> str:
    """``text`` as it may reach a terminal: each control character but newline and tab
    shown as an escape (ESC as ``\\x1b``), as ``relay_to_stderr`` shows what an agent
    prints, so that an answer can neither set the clipboard, move the cursor nor hide
    the lines that follow. A carriage return is shown too: it would let the text write
    over the start of its own line."""
    out: list[bytes] = []
    stream = ShownStream(Redactor(()).stream(out.append))
    stream.write(text.replace("\r", "\\x0d").encode("utf-8", "surrogatepass"))
    stream.close()
    return b"".join(out).decode("utf-8", "surrogatepass")


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
