"""Typed records: the public contract of suites, agent replies, verdicts and results.

Every record forbids unknown fields, so a typo in a suite or a results file fails loudly
instead of being silently dropped.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath, PureWindowsPath
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

RESULTS_SCHEMA = 3
"""Version of the results-file and trajectory shape; bumped on incompatible change.

1 keyed rows by ``task_id``, named ``checks.forbidden_found`` and wrote null for a check
the task does not ask for; 2 kept the course harness's row keys and values; 3 adds its
per-task keys (``steps_min``..., ``first_failure`` the checks object), its
``tools_used`` with repeats and its attempt-major row order."""

TASK_ID_PATTERN = re.compile(r"^[A-Za-z0-9._-]+$")

Split = Literal["dev", "test"]
"""A suite's or task's held-out role: tune on dev, report on test."""

FailureClass = Literal[
    "passed", "wrong_answer", "over_budget", "agent_error", "infra_error", "replay_mismatch"
]
StopReason = Literal[
    "finished",
    "turn_limit",
    "token_budget",
    "time_budget",
    "cost_budget",
    "repeated_call",
    "reply_cut",
    "echoed_instructions",
    "model_error",
    "agent_error",
]


def compiling_pattern(value: str | None) -> str | None:
    """A validator's check that a regular expression compiles, with the reason if not."""
    if value is not None:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"the pattern does not compile ({exc})") from None
    return value


class Strict(BaseModel):
    """Base for records: unknown keys are errors, and values are not silently coerced.

    A record's validator is built when it is first used (about 100 ms for them all): a
    command builds only those it needs, and a run builds them while its first worker
    starts (`build_validators`)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)


def build_validators(*bases: type[BaseModel]) -> None:
    """Build now the validator of every record class below ``bases`` (default: Strict),
    so that none is built later, in the middle of other work or in several threads."""
    pending = list(bases or (Strict,))
    while pending:
        model = pending.pop()
        pending.extend(model.__subclasses__())
        if not model.__pydantic_complete__:
            model.model_rebuild(force=True)


def inside_path(value: str) -> str:
    """Accept a relative path that stays in its folder: not absolute, no '..' part."""
    if not value.strip():
        raise ValueError("is empty; give a path relative to the workspace")
    if PurePosixPath(value).is_absolute() or PureWindowsPath(value).anchor:
        raise ValueError(f"{value!r} is absolute; give a path relative to the workspace")
    if ".." in PurePosixPath(value.replace("\\", "/")).parts:
        raise ValueError(f"{value!r} leaves the workspace ('..'); give a path inside it")
    return value


class FileCheck(Strict):
    """Base of the checks on one workspace path; the path may not leave the workspace."""

    kind: ClassVar[str] = ""
    file: str
    """A path relative to the workspace."""

    @field_validator("file")
    @classmethod
    def _file_inside(cls, value: str) -> str:
        return inside_path(value)


class FileContains(FileCheck):
    """The file holds this text: an exact, case-sensitive substring of its bytes."""

    kind: ClassVar[str] = "contains"
    contains: str
    """Text that must occur in the file (UTF-8, case-sensitive)."""


class FileNotContains(FileCheck):
    """The file does not hold this text; a missing file fails the check."""

    kind: ClassVar[str] = "not_contains"
    not_contains: str
    """Text that must not occur in the file (UTF-8, case-sensitive)."""


class FileExists(FileCheck):
    """The path exists (true) or does not exist (false) at the end of the attempt."""

    kind: ClassVar[str] = "exists"
    exists: bool
    """True: a file or folder must be there; false: nothing may be there."""


class FileEquals(FileCheck):
    """The file's content is exactly this text, byte for byte in UTF-8."""

    kind: ClassVar[str] = "equals"
    equals: str
    """The whole expected content, newlines included."""


class FileUnchanged(FileCheck):
    """The path is as it was before the agent ran: same bytes, or still absent."""

    kind: ClassVar[str] = "unchanged"
    unchanged: Literal[True]
    """Always true; a folder is unchanged when every file under it is."""


class OnlyChanged(Strict):
    """No file was added, removed or changed outside the allowed paths."""

    kind: ClassVar[str] = "only_changed"
    only_changed: list[str]
    """fnmatch globs relative to the workspace ('notes/*'); an empty list allows nothing."""


