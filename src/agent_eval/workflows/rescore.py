"""Score saved attempts again after a suite change, without running the agent.

Checks are pure functions of the task and what the attempt recorded (answer, steps,
tokens, seconds, tools used), so a rescore of an unchanged suite gives the same verdicts.
Attempts that never produced a reply (agent errors) keep their class. Any results file
that ``report`` reads can be rescored; the rescored file is written in the current schema.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent_eval.records import RESULTS_SCHEMA, Task
from agent_eval.results import (
    AttemptResult,
    ResultsHead,
    Tally,
    iter_rows,
    read_head,
    row_json,
    write_results,
)
from agent_eval.score import attempt_cost, classify, rejudge, score_attempt
from agent_eval.suite import LoadedSuite, load_suite

KEEP = ("agent_error",)
"""Classes with no reply to score: the agent crashed or misbehaved."""


@dataclass(frozen=True)
class Rescored:
    """The rescored head and the lines that tell the user what changed."""

    head: ResultsHead
    lines: list[str]
    all_passed: bool
    warnings: tuple[str, ...] = ()
    """What the user must know before trusting the new verdicts (stderr)."""


def rescore(path: Path, suite_spec: str, out: Path | None) -> Rescored:
    """Rescore every attempt of ``path`` against ``suite_spec``; write to ``out`` if given."""
    head = read_head(path)
    loaded = load_suite(suite_spec)
    tasks = {task.id: task for task in loaded.suite.tasks}
    prices = head.run.prices or {}
    tally = Tally(prices)
    max_cost = head.run.limits.max_cost_per_task if head.run.limits else None
    lines: list[str] = []
    rescored: list[bytes] = []  # compact JSON: a long run's rows, not their records
    for row in iter_rows(path):
        task = tasks.get(row.id)
        if task is None:
            lines.append(f"  skip {row.id} r{row.attempt}: not in suite {loaded.suite.name}")
            continue
        new = row if row.failure_class in KEEP else _rescored(row, task, prices, max_cost)
        if new.passed != row.passed:
            was, now = ("ok", "BAD") if row.passed else ("BAD", "ok")
            lines.append(f"  {row.id:<16} r{row.attempt}  {was} -> {now}")
        tally.add(new)
        rescored.append(row_json(new).encode("utf-8"))
    summary = tally.summary()
    run = head.run.model_copy(
        update={
            "task_set": loaded.suite.name,
            "task_set_version": loaded.suite.version,
            "suite_hash": loaded.hash,
            "summary": summary,
            "rescored_from": str(path),
        }
    )
    new_head = ResultsHead(schema=RESULTS_SCHEMA, run=run, per_task=tally.per_task())
    changed = sum(1 for line in lines if "->" in line)
    lines.append(
        f"rescored {tally.runs} attempt(s) against {loaded.suite.name} {loaded.suite.version}: "
        f"{changed} verdict(s) changed, success rate {summary.success_rate}"
    )
    if out is not None:
        write_results(out, new_head, rescored)
        lines.append(f"written to {out}")
    all_passed = bool(tally.runs) and tally.passed == tally.runs
    return Rescored(new_head, lines, all_passed, _unbumped(head, loaded))


def _unbumped(before: ResultsHead, loaded: LoadedSuite) -> tuple[str, ...]:
    """A warning when the suite's content changed under the same name and version."""
    run = before.run
    same = (run.task_set, run.task_set_version) == (loaded.suite.name, loaded.suite.version)
    if not same or run.suite_hash in (None, loaded.hash):
        return ()
    return (
        f"suite {loaded.suite.name} {loaded.suite.version} changed since this run "
        f"({run.suite_hash} -> {loaded.hash}) without a version bump; give the edited suite "
        "a new version so its numbers are never mixed with the old ones",
    )


def _rescored(
    row: AttemptResult, task: Task, prices: dict[str, float | None], max_cost: float | None
) -> AttemptResult:
    checks = score_attempt(
        task,
        row.answer,
        row.steps,
        row.checks.tools_used,
        row.tokens,
        row.seconds,
        row.checks.state,  # the world is gone; its recorded verdicts stand
        cost=attempt_cost(row.tokens, row.prompt_tokens, row.completion_tokens, prices),
        max_cost=max_cost,
        # The citations were judged on the starting workspace: those verdicts stand,
        # held against the suite's expect_citations as it is now.
        citations=rejudge(task.expect_citations, row.citations or [], row.checks.bad_citations),
    )
    stopped = row.stopped or "finished"
    update = {"checks": checks, "failure_class": classify(checks, stopped),
              "category": task.category, "group": task.group}  # fmt: skip
    return row.model_copy(update=update)
