"""Read a suite file, report every problem in it at once, and hash its task content."""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agent_eval import SHIPPED_SUITES
from agent_eval.errors import SuiteError
from agent_eval.records import (
    FILE_VERBS,
    CommandCheck,
    FileContains,
    FileEquals,
    FileExists,
    FileNotContains,
    FileUnchanged,
    OnlyChanged,
    SqliteCheck,
    Strict,
    Suite,
    Task,
)

SHIPPED_DIR = Path(SHIPPED_SUITES)
SHIPPED_FILES = {
    "part26": "part26/agent-tasks.json",
    "ops-state": "ops-state/ops-state.json",
    "cited": "cited/cited.json",
}
"""Shipped suites by name; each folder holds the suite file and its `workspace/` documents."""

SUITE_FIELDS = tuple(Suite.model_fields)
TASK_FIELDS = tuple(Task.model_fields)

AGENT_TOOLS = (
    "search_documents",
    "read_file",
    "run_command",
    "write_file",
    "edit_file",
    "query_database",
)
"""Tool names a suite may grant. The suite package must not import the tools package
(dependencies point one way), so a test keeps this equal to its READ_TOOLS + WRITE_TOOLS."""

STATE_KEYS: dict[str, tuple[str, ...]] = {
    "file": ("file", *FILE_VERBS),
    "only_changed": ("only_changed",),
    "sqlite": ("sqlite", "query", "equals", "equals_rows"),
    "command": ("command", "exit_code", "with_files", "timeout"),
}
"""The keys each kind of state check accepts, by the key that names its kind."""
ALL_STATE_KEYS = tuple(dict.fromkeys(key for keys in STATE_KEYS.values() for key in keys))
STATE_MODELS: dict[str, type[Strict]] = {
    model.kind: model
    for model in (
        FileContains,
        FileNotContains,
        FileExists,
        FileEquals,
        FileUnchanged,
        OnlyChanged,
        SqliteCheck,
        CommandCheck,
    )
}


@dataclass(frozen=True)
class LoadedSuite:
    """A validated suite with where it came from and what identifies its content."""

    suite: Suite
    path: Path
    hash: str
    documents: Path | None
    """The folder copied into each attempt's workspace, when the suite has one."""
    shipped: str | None = None
    """The shipped name (part26...) when it was loaded by name."""
    same_as: str | None = None
    """The shipped suite whose task content this file has (a copy of its file, such as
    the lesson's agent-tasks.json); its documents are this suite's documents."""


def shipped_suites() -> dict[str, Path]:
    """Map each shipped suite's name to its file."""
    return {name: SHIPPED_DIR / rel for name, rel in SHIPPED_FILES.items()}


