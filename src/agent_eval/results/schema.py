"""The records of a results file: its head (the run and its summary), the per-task view,
and one row per attempt.

The course harness's keys come first, in its order and with its formats, so that a
script written for its files reads ours; agent-eval's own keys follow them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from agent_eval.records import (
    BadCitation,
    Checks,
    Citation,
    FailureClass,
    StateOutcome,
    Strict,
    build_validators,
)

COURSE_TASK_KEYS = ("id", "category", "attempts", "successes", "success_rate", "steps_min",
                    "steps_max", "tokens_min", "tokens_max", "first_failure")  # fmt: skip
"""The course harness's per-task keys, in its order; every per-task view starts with them."""


class Record(BaseModel):
    """Base of the results records: an unknown key is an error, never silently dropped.
    Each builds its validator on first use, as agent_eval.records' do."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)


def build_record_validators() -> None:
    """Build now the validators of every results record and every record of
    agent_eval.records (see `records.build_validators`)."""
    build_validators(Strict, Record)


class Frame(Record):
    """One frame of an agent's crash, in the agent's own files."""

    file: str
    """The file, relative to the folder the run started in when it is inside it."""
    line: int
    function: str
    code: str
    """The source line that was running (cut short when long)."""


class AttemptResult(Record):
    """One row of a results file: one attempt at one task, scored."""

    id: str
    """The task's id."""
    category: str
    """The task's category."""
    attempt: int
    """1-based attempt number within the task."""
    answer: str
    """The final answer."""
    steps: int
    """Steps reported by the agent."""
    tokens: int
    """Tokens reported by the agent."""
    prompt_tokens: int | None = None
    """Input tokens, when known."""
    completion_tokens: int | None = None
    """Output tokens, when known."""
    seconds: float
    """The attempt's seconds: the agent's own figure when it gives one, as the course
    records it, else the harness's (``harness_seconds``)."""
    stopped: str | None = None
    """Why the attempt stopped (agent stop reason, or the harness's reason on failure);
    None when a course-harness file does not say."""
    checks: Checks
    """Every named check's outcome; ``checks.passed`` is the verdict."""
    trajectory_file: str | None = None
    """The attempt's trajectory, relative to the results file's folder when possible."""
    failure_class: FailureClass | None
    """passed, wrong_answer, over_budget, agent_error, infra_error or replay_mismatch (a
    replayed attempt asked what its recording did not); None only for a
    course-harness row whose checks do not tell."""
    error: str | None = None
    """What went wrong, for agent_error, over_budget and infra_error."""
    roles: dict[str, int] | None = None
    """Tokens per role, when the agent reports them."""
    infra_retries: int = 0
    """How many earlier tries of this attempt ended in infra_error and were retried."""
    changed_files: list[str] | None = None
    """Workspace files the attempt touched, git-style ('A new.md', 'M runbook.md',
    'D old.md'); recorded when the task checks state or the agent may write."""
    citations: list[Citation] | None = None
    """The passages the agent cited, when it cited any."""
    group: str | None = None
    """The task's group, when it has one (for cluster-robust uncertainty)."""
    traceback: list[Frame] | None = None
    """Where run_task raised, outermost frame first, the agent's own files only; None
    when it did not raise."""
    copied_share: float | None = None
    """The share of the answer's words copied verbatim from the task text or the
    documents (score.copied.copied_share); None when there was no answer to measure."""
    recording_file: str | None = None
    """The attempt's recorded model calls (run --record), named like trajectory_file."""
    harness_seconds: float | None = None
    """The attempt's wall time by the harness's clock, whatever the agent reported: what
    time limits are judged on. None in files from before it and other harnesses' runs."""

    @property
    def passed(self) -> bool:
        """The verdict: every check holds."""
        return self.checks.passed

    @property
    def failure(self) -> str | None:
        """Why the attempt failed, in a few words for people; None when it passed."""
        return None if self.checks.passed else describe_failure(self)