SqlValue = int | float | str | None
"""A value SQLite returns: integer, real, text or NULL."""


class SqliteCheck(Strict):
    """A read-only query on a workspace SQLite file returns the expected value or rows."""

    kind: ClassVar[str] = "sqlite"
    sqlite: str
    """The database file, relative to the workspace."""
    query: str = Field(min_length=1)
    """The SQL to run; the database is opened read-only."""
    equals: SqlValue = None
    """The single value (one row, one column) the query must return; null means SQL NULL."""
    equals_rows: list[list[SqlValue]] | None = None
    """Every row the query must return, in order (use ORDER BY)."""

    @field_validator("sqlite")
    @classmethod
    def _db_inside(cls, value: str) -> str:
        return inside_path(value)

    @model_validator(mode="after")
    def _one_expectation(self) -> SqliteCheck:
        given = {"equals", "equals_rows"} & self.model_fields_set
        if len(given) != 1:
            raise ValueError("give exactly one of 'equals' (one value) or 'equals_rows' (rows)")
        return self


class CommandCheck(Strict):
    """A command run after the agent, in a copy of the final workspace, exits as expected."""

    kind: ClassVar[str] = "command"
    command: list[str] = Field(min_length=1)
    """The argv, run without a shell; 'python' means the harness's own interpreter."""
    exit_code: int = 0
    """The exit code that passes the check."""
    with_files: str | None = None
    """A folder relative to the suite file, copied into the copy first (hidden tests)."""
    timeout: float = Field(default=60.0, gt=0)
    """Seconds the command may run before it is stopped and the check fails."""

    @field_validator("with_files")
    @classmethod
    def _files_in_suite(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if PurePosixPath(value).is_absolute() or PureWindowsPath(value).anchor:
            raise ValueError(f"{value!r} is absolute; give a folder relative to the suite file")
        if ".." in PurePosixPath(value.replace("\\", "/")).parts:
            raise ValueError(f"{value!r} leaves the suite's folder ('..'); give a folder in it")
        return value

    @field_validator("command")
    @classmethod
    def _program_named(cls, value: list[str]) -> list[str]:
        if not value[0].strip():
            raise ValueError("the first item must name the program to run")
        return value


FILE_VERBS = ("contains", "not_contains", "exists", "equals", "unchanged")
"""The keys that say what a check with 'file' asserts; exactly one per check."""


def state_kind(value: Any) -> str | None:
    """Which kind of state check a raw object or a check record is; None when unclear."""
    if isinstance(value, BaseModel):
        return str(getattr(value, "kind", "")) or None
    if not isinstance(value, dict):
        return None
    for key in ("command", "sqlite", "only_changed"):
        if key in value:
            return key
    if "file" in value:
        verbs = [verb for verb in FILE_VERBS if verb in value]
        return verbs[0] if len(verbs) == 1 else None
    return None


StateCheck = Annotated[
    Annotated[FileContains, Tag("contains")]
    | Annotated[FileNotContains, Tag("not_contains")]
    | Annotated[FileExists, Tag("exists")]
    | Annotated[FileEquals, Tag("equals")]
    | Annotated[FileUnchanged, Tag("unchanged")]
    | Annotated[OnlyChanged, Tag("only_changed")]
    | Annotated[SqliteCheck, Tag("sqlite")]
    | Annotated[CommandCheck, Tag("command")],
    Discriminator(
        state_kind,
        custom_error_type="state_kind",
        custom_error_message="not a state check: give 'file' with one of "
        + ", ".join(FILE_VERBS)
        + ", or 'only_changed', 'sqlite' or 'command'",
    ),
]
"""One entry of a task's expect_state, told apart by its keys."""


class StateOutcome(Strict):
    """The result of one state check, named so a reader sees what was asserted."""

    name: str
    """The check in words, e.g. "file service-runbook.md contains '30 days'"."""
    ok: bool
    """True when the workspace satisfied the check."""
    detail: str | None = None
    """Why it failed, or the tail of a command's output."""


class Citation(Strict):
    """A passage an answer rests on: the file it is in, and the words quoted from it."""

    file: str
    """The document's path relative to the workspace."""
    quote: str
    """Words from the document; matched ignoring case and runs of whitespace."""


class BadCitation(Strict):
    """A citation that the attempt's starting workspace does not bear out."""

    file: str
    """The file the agent named."""
    quote: str
    """The quote the agent gave (cut to 200 characters)."""
    reason: str
    """Why it failed: no such file, an empty quote, or a quote the file does not hold."""


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
    expect_state: list[StateCheck] = Field(default_factory=list)
    """Checks on the workspace after the agent stops (files, SQLite, commands)."""
    tools: list[str] | None = None
    """Tools beyond the read tools for this task; replaces the suite's list when given."""
    expect_citations: list[str] | None = Field(default=None, min_length=1)
    """Files of the workspace; the answer must cite at least one, and every quote must hold."""
    group: str | None = Field(default=None, min_length=1)
    """Tasks that are not independent (the document they depend on): `--cluster group`
    makes the uncertainty cluster-robust over groups."""
    split: Split | None = None
    """dev (tune against it) or test (held out); replaces the suite's split when given."""

    @field_validator("id")
    @classmethod
    def _id_is_safe(cls, value: str) -> str:
        if not TASK_ID_PATTERN.match(value):
            raise ValueError("use only letters, digits, '.', '_' and '-'")
        return value

    @field_validator("expect_regex")
    @classmethod
    def _regex_compiles(cls, value: str | None) -> str | None:
        return compiling_pattern(value)

    @field_validator("expect_citations")
    @classmethod
    def _cited_inside(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else [inside_path(file) for file in value]


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
    tools: list[str] | None = None
    """Tools beyond the read tools that every task grants, e.g. ["write_file", "edit_file"]."""
    split: Split | None = None
    """dev or test for every task that does not say otherwise; `run --split` selects one."""

    def split_of(self, task: Task) -> str | None:
        """The split ``task`` belongs to: its own, else the suite's."""
        return task.split or self.split

    def tools_for(self, task: Task) -> list[str]:
        """The extra tools an agent gets for ``task``: the task's list, else the suite's."""
        granted = task.tools if task.tools is not None else self.tools
        return list(granted or [])


class Checks(Strict):
    """The outcome of every named check for one attempt; passed needs all of them.

    The first seven fields are the course harness's, in its order and with its meaning: a
    check the task does not ask for holds (``regex_ok = True if not pattern``).
    """

    missing: list[str]
    """Strings of expect_in_answer absent from the answer."""
    forbidden: list[str]
    """Strings of expect_not_in_answer present in the answer."""
    regex_ok: bool
    """Whether expect_regex matched; true when the task has no pattern."""
    tool_ok: bool
    """Whether expect_tool was used; true when the task names no tool."""
    within_steps: bool
    """Whether the steps were within max_steps; true when the task has no limit."""
    tools_used: list[str]
    """Every trajectory record's ``tool``, in order, repeats included (deduplicated in
    files of schema 2 and older)."""
    passed: bool
    """True when every check holds."""
    within_tokens: bool = True
    """Whether the tokens were within max_tokens; true when the task has no limit."""
    within_seconds: bool = True
    """Whether the wall time was within max_seconds; true when the task has no limit."""
    within_cost: bool = True
    """Whether the attempt's cost was within --max-cost-per-task; true without that limit,
    or when the cost is unknown (separate prices and no prompt/completion split)."""
    citations_ok: bool = True
    """Whether every citation held and one named an expected file; true when the task
    has no expect_citations."""
    bad_citations: list[BadCitation] = Field(default_factory=list)
    """Citations the starting workspace does not bear out, on every task."""
    state: list[StateOutcome] = Field(default_factory=list)
    """Each expect_state check's outcome, in the task's order."""

    @model_validator(mode="after")
    def _passed_needs_state(self) -> Checks:
        if self.passed and not all(outcome.ok for outcome in self.state):
            raise ValueError("passed is true while a state check failed")
        return self


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
    seconds: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """The agent's own timing, which the row records as the course does; the limits are
    judged on the harness's clock."""
    stopped: str = ""
    """Why the agent stopped (a StopReason for the shipped agents); empty when it does
    not say, as the course records it."""
    trajectory: list[dict[str, Any]] = Field(default_factory=list)
    """The agent's JSON records, written after the meta line."""
    roles: dict[str, int] | None = None
    """Tokens per role, for multi-role agents."""
    citations: list[Citation] = Field(default_factory=list)
    """The passages the answer rests on, each verified against the starting workspace."""
