"""Trajectory files, and their one owner: the record kinds, the file names, writing, reading.

A trajectory is one attempt's JSON-lines file. Line 1 is the meta line,
``{"meta": {...}}``; every further line is one record, an object whose ``type`` says its
kind: ``model`` (a model reply), ``tool`` (a tool call and its result), ``route`` (the
multi-agent router's decision), ``stop`` (why the agent stopped) and, last, ``score``
(the harness's verdict). Records of any other kind, or with no ``type``, are an agent's
own (the course harness writes whatever its agent returned) and are kept as they are.

The records are TypedDicts, so the agent's process builds plain dicts without pydantic:
this module loads only the standard library and ``errors`` (the writer takes the schema
number from ``records`` on the parent's side). On read, each known record's fields are
checked against the declarations below; extra keys are the agent's to add.
"""

from __future__ import annotations

import json
import os
import re
import types
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import cache
from json import JSONDecodeError
from pathlib import Path
from typing import IO, Any, Literal, NotRequired, TypedDict, Union, get_args, get_origin
from typing import get_type_hints as _hints

from agent_eval.errors import ResultsError

# -- the records -------------------------------------------------------------------------
# Every field but ``type`` may be missing: another agent's records are its own, and only
# what they hold is checked. The reference agents write every field listed.


class Meta(TypedDict):
    """What the meta line says of the attempt (the course harness writes the first five)."""

    scaffold: NotRequired[str]
    """The agent's name."""
    model: NotRequired[str]
    """The model the attempt ran on, as given to --model."""
    task_id: NotRequired[str]
    """The task's id."""
    attempt: NotRequired[int]
    """1-based attempt number within the task."""
    task: NotRequired[str]
    """The task's text, as the agent saw it."""
    schema: NotRequired[int]
    """The results schema the file was written in (absent from the course's files)."""
    router_model: NotRequired[str | None]
    """The multi-agent router's model, when one was given."""
    suite: NotRequired[str]
    """The suite's name."""
    suite_version: NotRequired[str]
    """The suite's version."""
    suite_hash: NotRequired[str]
    """The hash of the suite's content."""
    run_id: NotRequired[str]
    """The run's id, shared with its results file."""
    started: NotRequired[str]
    """When the attempt started, as an ISO-8601 time."""
    ray_node_id: NotRequired[str]
    """The Ray node the attempt ran on, on the Ray executor."""


class MetaLine(TypedDict):
    """A trajectory's first line."""

    meta: Meta
    """What the line says of the attempt."""


class ModelRecord(TypedDict):
    """One model reply: one step."""

    type: Literal["model"]
    """The kind: a model reply."""
    role: NotRequired[str]
    """Which part of the agent asked (``agent``, or a multi-agent role such as ``router``)."""
    model: NotRequired[str]
    """The model that answered, as the endpoint named it."""
    tool_calls: NotRequired[list[str]]
    """The tools the reply asked for, by name, in order."""
    prompt_tokens: NotRequired[int | None]
    """Input tokens of the call, when known."""
    completion_tokens: NotRequired[int | None]
    """Output tokens of the call, when known."""
    seconds: NotRequired[float]
    """How long the call took."""
    content: NotRequired[str | None]
    """The reply's text, cut to the agent's record limit."""
    finish_reason: NotRequired[str | None]
    """Why the endpoint ended the reply (``stop``, ``tool_calls``, ``length``...)."""
    input_from: NotRequired[int]
    """How many leading messages of ``input`` the role's previous call already sent."""
    input: NotRequired[list[Any]]
    """The messages sent after the first ``input_from``, as GenAI messages."""
    t: NotRequired[float]
    """Seconds from the meta line's ``started`` to the call's start, when the agent knows."""