class CheckOutcomes(Protocol):
    """What ``describe_failure`` reads of an attempt's checks: a Checks record, or a
    loaded run's compact copy of it (results.rows.CheckValues)."""

    @property
    def missing(self) -> Sequence[str]: ...
    @property
    def forbidden(self) -> Sequence[str]: ...
    @property
    def regex_ok(self) -> bool: ...
    @property
    def tool_ok(self) -> bool: ...
    @property
    def within_steps(self) -> bool: ...
    @property
    def within_tokens(self) -> bool: ...
    @property
    def within_seconds(self) -> bool: ...
    @property
    def within_cost(self) -> bool: ...
    @property
    def citations_ok(self) -> bool: ...
    @property
    def bad_citations(self) -> Sequence[BadCitation]: ...
    @property
    def state(self) -> Sequence[StateOutcome]: ...


class FailedRow(Protocol):
    """What ``describe_failure`` reads of an attempt: a full row, or a loaded run's
    compact one (results.rows.Attempt), so that a report says it the same way."""

    @property
    def attempt(self) -> int: ...
    @property
    def steps(self) -> int: ...
    @property
    def tokens(self) -> int: ...
    @property
    def stopped(self) -> str | None: ...
    @property
    def failure_class(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def checks(self) -> CheckOutcomes: ...


def describe_failure(row: FailedRow, numbered: bool = True) -> str:
    """A short reason an attempt failed, for people reading the per-task view; it starts
    with the attempt (``r2: ``) unless ``numbered`` is false. The failure class is not
    part of it: every view that shows the reason shows the class beside it."""
    prefix = f"r{row.attempt}: " if numbered else ""
    if row.failure_class in ("agent_error", "infra_error") or row.error:
        return prefix + str(row.error or row.stopped or row.failure_class)
    checks, reasons = row.checks, []
    if checks.missing:
        reasons.append("missing " + ", ".join(map(repr, checks.missing)))
    if checks.forbidden:
        reasons.append("forbidden " + ", ".join(map(repr, checks.forbidden)))
    if not checks.regex_ok:
        reasons.append("regex did not match")
    if not checks.tool_ok:
        reasons.append("expected tool not used")
    if not checks.within_steps:
        reasons.append(f"{row.steps} steps over the limit")
    if not checks.within_tokens:
        reasons.append(f"{row.tokens} tokens over the limit")
    if not checks.within_seconds:
        reasons.append("over the time limit")
    if not checks.within_cost:
        reasons.append("over the cost limit")
    if not checks.citations_ok:
        bad = checks.bad_citations
        reasons.append(f"bad citation of {bad[0].file}: {bad[0].reason}" if bad
                       else "cited none of the expected files")  # fmt: skip
    failed_state = (
        [outcome.name for outcome in checks.state if not outcome.ok] if checks.state else []
    )
    if failed_state:
        reasons.append("state check failed: " + "; ".join(failed_state))
    return prefix + ("; ".join(reasons) or f"stopped: {row.stopped or 'not recorded'}")


class Summary(Record):
    """The run's summary, rounded as the course harness rounds it, then agent-eval's
    reliability and cost figures and the exact values."""

    runs: int
    """Attempts in the run."""
    passed: int
    """Attempts that passed."""
    success_rate: float | None = None
    """passed / runs, to 3 decimals; None with no attempts."""
    mean_steps: float | None = None
    """Mean steps per attempt, to 2 decimals."""
    mean_tokens: float | None = None
    """Mean tokens per attempt, to 1 decimal."""
    mean_seconds: float | None = None
    """Mean seconds per attempt, to 1 decimal."""
    total_tokens: int | None = None
    """Tokens of every attempt together."""
    stdev_steps: float | None = None
    """Population stdev of steps, to 2 decimals; only with more than one attempt."""
    stdev_tokens: float | None = None
    """Population stdev of tokens, to 1 decimal; only with more than one attempt."""
    cost_per_million_tokens: float | None = None
    """The one price per million tokens the user gave (--cost-per-million)."""
    cost_total: float | None = None
    """The run's cost at the user's price, to 6 decimals as the course rounds it; None
    when no price was given (the exact figure is under ``exact``)."""
    cost_per_task: float | None = None
    """cost_total / runs, to 6 decimals."""
    stdev_seconds: float | None = None
    """Population stdev of seconds, when a course-harness file carries it."""
    failure_classes: dict[str, int] | None = None
    """Attempts per failure class."""
    copied_passes: int | None = None
    """Passes made mostly of text copied from the task or the documents
    (score.copied.is_copied_pass); a warning, the checks still decide."""
    usable_success_rate: float | None = None
    """passed / every attempt, to 3 decimals."""
    model_success_rate: float | None = None
    """passed / attempts whose endpoint worked (infra errors left out), to 3 decimals."""
    model_runs: int | None = None
    """Attempts that were not infra errors."""
    infra_errors: int | None = None
    """Attempts whose endpoint failed even after retries."""
    retried_attempts: int | None = None
    """Attempts that needed at least one infra retry."""
    retried_passed: int | None = None
    """Retried attempts that passed after a retry."""
    first_try_success_rate: float | None = None
    """Success rate counting an attempt that needed a retry as failed, to 3 decimals."""
    cost_unpriced_attempts: int | None = None
    """Attempts left out of the cost: no prompt/completion split under split prices."""
    exact: dict[str, float | None] | None = None
    """The unrounded success rate, means and stdevs, for the statistics."""


class TaskSummary(Record):
    """One task's line of the per-task view: the course harness's keys in its order, then
    agent-eval's."""

    id: str
    """The task's id."""
    category: str | None = None
    """The task's category (None only in files from before it was recorded)."""
    attempts: int
    """Attempts at the task."""
    successes: int
    """Attempts that passed."""
    success_rate: float | None = None
    """successes / attempts, to 3 decimals."""
    steps_min: int | None = None
    """Fewest steps of an attempt."""
    steps_max: int | None = None
    """Most steps of an attempt."""
    tokens_min: int | None = None
    """Fewest tokens of an attempt."""
    tokens_max: int | None = None
    """Most tokens of an attempt."""
    first_failure: dict[str, Any] | None = None
    """The checks object of the first failed attempt, as the course writes it; None when
    every attempt passed, or in files from before it was recorded."""
    first_failure_reason: str | None = None
    """Why the first failed attempt failed, in a few words for people."""
    pass_hat_k: dict[str, float] | None = None
    """pass^k for k = 1..attempts: the chance that k attempts drawn all pass."""


class Limits(Record):
    """The run's harness limits."""

    timeout_per_task: float | None = None
    """Seconds an attempt may take when its task sets no max_seconds."""
    max_memory_mb: int | None = None
    """Memory a worker may use before it is stopped."""
    max_infra_retries: int | None = None
    """How often an attempt whose endpoint failed is tried again."""
    max_cost_per_task: float | None = None
    """--max-cost-per-task: the cost an attempt may reach at the run's prices."""


class SandboxUsed(Record):
    """Which wall stood between the agent and the run: the kernel sandbox, or none."""

    applied: Literal["bwrap", "none"]
    """bwrap: every attempt ran in a bubblewrap sandbox; none: attempts ran unconfined."""
    network: str | None = None
    """What the sandbox let the agent reach: model, none or host (None: no sandbox)."""
    reason: str | None = None
    """Why there was no sandbox: --sandbox off, or why it could not start."""
    max_workspace_mb: int | None = None
    """The size of each slot's private folder, in RAM: its attempt's workspace, /tmp and
    HOME (None: not capped, as when there is no sandbox, or no /dev/shm to keep it out
    of /tmp)."""
    hidden_records: int | None = None
    """How many records of earlier runs of these tasks (files, or folders of nothing
    else) the sandbox hid in the folders it shows: the current one, the agent's."""


class LimitSpread(Record):
    """One limit over the tasks that ran: its lowest and highest value, on how many."""

    low: float
    """The lowest limit of a task."""
    high: float
    """The highest limit of a task."""
    tasks: int
    """How many tasks have the limit."""
    of: int
    """How many tasks ran."""


class Budgets(Record):
    """The budgets and authority a run's success was earned under."""

    max_steps: LimitSpread | None = None
    """The tasks' step limits."""
    max_tokens: LimitSpread | None = None
    """The tasks' token limits."""
    max_seconds: LimitSpread | None = None
    """The tasks' time limits (max_seconds, else --timeout-per-task)."""
    max_cost_per_task: float | None = None
    """The cost limit of one attempt."""
    tools: list[str] = Field(default_factory=list)
    """Every tool the suite grants to the tasks that ran."""
    writes: bool = False
    """True when one of those tools can change the workspace."""


class RunHead(Record):
    """The ``run`` object of a results file, and one line of a labbook."""

    lab: str | None = None
    """The lab or machine label the user gave."""
    run_id: str
    """Unique id of the run."""
    scaffold: str
    """The agent's SCAFFOLD_NAME."""
    agent_entry_point: str | None = None
    """The --agent given."""
    task_set: str
    """The suite's name."""
    task_set_version: str
    """The suite's version ("not recorded" when a course-harness suite names none)."""
    model: str
    """The --model given."""
    router_model: str | None = None
    """The --router-model given."""
    quant: str | None = None
    """The quantisation label the user gave."""
    engine: str | None = None
    """The serving engine label the user gave."""
    engine_version: str | None = None
    """The serving engine's version the user gave."""
    base_url: str | None = None
    """The model endpoint."""
    repeats: int | None = None
    """Attempts per task."""
    host: str | None = None
    """The machine the harness ran on."""
    date: str | None = None
    """The day the run started, YYYY-MM-DD (UTC)."""
    wall_seconds: float | None = None
    """Wall time of the whole run."""
    notes: str | None = None
    """The user's notes."""
    summary: Summary | None = None
    """The run's summary."""
    started_at: str | None = None
    """When the run started, ISO 8601 with the time zone."""
    suite_hash: str | None = None
    """Hash of the suite's canonical task content; None when a course-harness file does
    not record it."""
    harness_version: str | None = None
    """The agent-eval version that ran it."""
    concurrency: int | None = None
    """Attempts run side by side."""
    isolation: Literal["attempt", "worker"] | None = None
    """attempt: each attempt started from the agent's state right after build(); worker:
    a worker's attempts shared its process. None in files from before the choice."""
    limits: Limits | None = None
    """The harness's limits."""
    sandbox: SandboxUsed | None = None
    """The sandbox the attempts ran in; None in files from before the sandbox."""
    seed: int | None = None
    """The --seed given."""
    prices: dict[str, float | None] | None = None
    """The prices the user gave, per million tokens."""
    options: dict[str, Any] | None = None
    """The --option values, secrets left out."""
    interrupted: bool | None = None
    """True when the run was stopped before every attempt ran."""
    warnings: list[str] | None = None
    """What the harness warned about while running."""
    rescored_from: str | None = None
    """The results file this one was rescored from."""
    budgets: Budgets | None = None
    """The step, token, time and cost limits and the authority the run stated."""
    splits: list[str] | None = None
    """The splits (dev, test) the run's tasks belong to; a test look is counted."""
    recorded: bool | None = None
    """True when each attempt's model calls were recorded (run --record)."""
    replayed_from: str | None = None
    """The results file whose recordings answered this run's model calls (run --replay)."""

    @property
    def label(self) -> str:
        """A short name for the run: scaffold x model, with the quantisation if any."""
        base = f"{self.scaffold} x {self.model}"
        return f"{base} ({self.quant})" if self.quant not in (None, "", "unknown") else base


class ResultsHead(Record):
    """A results file without its rows: the schema, the run and the per-task view."""

    schema_version: int | None = Field(alias="schema")
    """The file's shape: RESULTS_SCHEMA for files agent-eval writes, 1 for older ones,
    None for the course harness's (it writes no schema)."""
    run: RunHead
    """The run and its summary."""
    per_task: list[TaskSummary] = Field(default_factory=list)
    """One entry per task, in task order."""