def suite_hash(suite: Suite, base: Path | None = None) -> str:
    """A hash of the canonical task content: sorted keys, defaults left out.

    Leaving defaults out keeps the hash stable when a later version of the format adds an
    optional field, so only a real change of content changes it. Granted tools count,
    and so do the files command checks bring in (``with_files``, found under ``base``,
    the suite file's folder): a changed hidden test changes the verdicts as surely as a
    changed task text.
    """
    tasks: Any = [task.model_dump(mode="json", exclude_defaults=True) for task in suite.tasks]
    extras: dict[str, Any] = {}
    if suite.tools is not None:
        extras["tools"] = suite.tools
    if base is not None:
        folders = sorted({c.with_files for t in suite.tasks for c in t.expect_state
                          if isinstance(c, CommandCheck) and c.with_files})  # fmt: skip
        if folders:
            extras["with_files"] = {folder: _folder_digest(base / folder) for folder in folders}
    content = {"tasks": tasks, **extras} if extras else tasks  # plain suites keep their hashes
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def _folder_digest(folder: Path) -> str:
    """One hash of every file's path and bytes under ``folder``."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode("utf-8") + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def load_suite(spec: str | Path) -> LoadedSuite:
    """Load a suite by shipped name or path; raise SuiteError listing every problem."""
    shipped = shipped_suites()
    name = str(spec)
    if name in shipped:
        path, shipped_name = shipped[name], name
    else:
        path, shipped_name = Path(spec), None
        if not path.is_file():
            known = ", ".join(sorted(shipped))
            raise SuiteError(
                f"suite {name}: no such file and no shipped suite of that name "
                f"(shipped suites: {known})"
            )
    label = path.name
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise SuiteError(f"suite {label}: not UTF-8 text; save it as UTF-8 JSON") from None
    except json.JSONDecodeError as exc:
        raise SuiteError(
            f"suite {label}: not valid JSON at line {exc.lineno} column {exc.colno} "
            f"({exc.msg}); fix the syntax there"
        ) from None
    problems = validate(raw, label, path.parent)
    if problems:
        count = f"{len(problems)} problem{'s' if len(problems) > 1 else ''}"
        raise SuiteError(f"suite {label}: {count}; first: {problems[0]}", problems)
    suite = Suite.model_validate(raw)
    suite_id = suite_hash(suite, path.parent)
    documents, same_as = _documents(suite, path), None
    if documents is None and shipped_name is None:
        same_as = _shipped_with_hash(suite_id)
        if same_as is not None:
            documents = shipped[same_as].parent / "workspace"
    problems = [f"suite {label}, {msg}" for msg in _citation_problems(suite, documents)]
    if problems:
        raise SuiteError(f"suite {label}: {len(problems)} problem(s); first: {problems[0]}",
                         problems)  # fmt: skip
    return LoadedSuite(suite, path, suite_id, documents, shipped_name, same_as)


def _shipped_with_hash(wanted: str) -> str | None:
    """The shipped suite whose task content hashes to ``wanted``, if one does."""
    for name, path in shipped_suites().items():
        suite = Suite.model_validate(json.loads(path.read_text(encoding="utf-8")))
        if suite_hash(suite, path.parent) == wanted:
            return name
    return None


def _citation_problems(suite: Suite, documents: Path | None) -> list[str]:
    """Files named by expect_citations that the suite's own documents lack (a suite whose
    documents come from --workspace is checked when its attempts are scored)."""
    if documents is None:
        return []
    return [
        f"task {task.id}: field 'expect_citations': no file {file!r} in {documents.name}/; "
        "name a file of the suite's documents"
        for task in suite.tasks
        for file in task.expect_citations or []
        if not (documents / file).is_file()
    ]


def validate(raw: Any, label: str, base: Path | None = None) -> list[str]:
    """Every problem in a parsed suite, one line each, naming the task, field and fix.

    ``base`` is the suite file's folder; when given, each command check's ``with_files``
    folder must exist there.
    """
    if not isinstance(raw, dict):
        return [f"suite {label}: the top level must be a JSON object with name, version, tasks"]
    problems = [
        f"suite {label}: {msg}" for msg in _field_problems(raw, Suite, SUITE_FIELDS, "tasks")
    ]
    problems += [f"suite {label}: {msg}" for msg in _tool_problems(raw.get("tools"))]
    tasks = raw.get("tasks")
    if not isinstance(tasks, list):
        if "tasks" in raw:
            problems.append(f"suite {label}: field 'tasks' must be a list of task objects")
        return problems
    if not tasks:
        problems.append(f"suite {label}: field 'tasks' is empty; add at least one task")
    seen: dict[str, int] = {}
    for number, task in enumerate(tasks, start=1):
        where = f"task {task.get('id')}" if isinstance(task, dict) and task.get("id") else ""
        where = f"suite {label}, {where or f'task #{number}'}"
        if not isinstance(task, dict):
            problems.append(f"{where}: must be a JSON object")
            continue
        found = _field_problems(task, Task, TASK_FIELDS, "expect_state")
        found += _tool_problems(task.get("tools"))
        found += _state_problems(task.get("expect_state", []), base)
        problems += [f"{where}: {msg}" for msg in found]
        task_id = task.get("id")
        if isinstance(task_id, str):
            if task_id in seen:
                problems.append(
                    f"{where}: duplicate id (also task #{seen[task_id]}); give each task its own id"
                )
            seen.setdefault(task_id, number)
    return problems


def _tool_problems(tools: Any) -> list[str]:
    """Granted tool names that no agent knows; type errors are left to the model."""
    if not isinstance(tools, list):
        return []
    return [
        f"field 'tools': unknown tool '{name}'{_hint(name, AGENT_TOOLS)}"
        for name in tools
        if isinstance(name, str) and name not in AGENT_TOOLS
    ]


def _state_problems(checks: Any, base: Path | None) -> list[str]:
    """Problems of expect_state, each prefixed with the check's position."""
    if not isinstance(checks, list):
        return ["field 'expect_state': must be a list of check objects"]
    problems = []
    for number, check in enumerate(checks):
        problems += [f"expect_state[{number}]: {msg}" for msg in _check_problems(check, base)]
    return problems


