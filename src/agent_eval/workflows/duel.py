"""Two configurations in paired rounds until the difference is settled (`agent-eval duel`).

Each round runs one attempt per task on each side through the ordinary runner: a side
is a run whose repeats grow by one a round (run/runner.py extends a finished run), so
its results file, journal, trajectories, isolation and budgets are exactly `run`'s.
After both sides finish a round, the confidence sequence (score/sequential.py) takes
the round's paired outcomes, and the duel file records them before the next round.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agent_eval.errors import AgentLoadError, ConfigError
from agent_eval.redaction import run_redactor
from agent_eval.results import (
    DUEL_SCHEMA,
    SIDES,
    DuelRecord,
    RunHead,
    Stop,
    append_labbook,
    iter_rows,
    journal_path_for,
    read_head,
    side_results,
    write_duel,
)
from agent_eval.run import AttemptObserver, RunConfig, build_settings, execute, prepare
from agent_eval.score import (
    confidence_sequence,
    decide,
    plan_from_pairs,
    projected_rounds,
    repeats_needed,
)

SideObservers = Mapping[str, AttemptObserver]
"""What hears each side's attempts as they are kept, by side ("a" or "b")."""
OnRound = Callable[[DuelRecord], None]
"""Called with the duel's record after each round."""


@dataclass(frozen=True)
class DuelConfig:
    """Everything a duel needs; the CLI builds it from flags."""

    sides: dict[str, RunConfig]
    """Each side's run; its repeats, out and resume are the duel's to set."""
    out: Path
    """The duel file; the sides' results go beside it."""
    settings: dict[str, Any]
    """The flags to record for --resume, secrets left out."""
    alpha: float = 0.05
    margin: float | None = 0.1
    max_repeats: int = 20
    max_total_tokens: int | None = None
    """Both sides' tokens together; no round starts that would likely pass it."""
    max_total_cost: float | None = None
    """Both sides' cost together at the user's price; likewise."""
    test_labbook: Path | None = None
    """Where a side that evaluates test-split tasks is recorded when it names no labbook."""

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise ConfigError(f"--alpha {self.alpha}: give a number between 0 and 1")
        if self.margin is not None and not 0 <= self.margin < 2:
            raise ConfigError(f"--margin {self.margin}: give a difference from 0 up to 2")
        if self.max_repeats < 1:
            raise ConfigError(f"--max-repeats {self.max_repeats}: give 1 or more")
        if self.max_total_cost is not None and not self.sides["a"].prices.given:
            raise ConfigError(
                f"--max-total-cost {self.max_total_cost}: cost needs your price; add "
                "--cost-per-million, or --input-cost-per-million and --output-cost-per-million"
            )


def duel_config(sides: Mapping[str, Mapping[str, Any]], **duel: Any) -> DuelConfig:
    """The duel with each side's run built from its settings by name (build_settings)."""
    return DuelConfig(sides={side: build_settings(given) for side, given in sides.items()}, **duel)


def check_specs(specs: Mapping[str, str | None]) -> None:
    """Both sides are given, and neither is a resumed duel's string whose secret the
    duel file left out."""
    for side, spec in specs.items():
        if not spec:
            raise ConfigError(
                f"--{side}: give side {side.upper()}, e.g. --{side} 'builtin:minimal'"
            )
        if "[redacted]" in spec:
            raise ConfigError(
                f"--resume: side {side.upper()}'s flags held a secret the duel "
                f"file does not keep; give --{side} again"
            )


def check_resumable(previous: DuelRecord, alpha: float, margin: float | None) -> None:
    """A resumed duel keeps the alpha and margin it began with: its guarantee needs them."""
    for name, now, began in (("alpha", alpha, previous.alpha), ("margin", margin, previous.margin)):
        if now != began:
            raise ConfigError(
                f"--{name} {now}: this duel began with {began}; "
                f"changing it midway would void the guarantee"
            )


def begin(config: DuelConfig, previous: DuelRecord | None) -> tuple[DuelConfig, DuelRecord]:
    """Check both sides before anything runs (check_sides); the config and the record
    to play on: a new one, or the resumed duel's when it ran the same tasks."""
    config, tasks = check_sides(config, resuming=previous is not None)
    if previous is None:
        return config, start_record(config, tasks)
    if previous.tasks != tasks:
        raise ConfigError(
            f"--resume {config.out}: the duel ran tasks {', '.join(previous.tasks)}; "
            f"select the same tasks"
        )
    return config, previous


def start_record(config: DuelConfig, tasks: list[str]) -> DuelRecord:
    """The record of a duel before its first round."""
    return DuelRecord(
        schema=DUEL_SCHEMA,
        decision="undecided",
        rounds=0,
        attempts=0,
        difference=None,
        interval=(-1.0, 1.0),
        alpha=config.alpha,
        margin=config.margin,
        fixed_design_attempts=None,
        stopped="running",
        results={s: side_results(config.out, s).name for s in SIDES},
        tasks=tasks,
        passed={s: [] for s in SIDES},
        settings=config.settings,
    )


def check_sides(config: DuelConfig, resuming: bool) -> tuple[DuelConfig, list[str]]:
    """Load both sides' suite and agent before anything runs. The config with a labbook
    for a side that evaluates test-split tasks (every look at them is recorded, as `run`
    records it), and the task ids the sides share. A new duel refuses to overwrite an
    earlier one's files."""
    sides = dict(config.sides)
    ids: dict[str, list[str]] = {}
    for side in SIDES:
        results = side_results(config.out, side)
        if not resuming:
            for path in (config.out, results, journal_path_for(results)):
                if path.exists():
                    raise ConfigError(
                        f"--out {config.out}: {path.name} is there from an earlier duel; "
                        f"continue it with --resume {config.out}, or choose another --out"
                    )
        try:
            prepared = prepare(replace(sides[side], repeats=1, out=None, resume=None))
        except AgentLoadError as exc:
            raise AgentLoadError(f"side {side.upper()}: {exc}") from None
        ids[side] = [task.id for task in prepared.tasks]
        if "test" in prepared.splits and sides[side].labbook is None:
            sides[side] = replace(sides[side], labbook=config.test_labbook)
    return replace(config, sides=sides), ids["a"]


