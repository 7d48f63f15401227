"""Find an agent from an --agent spec and call it under the entry-point contract.

Forms: a Python file path, ``package.module:object``, ``builtin:NAME``. The agent is one
callable, ``run_task(task, options) -> dict``, with optional ``build(options)``,
``close()`` and ``SCAFFOLD_NAME``.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import math
import os
import sys
import sysconfig
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from agent_eval.errors import AgentLoadError

if TYPE_CHECKING:
    from agent_eval.records import AgentReply

MAX_ANSWER_CHARS = 100_000
"""Longer answers are an agent error: a dump, not an answer, and a hazard for every file."""
MAX_FRAMES = 8
"""A crash's traceback keeps at most this many of the agent's frames, the innermost."""
MAX_CODE_CHARS = 200
"""A frame's source line is cut to this many characters."""


class AgentMisbehaved(Exception):
    """run_task returned something outside the contract; the attempt is an agent_error."""


@dataclass(frozen=True)
class Agent:
    """A loaded entry point: the contract's callables and the name reports use."""

    entry_point: str
    scaffold: str
    run_task: Callable[[str, dict[str, Any]], Any]
    build: Callable[[dict[str, Any]], Any] | None
    close: Callable[[], Any] | None

    @property
    def facts(self) -> AgentFacts:
        module = getattr(self.run_task, "__module__", None)
        return AgentFacts(self.entry_point, self.scaffold, module)


@dataclass(frozen=True)
class AgentFacts:
    """What the harness knows of an agent without holding its code (agents/facts.py)."""

    entry_point: str
    scaffold: str
    """The name reports use: SCAFFOLD_NAME, else the file's or object's name."""
    run_task_module: str | None
    """Where run_task is defined: a user's file that re-exports a shipped agent's names
    runs that shipped agent."""


def load_agent(spec: str) -> Agent:
    """Import the agent an --agent value names, or raise AgentLoadError saying why."""
    target = _import_target(spec)
    run_task = getattr(target, "run_task", None)
    if not callable(run_task):
        raise AgentLoadError(
            f"agent {spec}: has no callable run_task(task, options); define one that "
            f"returns a dict with answer, steps and tokens"
        )
    name = getattr(target, "SCAFFOLD_NAME", None)
    if not isinstance(name, str) or not name:
        name = Path(spec.split(":")[-1]).stem if ":" not in spec else spec.split(":")[-1]
    build, close = getattr(target, "build", None), getattr(target, "close", None)
    return Agent(
        spec,
        name,
        run_task,
        build if callable(build) else None,
        close if callable(close) else None,
    )


def anchored(spec: str) -> str:
    """``spec`` with a relative agent file made absolute: the same agent for a process
    whose current folder is another."""
    if spec.startswith(("cmd:", "builtin:")) or not (spec.endswith(".py") or Path(spec).is_file()):
        return spec
    return str(Path(spec).resolve())


def _import_target(spec: str) -> Any:
    if spec.startswith("cmd:"):
        from agent_eval.agents.command_agent import CommandAgent

        return CommandAgent(spec.removeprefix("cmd:"))
    if spec.startswith("builtin:"):
        from agent_eval.agents import BUILTIN_AGENTS

        name = spec.removeprefix("builtin:")
        if name not in BUILTIN_AGENTS:
            known = ", ".join(f"builtin:{n}" for n in sorted(BUILTIN_AGENTS))
            raise AgentLoadError(f"agent {spec}: no such shipped agent (shipped: {known})")
        return _import_target(BUILTIN_AGENTS[name])
    path = Path(spec)
    if spec.endswith(".py") or path.is_file():
        if not path.is_file():
            raise AgentLoadError(f"agent {spec}: no such file; check the path")
        return _import_file(path)
    module_name, _, attr = spec.partition(":")
    here = os.getcwd()
    if here not in sys.path:  # as `python -m` does: the current folder's packages import
        sys.path.insert(0, here)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise AgentLoadError(
            f"agent {spec}: cannot import {module_name} from {here} or the installed "
            f"packages ({exc}); run from the folder that holds it, or give a .py file path, "
            f"package.module:object or builtin:NAME"
        ) from None
    if not attr:
        return module
    if not hasattr(module, attr):
        raise AgentLoadError(f"agent {spec}: module {module_name} has no attribute {attr}")
    return getattr(module, attr)