def _check_problems(check: Any, base: Path | None) -> list[str]:
    """One state check: its kind, unknown keys with a suggestion, then its own model."""
    if not isinstance(check, dict):
        return ['must be an object such as {"file": "notes.md", "contains": "30 days"}']
    anchors = [key for key in STATE_KEYS if key in check]
    if len(anchors) > 1:
        named = " and ".join(f"'{key}'" for key in anchors)
        return [f"mixes {named}; give one kind of check per entry"]
    known = STATE_KEYS[anchors[0]] if anchors else ALL_STATE_KEYS
    problems = [f"unknown key '{key}'{_hint(key, known)}" for key in check if key not in known]
    if problems:
        return problems
    if not anchors:
        return ["not a state check; start it with 'file', 'only_changed', 'sqlite' or 'command'"]
    verbs = [verb for verb in FILE_VERBS if verb in check]
    if anchors[0] == "file" and len(verbs) != 1:
        if verbs:
            return [f"gives {', '.join(verbs)}; give one per check and split the rest"]
        return [f"a 'file' check needs one of {', '.join(FILE_VERBS)}"]
    kind = verbs[0] if anchors[0] == "file" else anchors[0]
    try:
        parsed = STATE_MODELS[kind].model_validate(check)
    except ValidationError as exc:
        return [_state_error(error) for error in exc.errors()]
    if isinstance(parsed, CommandCheck) and parsed.with_files and base is not None:
        folder = base / parsed.with_files
        if not folder.is_dir():
            return [
                f"with_files '{parsed.with_files}' is not a folder next to the suite file "
                f"(looked for {folder}); create it or fix the path"
            ]
        if not folder.resolve().is_relative_to(base.resolve()):
            return [
                f"with_files '{parsed.with_files}' leads outside the suite's folder (a link); "
                f"give a folder inside it"
            ]
    return []


def _state_error(error: Any) -> str:
    """A state check's pydantic error, in the words of a suite author."""
    field = ".".join(str(part) for part in error["loc"])
    if not field:  # a rule about the whole check, such as equals against equals_rows
        return _explain(error)
    if field.startswith("command") and error["type"] in ("list_type", "string_type"):
        return (
            "field 'command': must be a list of strings, the program and its arguments, "
            'for example ["python", "-m", "unittest"]'
        )
    if error["type"] == "literal_error" and field == "unchanged":
        return "field 'unchanged': only true has a meaning; to require a change, check content"
    if error["type"] == "list_type" and field == "equals_rows":
        return "field 'equals_rows': must be a list of rows, each a list, e.g. [[\"db-2\", 3]]"
    return f"field '{field}': {_explain(error)}"


def _hint(key: str, known: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else f" (known: {', '.join(known)})"


def _field_problems(
    raw: dict[str, Any], model: type[Suite] | type[Task], known: tuple[str, ...], *skip: str
) -> list[str]:
    """Unknown fields with a suggestion, then the model's own type and value errors."""
    problems = []
    for key in raw:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            hint = f" (did you mean '{close[0]}'?)" if close else f" (known: {', '.join(known)})"
            problems.append(f"unknown field '{key}'{hint}")
    checked = {k: v for k, v in raw.items() if k in known and k not in skip}
    if model is Suite:
        checked["tasks"] = []
    try:
        model.model_validate(checked)
    except ValidationError as exc:
        for error in exc.errors():
            field = ".".join(str(part) for part in error["loc"]) or "(object)"
            problems.append(f"field '{field}': {_explain(error)}")
    return problems


WANTED = {
    "string_type": "a string",
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "dict_type": "an object",
}


def _explain(error: Any) -> str:
    """A pydantic error in the words of a suite author, with the fix."""
    kind, msg = error["type"], error["msg"]
    if kind == "missing":
        return "is required; add it"
    if kind == "list_type":
        return 'must be a list of strings, for example ["4000"]'
    if kind in WANTED:
        return f"must be {WANTED[kind]}, not {type(error.get('input')).__name__}"
    if kind == "value_error":
        return str(msg).removeprefix("Value error, ")
    if kind == "literal_error":
        return "must be " + str(msg).removeprefix("Input should be ")
    return str(msg)


def _documents(suite: Suite, path: Path) -> Path | None:
    """The folder each attempt starts from: the one the suite names, or shipped documents."""
    if suite.workspace:
        named = (path.parent / suite.workspace).resolve()
        if named.is_dir() and named.is_relative_to(path.parent.resolve()):
            return named
    sibling = path.parent / "workspace"
    if path.resolve().is_relative_to(SHIPPED_DIR) and sibling.is_dir():
        return sibling
    return None