def play(
    config: DuelConfig, record: DuelRecord, observers: SideObservers, on_round: OnRound
) -> DuelRecord:
    """Play rounds until the duel is settled, its budget is spent or it is interrupted;
    the duel file is written after every round."""
    heads = {
        side: read_head(side_results(config.out, side)).run
        for side in SIDES
        if side_results(config.out, side).exists()
    }
    played = False
    while True:
        record = _assess(config, record, heads)
        write_duel(config.out, record)
        if record.rounds:
            on_round(record)
        if record.stopped != "running":
            break
        number = record.rounds + 1
        passed = dict(record.passed)
        for side in SIDES:
            head = _play_side(config, side, number, observers[side])
            if head is None:  # Ctrl-C: what finished is in the side's journal
                record = record.model_copy(update={"stopped": "interrupted"})
                write_duel(config.out, record)
                return record
            heads[side] = head
            outcomes = _round_outcomes(side_results(config.out, side), number, record.tasks)
            passed[side] = [*passed[side], outcomes]
        record = record.model_copy(update={"passed": passed, "rounds": number})
        played = True
    for side, run_config in config.sides.items():
        if played and run_config.labbook is not None:
            redact = run_redactor(run_config.api_key, run_config.options, run_config.secret_options)
            append_labbook(run_config.labbook, heads[side], redact)
    return record


def _play_side(
    config: DuelConfig, side: str, number: int, observer: AttemptObserver
) -> RunHead | None:
    """Round ``number`` of one side: its run extended to that many repeats. The run's
    head, or None when it was interrupted."""
    results = side_results(config.out, side)
    resume = None
    if journal_path_for(results).exists():
        resume = results
    elif results.exists():
        head = read_head(results)
        if (head.run.repeats or 0) >= number:  # stopped after this side's round
            return head.run
        resume = results
    run_config = replace(
        config.sides[side], repeats=number, out=results, resume=resume, labbook=None
    )
    report = execute(prepare(run_config), observer)
    return None if report.interrupted else report.head.run


def _round_outcomes(results: Path, number: int, tasks: list[str]) -> list[int]:
    """1 or 0 per task for the round's attempt, in task order. An attempt whose endpoint
    failed counts as failed, as the usable success rate counts it."""
    found = {row.id: int(row.passed) for row in iter_rows(results) if row.attempt == number}
    return [found[task] for task in tasks]


def _assess(config: DuelConfig, record: DuelRecord, heads: dict[str, RunHead]) -> DuelRecord:
    """The record with the sequence's interval, decision, projection and the fixed
    design's size, and whether and why the duel stops now."""
    diffs = record.differences()
    update: dict[str, Any] = {"attempts": 2 * len(record.tasks) * record.rounds}
    if diffs:
        last = confidence_sequence(diffs, config.alpha)[-1]
        decision = decide(last, config.margin or None)
        update.update(
            decision=decision,
            difference=last.estimate,
            interval=(last.lo, last.hi),
            projected_rounds=None
            if decision != "undecided"
            else projected_rounds(diffs, config.alpha, config.margin or None),
            fixed_design_attempts=fixed_design_attempts(
                record, config.alpha, config.margin if decision == "no_difference" else None
            ),
        )
    update["stopped"] = _stop(config, update.get("decision", "undecided"), record, heads)
    return record.model_copy(update=update)


def _stop(config: DuelConfig, decision: str, record: DuelRecord, heads: dict[str, RunHead]) -> Stop:
    """Why the duel stops before another round, or running."""
    if decision != "undecided":
        return "decided"
    if record.rounds >= config.max_repeats:
        return "max_repeats"
    summaries = [head.summary for head in heads.values() if head.summary is not None]
    rounds = max(record.rounds, 1)
    tokens = sum(s.total_tokens or 0 for s in summaries)
    cost = sum(s.cost_total or 0.0 for s in summaries)
    # Stop before a round that, costing what the rounds so far cost on average, would pass it.
    if config.max_total_tokens is not None and tokens * (rounds + 1) / rounds > (
        config.max_total_tokens
    ):
        return "token_budget"
    if config.max_total_cost is not None and cost * (rounds + 1) / rounds > config.max_total_cost:
        return "cost_budget"
    return "running"


def fixed_design_attempts(record: DuelRecord, alpha: float, aim: float | None = None) -> int | None:
    """Attempts on both sides that a fixed number of repeats per task would need for 80%
    power, as `compare` plans it for this suite (claim (b): no between-task term),
    aiming at ``aim`` (the margin, for no difference) or else at the difference seen.
    None where the plan cannot be estimated: one round, no variation, or nothing to aim at.
    """
    tasks = len(record.tasks)
    counts = [[sum(r[i] for r in record.passed[side]) for i in range(tasks)] for side in SIDES]
    n = record.rounds
    plan = plan_from_pairs([(n, a, n, b) for a, b in zip(*counts, strict=True)], aim, alpha)
    if plan.sigma2_a is None or plan.sigma2_b is None or plan.sigma2_a + plan.sigma2_b == 0:
        return None
    repeats = repeats_needed(tasks, plan.delta, 0.0, plan.sigma2_a, plan.sigma2_b, alpha)
    return None if repeats is None else 2 * tasks * repeats
