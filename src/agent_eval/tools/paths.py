"""Workspace confinement: the one place that decides whether a path stays inside.

Every tool resolves every path it is given through :func:`resolve_inside`, so there is a
single rule to audit. The rule resolves symbolic links the way the operating system will
when the file is opened, then requires the result to lie under the resolved workspace.
That one check covers ``..`` traversal, absolute paths, a symlinked file and a symlinked
folder in the middle of a path alike.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from agent_eval.tools.base import ToolArgumentError


class PathRefused(ToolArgumentError):
    """A path argument would leave the workspace, or cannot be resolved safely."""


def workspace_root(workspace: Path) -> Path:
    """The workspace's real location, with its own symlinks (such as a tmp alias) resolved."""
    try:
        root = workspace.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise PathRefused(f"the workspace {workspace} does not exist: {exc}") from exc
    if not root.is_dir():
        raise PathRefused(f"the workspace {workspace} is not a folder")
    return root


def resolve_inside(workspace: Path, raw: str) -> Path:
    """Return the real path that ``raw`` names inside ``workspace``, or raise PathRefused.

    ``raw`` is relative to the workspace. The path need not exist yet (write_file creates
    files), but every part of it that does exist is resolved, so a symlink anywhere along
    the way is judged by where it really points.
    """
    if "\x00" in raw:
        raise PathRefused(f"path {raw!r} contains a NUL byte")
    if not raw.strip():
        raise PathRefused("the path is empty; give a path relative to the workspace")
    if Path(raw).is_absolute():
        raise PathRefused(
            f"path {raw!r} is absolute; only paths relative to the workspace are allowed"
        )
    root = workspace_root(workspace)
    try:
        resolved = (root / raw).resolve(strict=False)
    except (OSError, RuntimeError) as exc:
        # A symlink loop lands here; the OS would refuse it too, so say so plainly.
        raise PathRefused(f"path {raw!r} cannot be resolved: {exc}") from exc
    if resolved == root or resolved.is_relative_to(root):
        return resolved
    if ".." in PurePosixPath(raw).parts:
        raise PathRefused(f"path {raw!r} climbs out of the workspace with '..'; refused")
    raise PathRefused(f"path {raw!r} leads outside the workspace through a symbolic link; refused")


def relative_name(workspace: Path, path: Path) -> str:
    """The workspace-relative name of a resolved ``path``, as the agent should see it."""
    rel = path.relative_to(workspace_root(workspace))
    return rel.as_posix() if rel.parts else "."


def iter_files(workspace: Path, suffixes: Iterable[str]) -> list[Path]:
    """Regular files under ``workspace`` whose names end in one of ``suffixes``, sorted.

    Hidden folders are skipped and symlinked folders are never descended, so a link in
    the workspace cannot pull outside files into a search. A symlinked file is kept only
    when it resolves inside the workspace.
    """
    root = workspace_root(workspace)
    wanted = tuple(s.lower() for s in suffixes)
    found: list[Path] = []
    for folder, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            if name.startswith(".") or not name.lower().endswith(wanted):
                continue
            path = Path(folder) / name
            try:
                real = resolve_inside(root, path.relative_to(root).as_posix())
            except PathRefused:
                continue
            if real.is_file():
                found.append(path)
    return sorted(found)