class ToolRecord(TypedDict):
    """One tool call and its result: one step."""

    type: Literal["tool"]
    """The kind: a tool call."""
    tool: NotRequired[str]
    """The tool's name."""
    args: NotRequired[dict[str, Any]]
    """The arguments it was called with."""
    error: NotRequired[bool]
    """Whether the call failed (or was refused)."""
    result: NotRequired[str]
    """What the tool returned, cut to the agent's record limit."""
    seconds: NotRequired[float]
    """How long the call took."""
    call_id: NotRequired[str]
    """The id of the model's request for the call, which its result quotes back."""
    role: NotRequired[str]
    """The role whose request this carried out, when the agent says."""
    t: NotRequired[float]
    """Seconds from the meta line's ``started`` to the call's start, when the agent knows."""


class RouteRecord(TypedDict):
    """The multi-agent router's decision."""

    type: Literal["route"]
    """The kind: a route."""
    route: NotRequired[str]
    """The route taken."""
    reason: NotRequired[str]
    """Why, in the router's words."""
    t: NotRequired[float]
    """Seconds from the meta line's ``started`` to the decision, when the agent knows."""


class StopRecord(TypedDict):
    """Why the agent stopped."""

    type: Literal["stop"]
    """The kind: the stop."""
    reason: NotRequired[str]
    """The stop reason (``finished``, ``turn_limit``, ``model_error``, ``agent_error``...)."""
    detail: NotRequired[str | None]
    """What the agent or the harness said of it."""
    traceback: NotRequired[list[dict[str, Any]]]
    """Where run_task raised, in the agent's own frames (written by the harness)."""


class ScoreRecord(TypedDict):
    """The harness's verdict, the last line of a file the harness wrote."""

    type: Literal["score"]
    """The kind: the score."""
    passed: NotRequired[bool]
    """The verdict."""
    failure_class: NotRequired[str]
    """passed, wrong_answer, over_budget, agent_error, infra_error, replay_mismatch."""
    answer: NotRequired[str]
    """The final answer."""
    checks: NotRequired[dict[str, Any]]
    """Every check's outcome, as the results row holds them."""
    steps: NotRequired[int]
    """Steps the agent reported."""
    tokens: NotRequired[int]
    """Tokens the agent reported."""
    seconds: NotRequired[float]
    """Wall time of the attempt, measured by the harness."""
    stopped: NotRequired[str | None]
    """Why the attempt stopped."""
    error: NotRequired[str | None]
    """What went wrong, for agent_error, over_budget and infra_error."""


KnownRecord = ModelRecord | ToolRecord | RouteRecord | StopRecord | ScoreRecord
"""A record of a kind this module declares."""
Record = KnownRecord | dict[str, Any]
"""Any record after the meta line: a known kind, or an agent's own."""
KINDS: dict[str, type[Any]] = {
    "model": ModelRecord,
    "tool": ToolRecord,
    "route": RouteRecord,
    "stop": StopRecord,
    "score": ScoreRecord,
}
"""Each known ``type`` and its declaration."""
STEP_KINDS = ("model", "tool")
"""The kinds that are steps, as attempts count them: one per model reply and one per tool
result. Routes, stops and the score are records between steps."""

# -- file names --------------------------------------------------------------------------

UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_PART = 60
TRAJECTORY_NAME = re.compile(r"-r[0-9]+(\.try[0-9]+)?\.jsonl\Z")
"""How a trajectory file's name ends: ``-r{attempt}.jsonl``, or ``-r{attempt}.try{n}.jsonl``
for a try retried after an infra error. The course harness's names end the same way."""


def safe_part(value: str) -> str:
    """One file-name part: only letters, digits, '.', '_' and '-', never '.' or '..'.

    Slashes, spaces and anything else become '_', so `local/answer` is `local_answer`,
    and leading dots are dropped so a part can neither climb out nor hide.
    """
    return UNSAFE.sub("_", value)[:MAX_PART].strip("_.") or "_"


def trajectory_name(stamp: str, scaffold: str, model: str, task_id: str, attempt: int) -> str:
    """`{stamp}-{scaffold}-{model}-{task_id}-r{attempt}.jsonl`, every part sanitised."""
    parts = (safe_part(stamp), safe_part(scaffold), safe_part(model), safe_part(task_id))
    return "-".join(parts) + f"-r{attempt}.jsonl"


def is_trajectory_name(name: str) -> bool:
    """Whether a file name is a trajectory's (never a results file, journal or labbook)."""
    return TRAJECTORY_NAME.search(name) is not None


