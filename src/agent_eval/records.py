"""Typed records: the public contract of suites, agent replies, verdicts and results.

Every record forbids unknown fields, so a typo in a suite or a results file fails loudly
instead of being silently dropped.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

RESULTS_SCHEMA = 1
"""Version of the results-file and trajectory shape; bumped on incompatible change."""

TASK_ID_PATTERN = re.compile(r"^[A-Za-z0-9._-]+$")

FailureClass = Literal["passed", "wrong_answer", "over_budget", "agent_error", "infra_error"]
StopReason = Literal[
    "finished",
    "turn_limit",
    "token_budget",
    "time_budget",
    "repeated_call",
    "model_error",
    "agent_error",
]


class Strict(BaseModel):
    """Base for records: unknown keys are errors, and values are not silently coerced."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Task(Strict):
    """One task of a suite: a question and the program-checkable outcome it expects."""

    id: str
    """Unique within the suite: letters, digits, '.', '_' and '-'."""
    task: str
    """The text given to the agent."""
    category: str = "uncategorised"
    """A free label used to group results (retrieval, tools, reasoning...)."""
    expect_in_answer: list[str] = Field(default_factory=list)
    """Every string must appear in the answer, case-insensitively."""
    expect_not_in_answer: list[str] = Field(default_factory=list)
    """No string may appear in the answer, case-insensitively."""
    expect_regex: str | None = None
    """A pattern that re.search must find in the answer, ignoring case."""
    expect_tool: str | None = None
    """A tool name that some trajectory record must carry under the key 'tool'."""
    max_steps: int | None = Field(default=None, ge=1)
    """The reported steps must be at most this."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Token budget for one attempt; exceeding it is over_budget."""
    max_seconds: float | None = Field(default=None, gt=0)
    """Time budget for one attempt in seconds; exceeding it is over_budget."""
    notes: str | None = None
    """Why the task exists and what it catches; never shown to the agent."""

    @field_validator("id")
    @classmethod
    def _id_is_safe(cls, value: str) -> str:
        if not TASK_ID_PATTERN.match(value):
            raise ValueError("use only letters, digits, '.', '_' and '-'")
        return value

    @field_validator("expect_regex")
    @classmethod
    def _regex_compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"the pattern does not compile ({exc})") from None
        return value


class Suite(Strict):
    """A versioned list of tasks, with the folder the agent works in."""

    name: str
    """Human name of the suite, recorded with every run."""
    version: str
    """Bump it whenever task content changes; the hash catches a change without a bump."""
    comment: str | None = None
    """What the suite is for and how it was built."""
    workspace: str | None = None
    """A folder relative to the suite file copied into each attempt's workspace, or prose."""
    tasks: list[Task]
    """The tasks, in order; at least one."""


class Checks(Strict):
    """The outcome of every named check for one attempt; passed needs all of them."""

    passed: bool
    """True when every check holds."""
    missing: list[str]
    """Strings of expect_in_answer absent from the answer."""
    forbidden_found: list[str]
    """Strings of expect_not_in_answer present in the answer."""
    regex_ok: bool | None
    """Whether expect_regex matched; None when the task has no pattern."""
    tool_ok: bool | None
    """Whether expect_tool was used; None when the task names no tool."""
    within_steps: bool | None
    """Whether the steps were within max_steps; None when the task has no limit."""
    within_tokens: bool | None = None
    """Whether the tokens were within max_tokens; None when the task has no limit."""
    within_seconds: bool | None = None
    """Whether the wall time was within max_seconds; None when the task has no limit."""
    tools_used: list[str]
    """Tool names found in the trajectory, in first-use order."""


class AgentReply(Strict):
    """What an entry point's run_task returned, after validation and coercion."""

    answer: str
    """The final answer text."""
    steps: int = Field(ge=0)
    """One per model reply plus one per tool result."""
    tokens: int = Field(ge=0)
    """Total tokens used, prompt and completion."""
    prompt_tokens: int | None = Field(default=None, ge=0)
    """Input tokens, when the agent reports them."""
    completion_tokens: int | None = Field(default=None, ge=0)
    """Output tokens, when the agent reports them."""
    seconds: float | None = Field(default=None, ge=0)
    """The agent's own timing; the harness measures wall time regardless."""
    stopped: str = "finished"
    """Why the agent stopped (a StopReason for the shipped agents)."""
    trajectory: list[dict[str, Any]] = Field(default_factory=list)
    """The agent's JSON records, written after the meta line."""
    roles: dict[str, int] | None = None
    """Tokens per role, for multi-role agents."""


class AttemptResult(BaseModel):
    """One row of a results file: one attempt at one task, scored."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    """The task's id."""
    category: str
    """The task's category."""
    attempt: int
    """1-based attempt number within the task."""
    passed: bool
    """The verdict."""
    failure_class: FailureClass
    """passed, wrong_answer, over_budget, agent_error or infra_error."""
    answer: str
    """The final answer, possibly truncated for size."""
    steps: int
    """Steps reported by the agent."""
    tokens: int
    """Tokens reported by the agent."""
    prompt_tokens: int | None = None
    """Input tokens, when known."""
    completion_tokens: int | None = None
    """Output tokens, when known."""
    seconds: float
    """Wall time of the attempt measured by the harness."""
    stopped: str
    """Why the attempt stopped (agent stop reason, or the harness's reason on failure)."""
    error: str | None = None
    """What went wrong, for agent_error, over_budget and infra_error."""
    checks: Checks
    """Every named check's outcome."""
    roles: dict[str, int] | None = None
    """Tokens per role, when the agent reports them."""
    trajectory_file: str | None = None
    """The attempt's trajectory, relative to the results file's folder when possible."""
