"""What travels to a Ray cluster: the files an attempt needs, gathered in one folder that
Ray ships to every node as the runtime_env ``working_dir``.

- the agent: a ``.py`` file's folder (its sibling modules are importable), or, for a
  ``cmd:`` agent, each relative path its command names (kept at that path, so the
  command runs unchanged); shipped and installed agents travel as their name only;
- the workspace every attempt starts from, the files command checks bring in
  (``with_files``) and the ``--index``.

Secrets never travel in this folder: they go as environment variables.
"""

from __future__ import annotations

import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agent_eval.records import CommandCheck

if TYPE_CHECKING:
    from agent_eval.run.prepared import PreparedRun

SKIPPED = frozenset({".git", ".hg", ".venv", "venv", "__pycache__", "node_modules",
                     ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox"})  # fmt: skip
"""Folders never shipped: version control, environments and caches."""


@dataclass(frozen=True)
class Travel:
    """The gathered folder, and where each input is inside it (relative paths)."""

    root: Path
    agent_file: str | None
    """A .py agent's file; None when the --agent value is the same on the nodes."""
    source: str | None
    """The starting workspace."""
    suite_dir: str
    """Stands for the suite file's folder: command checks' with_files are in it."""
    index: str | None

    def paths(self) -> dict[str, str | None]:
        """The inputs inside the working_dir, as a slot group resolves them."""
        return {"source": self.source, "index": self.index, "suite_dir": self.suite_dir,
                "agent_file": self.agent_file}  # fmt: skip


def gather(prepared: PreparedRun, root: Path) -> Travel:
    """Copy what the attempts need into ``root`` (an empty folder)."""
    config = prepared.config
    skip = _Skip({config.trajectory_dir.resolve(), *(
        [config.out.resolve(), prepared.journal_path.resolve()] if config.out and
        prepared.journal_path else [])})  # fmt: skip
    agent = _gather_agent(config.agent, root, skip)
    source = None
    if prepared.source is not None:
        _copy(prepared.source, root / "workspace", skip)
        source = "workspace"
    suite_dir = prepared.loaded.path.parent
    folders = {c.with_files for t in prepared.tasks for c in t.expect_state
               if isinstance(c, CommandCheck) and c.with_files}  # fmt: skip
    for folder in sorted(folders):
        _copy(suite_dir / folder, root / "suite" / folder, skip)
    (root / "suite").mkdir(exist_ok=True)
    index = None
    if config.index is not None:
        _copy(config.index, root / "index", skip)
        index = "index"
    return Travel(root, agent, source, "suite", index)


def _gather_agent(spec: str, root: Path, skip: _Skip) -> str | None:
    if spec.startswith("cmd:"):
        for word in shlex.split(spec.removeprefix("cmd:")):
            path = Path(word)
            if path.is_absolute() or ".." in path.parts or not path.exists():
                continue  # a program on the nodes' PATH, or a path they must have
            # A script's folder travels with it, for what the script loads beside it.
            kept = path if path.is_dir() or path.parent == Path() else path.parent
            _copy(kept, root / kept, skip)
        return None
    path = Path(spec)
    if spec.startswith("builtin:") or not (spec.endswith(".py") or path.is_file()):
        return None  # shipped with agent-eval, or a module installed on the nodes
    _copy(path.resolve().parent, root / "agent", skip)
    return f"agent/{path.name}"


class _Skip:
    """copytree's ignore: version control, caches, and this run's own outputs."""

    def __init__(self, outputs: set[Path]) -> None:
        self._outputs = outputs

    def __call__(self, folder: str, names: list[str]) -> set[str]:
        base = Path(folder).resolve()
        return {n for n in names if n in SKIPPED or base / n in self._outputs}


def _copy(source: Path, target: Path, skip: _Skip) -> None:
    if source.is_dir():
        shutil.copytree(source, target, ignore=skip, dirs_exist_ok=True, symlinks=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