def _import_file(path: Path) -> ModuleType:
    """Import a file as a module, with its folder on sys.path for its own imports."""
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = "agent_eval_user_" + "".join(c if c.isalnum() else "_" for c in path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise AgentLoadError(f"agent {path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise AgentLoadError(f"agent {path}: importing it failed: {exc!r}") from exc
    return module


def agent_frames(exc: BaseException) -> list[dict[str, Any]]:
    """The frames of ``exc``'s traceback in the agent's own files, outermost first, each
    ``{file, line, function, code}``: what a student needs to find the line that raised.

    The first frame is the harness's own call of run_task and is left out, as are the
    standard library's, installed packages' and agent-eval's (its tools and model client);
    the shipped agents' own files count as an agent's (but not the adapter that runs a
    ``cmd:`` agent's process, whose own traceback is in its stderr log). When no frame is
    left and the agent is an installed package, its innermost frame is kept, so there is
    a place to look; otherwise the list is empty.
    """
    frames = traceback.extract_tb(exc.__traceback__)[1:]
    own = [frame for frame in frames if _kind(frame.filename) == "agent"]
    if not own:
        own = [frame for frame in frames if _kind(frame.filename) == "installed"][-1:]
    here = Path.cwd()
    return [
        {
            "file": _shown(frame.filename, here),
            "line": frame.lineno or 0,
            "function": frame.name,
            "code": (frame.line or "")[:MAX_CODE_CHARS],
        }
        for frame in own[-MAX_FRAMES:]
    ]


_PACKAGE = Path(__file__).resolve().parent.parent
"""agent-eval's own package folder; its agents/ subfolder holds the shipped agents."""
_STDLIB = tuple({Path(sysconfig.get_paths()[k]).resolve() for k in ("stdlib", "platstdlib")})
_INSTALLED = tuple({Path(sysconfig.get_paths()[k]).resolve() for k in ("purelib", "platlib")})


def _kind(filename: str) -> str:
    """``agent``, ``harness`` (agent-eval's own), ``installed`` (other packages) or
    ``stdlib``."""
    if filename.startswith("<"):  # <frozen ...> is Python's own; <string> is exec'd code
        return "stdlib" if filename.startswith("<frozen") else "agent"
    path = Path(filename).resolve()
    if path.is_relative_to(_PACKAGE / "agents") and path.name != "command_agent.py":
        return "agent"
    if path.is_relative_to(_PACKAGE):
        return "harness"
    if any(path.is_relative_to(p) for p in _INSTALLED):
        return "installed"
    if any(path.is_relative_to(p) for p in _STDLIB):
        return "stdlib"
    return "agent"


def _shown(filename: str, here: Path) -> str:
    """A frame's file as a user names it: relative to the current folder when inside it."""
    path = Path(filename)
    if path.is_absolute() and path.is_relative_to(here):
        return str(path.relative_to(here))
    return filename


def coerce_reply(value: Any) -> AgentReply:
    """Validate what run_task returned, coercing harmless numeric forms.

    Raises AgentMisbehaved with a one-line reason for anything outside the contract.
    """
    # Imported here: a worker that only loads and runs the agent stays free of pydantic,
    # which makes each copy of it cheaper (see run/executors/agent_host.py).
    from pydantic import ValidationError

    from agent_eval.records import AgentReply

    if not isinstance(value, dict):
        raise AgentMisbehaved(f"run_task returned {type(value).__name__}, not a dict")
    missing = [key for key in ("answer", "steps", "tokens") if key not in value]
    if missing:
        raise AgentMisbehaved(f"run_task's dict lacks {', '.join(missing)}")
    if not isinstance(value["answer"], str):
        raise AgentMisbehaved(f"answer is {type(value['answer']).__name__}, not a string")
    if len(value["answer"]) > MAX_ANSWER_CHARS:
        raise AgentMisbehaved(
            f"answer has {len(value['answer'])} characters, over {MAX_ANSWER_CHARS}"
        )
    fields = {key: value[key] for key in AgentReply.model_fields if key in value}
    for key in ("steps", "tokens", "prompt_tokens", "completion_tokens"):
        if key in fields and fields[key] is not None:
            fields[key] = _as_count(key, fields[key])
    if isinstance(fields.get("seconds"), int) and not isinstance(fields["seconds"], bool):
        fields["seconds"] = float(fields["seconds"])
    trajectory = fields.get("trajectory", [])
    if not isinstance(trajectory, list) or not all(isinstance(r, dict) for r in trajectory):
        raise AgentMisbehaved("trajectory must be a list of JSON objects")
    forged = next((n for n, r in enumerate(trajectory, 1) if r.get("type") == "score"), None)
    if forged is not None:  # the verdict's record, which every reader takes as the harness's
        raise AgentMisbehaved(
            f"trajectory record {forged} is a score record, which only the harness writes; "
            f"give the agent's own record another type"
        )
    try:
        json.dumps(trajectory, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise AgentMisbehaved(f"trajectory is not JSON-serialisable ({exc})") from None
    try:
        return AgentReply.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise AgentMisbehaved(f"{where}: {first['msg']}") from None


def _as_count(key: str, raw: Any) -> int:
    """An integer count from an int, an integral float or a digit string."""
    if isinstance(raw, bool):
        raise AgentMisbehaved(f"{key} is a boolean, not a count")
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float) and math.isfinite(raw) and raw.is_integer():
        return int(raw)
    if isinstance(raw, str) and raw.strip().isdigit():
        return int(raw.strip())
    raise AgentMisbehaved(f"{key} is {raw!r}, not a whole number")