def trajectory_path(results_path: Path, named: str | None) -> Path | None:
    """The file a results row's ``trajectory_file`` names: relative names are relative to
    the results file's folder. None when the row names none."""
    if not named:
        return None
    candidate = Path(named)
    return candidate if candidate.is_absolute() else results_path.parent / candidate


# -- writing -----------------------------------------------------------------------------

_encode = json.JSONEncoder(ensure_ascii=False, default=str).encode


def trajectory_text(meta: Meta, records: Iterable[Record], score: ScoreRecord) -> str:
    """A trajectory file's text: the meta line (with the schema first), the agent's
    records, the score line."""
    from agent_eval.records import RESULTS_SCHEMA  # the parent's side only: it loads pydantic

    lines = [{"meta": {"schema": RESULTS_SCHEMA, **meta}}, *records, score]
    return "".join(_encode(record) + "\n" for record in lines)


def write_new_file(folder: Path, name: str, text: str) -> Path:
    """Write ``text`` to ``folder/name``; return the path.

    ``name`` must be one plain file name (see trajectory_name), and the file is opened
    without following a symbolic link, so the write cannot land outside ``folder``.
    """
    if "/" in name or name in {"", ".", ".."}:
        raise ValueError(f"file name {name!r} would leave {folder}")
    path = folder / name
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
    with open(os.open(path, flags, 0o644), "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


# -- reading -----------------------------------------------------------------------------


class TrajectoryError(ResultsError):
    """A trajectory file holds a line that is not a record: named by file and line."""

    @classmethod
    def at(cls, name: str, number: int, why: str) -> TrajectoryError:
        """The error for line ``number`` of file ``name``, with the fix."""
        return cls(
            f"trajectory {name}:{number}: {why} (the file is damaged, or is not a trajectory "
            "agent-eval or the course harness wrote; run the attempt again to write it anew)"
        )


@dataclass(frozen=True)
class Limits:
    """How much of a JSON-lines file is read; None is no limit."""

    records: int | None = None
    """Lines kept (the meta line included); the rest are counted and cut."""
    bytes: int | None = None
    """Bytes of kept lines; the rest are counted and cut."""
    line: int | None = None
    """The longest line parsed, in bytes; a longer one is skipped and named."""
    count: int = 1_000_000
    """Lines past the caps counted at most, so that a huge file is not read to its end."""


@dataclass(frozen=True)
class JsonLines:
    """The parsed lines of a JSON-lines file, capped, and what was left out."""

    values: list[tuple[int, Any]]
    """Each kept line's number (1-based) and parsed JSON, in file order."""
    problems: list[str] = field(default_factory=list)
    """What was skipped or cut, each naming the file (and line)."""
    size: int = 0
    """Bytes of the lines kept."""


@dataclass(frozen=True)
class Trajectory:
    """A trajectory as read: its meta line, its records, and what was left out."""

    name: str
    """The file's name, as messages give it."""
    meta: Meta | None
    """The meta line's object; None when the first line is no meta line (tolerant reads)."""
    records: list[Record]
    """Every record after the meta line, in file order."""
    problems: tuple[str, ...] = ()
    """Lines skipped or cut, each naming ``file:line``."""
    size: int = 0
    """Bytes of the lines kept."""

    @property
    def lines(self) -> list[MetaLine | Record]:
        """The file's lines as read: the meta line (when there is one), then the records."""
        head: list[MetaLine | Record] = [] if self.meta is None else [{"meta": self.meta}]
        return head + self.records

    @property
    def problem(self) -> str | None:
        """The problems in one line; None when nothing was left out."""
        return "; ".join(self.problems) or None

    @property
    def score(self) -> ScoreRecord | None:
        """The score record, when the harness wrote one."""
        found = [r for r in self.records if r.get("type") == "score"]
        return found[-1] if found else None  # type: ignore[return-value]


def read_trajectory(
    source: Path | IO[bytes],
    *,
    name: str | None = None,
    limits: Limits | None = None,
    tolerant: bool = False,
) -> Trajectory:
    """A trajectory file's meta line and records, each known record checked.

    ``source`` is a path, or a binary handle already opened (``name`` then names it).
    A last line cut short (a writer stopped mid-line) is skipped and noted in
    ``problems``, as are lines past ``limits``. Any other line that is not a record (not
    JSON, not an object, a known record with a field of the wrong type, a first line that
    is no meta line) raises TrajectoryError naming ``file:line``.

    ``tolerant`` is for a reader that shows what it can: such a line is named in
    ``problems`` instead, and skipped, but for a mistyped record, which is kept as it is.
    """
    with ExitStack() as stack:
        if isinstance(source, Path):
            name = name or source.name
            try:
                handle: IO[bytes] = stack.enter_context(source.open("rb"))
            except OSError as exc:
                why = exc.strerror or type(exc).__name__
                raise ResultsError(f"trajectory {source}: cannot be read ({why})") from None
        else:
            handle = source
        shown = name or "trajectory"
        lines = read_json_lines(handle, shown, limits or Limits(), strict=not tolerant)
    problems = list(lines.problems)
    meta: Meta | None = None
    records: list[Record] = []
    for index, (number, value) in enumerate(lines.values):
        if not isinstance(value, dict):
            why = f"a JSON {type(value).__name__}, not a record object"
            if not tolerant:
                raise TrajectoryError.at(shown, number, why)
            problems.append(f"{shown}:{number}: {why}; skipped")
            continue
        first = index == 0 and "meta" in value
        wrong = _wrong_field(value, first)
        if wrong is not None:
            if not tolerant:
                raise TrajectoryError.at(shown, number, wrong)
            problems.append(f"{shown}:{number}: {wrong}; kept as it is")
        if first:
            meta = value["meta"]
            if not isinstance(meta, dict):  # named above; tolerated as an empty meta line
                meta = Meta()
            continue
        if index == 0 and not tolerant:
            raise TrajectoryError.at(shown, number, _NO_META)
        records.append(value)
    return Trajectory(shown, meta, records, tuple(problems), lines.size)


_NO_META = 'the first line is not a meta line ({"meta": {...}})'


def _wrong_field(value: dict[str, Any], meta_line: bool) -> str | None:
    """Which field of a meta line or a known record does not have its declared type;
    None when all do (an agent's own record is not checked)."""
    kind = "meta" if meta_line else value.get("type")
    if meta_line:
        what, value = "meta line", value["meta"]
        if not isinstance(value, dict):
            return "the meta line's `meta` is not an object"
    elif not isinstance(kind, str) or kind not in KINDS:
        return None  # an agent's own record, kept as it is
    else:
        what = f"{kind} record"
    declared = _declared(kind)
    for key, item in value.items():
        found = declared.get(key)
        if found is not None and not found[0](item):
            return f"the {what}'s `{key}` is {_shown(item)}, not {_named(found[1])}"
    return None


Check = Callable[[Any], bool]


@cache
def _declared(kind: str) -> dict[str, tuple[Check, Any]]:
    """Each field of a kind (or of the meta line): its check and its type, NotRequired
    taken off; worked out on the first read, so that writing never pays for it."""
    hints = _hints(Meta if kind == "meta" else KINDS[kind])
    return {key: (_check(hint), hint) for key, hint in hints.items()}


_SCALARS: dict[Any, tuple[type, ...]] = {
    str: (str,), int: (int,), float: (int, float), bool: (bool,), type(None): (type(None),),
}  # fmt: skip
"""The JSON types a scalar type accepts: parsed JSON holds exact types, so ``type(v) is
int`` refuses true and false, and a float field takes an integer."""


def _check(hint: Any) -> Check:
    """Whether a parsed JSON value has the declared type, as one quick function."""
    if hint is Any:
        return lambda value: True
    options = get_args(hint) if get_origin(hint) in (Union, types.UnionType) else (hint,)
    if all(option in _SCALARS for option in options):
        allowed = frozenset(t for option in options for t in _SCALARS[option])
        return lambda value: type(value) in allowed
    if len(options) > 1:
        checks = [_check(option) for option in options]
        return lambda value: any(check(value) for check in checks)
    origin = get_origin(hint)
    if origin is Literal:
        values = get_args(hint)
        return lambda value: value in values
    if origin is list:
        item = _check(get_args(hint)[0])
        return lambda value: type(value) is list and all(item(v) for v in value)
    if origin is dict:
        return lambda value: type(value) is dict
    raise TypeError(f"a trajectory field of type {hint} has no check")  # a declaration's slip


def _named(hint: Any) -> str:
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return " or ".join(_named(option) for option in get_args(hint))
    if origin is list:
        return f"a list of {_named(get_args(hint)[0])}s"
    names = {str: "text", int: "an integer", float: "a number", bool: "true or false",
             dict: "an object", type(None): "null"}  # fmt: skip
    return names.get(origin or hint, str(hint))


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def read_json_lines(handle: IO[bytes], name: str, limits: Limits, strict: bool = True) -> JsonLines:
    """The lines of a JSON-lines file read from ``handle``, capped by ``limits``.

    Blank lines are passed over. A last line that is not JSON and has no newline (cut
    short while it was written) is skipped and named; any other line that is not JSON
    raises TrajectoryError naming ``name:line``, or, not ``strict``, is skipped and named.
    """
    values: list[tuple[int, Any]] = []
    # lines skipped, by kind of damage: the first one's full reason, and every number
    damaged: dict[str, tuple[str, list[int]]] = {}
    kept = cut = 0
    for number, line in _lines(handle, limits.line):
        if (limits.records is not None and len(values) >= limits.records) or (
            limits.bytes is not None and kept >= limits.bytes
        ):
            cut = 1 + _lines_left(handle, limits.count)
            break
        if line is None:
            why = f"over {limits.line} bytes"
            damaged.setdefault(why, (why, []))[1].append(number)
            continue
        if not line.strip():
            continue
        try:
            values.append((number, json.loads(line)))
        except RecursionError:
            why = "its values nest too deeply to parse"
        except ValueError as exc:
            if not line.endswith(b"\n"):
                why = "the last line is cut short (its writer stopped mid-line)"
                damaged.setdefault(why, (why, []))[1].append(number)
                continue
            said = f"{exc.msg} at column {exc.colno}" if isinstance(exc, JSONDecodeError) else exc
            why = f"not JSON ({said})"
        else:
            kept += len(line)
            continue
        if strict:
            raise TrajectoryError.at(name, number, why)
        damaged.setdefault(why.split(" (")[0], (why, []))[1].append(number)
    problems = [
        f"{name}:{lines[0]}: {why}; skipped"
        + (f" (and {len(lines) - 1} more line(s) like it)" if len(lines) > 1 else "")
        for why, lines in damaged.values()
    ]
    if cut:
        more = "" if cut < limits.count else "at least "
        problems.append(
            f"{name} holds more than is shown: the first {len(values)} records are shown "
            f"and the {more}{cut} line(s) after them were cut"
        )
    return JsonLines(values, problems, kept)


def _lines(handle: IO[bytes], limit: int | None) -> Iterator[tuple[int, bytes | None]]:
    """Each line with its number; None for a line longer than ``limit``, read past."""
    number = 0
    while line := handle.readline(-1 if limit is None else limit + 1):
        number += 1
        if limit is not None and len(line) > limit and not line.endswith(b"\n"):
            while (rest := handle.readline(limit)) and not rest.endswith(b"\n"):
                pass
            yield number, None
            continue
        yield number, line


def _lines_left(handle: IO[bytes], most: int) -> int:
    """How many lines follow in ``handle``, counting at most ``most``."""
    count = 0
    while count < most and (chunk := handle.read(1 << 20)):
        count += chunk.count(b"\n")
    return min(count, most)


def trajectory_excerpt(path: Path | None, limit: int = 20_000) -> str | None:
    """A trajectory file's text as it is, cut to ``limit`` characters (for a page that
    shows it whole); None when there is none or it cannot be read."""
    if path is None:
        return None
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return text if len(text) <= limit else text[:limit] + "\n[... truncated]"
