"""Other harnesses' runs in and out: Inspect AI logs and ATIF trajectories (Harbor).

``load_runs`` is the one entry point the readers use: it recognises an Inspect AI log
(``.eval``, or an Inspect ``.json``), an ATIF file, a folder of ATIF files or a Harbor
job folder, and converts it; a folder is read as the runs in it, whatever their
harness; any other path goes to the results-file reader. Each format's own library does
the reading and writing, from an optional extra.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agent_eval.errors import ResultsError
from agent_eval.interop.foreign import ForeignRun
from agent_eval.lazy import lazy_getattr
from agent_eval.results import RunResults, load_results

# The face's names that live in its modules, imported on first use (__getattr__).
if TYPE_CHECKING:
    from agent_eval.interop.atif import write_atif
    from agent_eval.interop.foreign import task_differences
    from agent_eval.interop.inspect_log import write_inspect_log


__all__ = [
    "ForeignRun",
    "foreign_kind",
    "load_run",
    "load_runs",
    "run_paths",
    "task_differences",
    "write_atif",
    "write_inspect_log",
]


def foreign_kind(path: Path) -> str | None:
    """inspect or atif when ``path`` is another harness's run, None otherwise. A folder is
    atif when it holds ATIF files or Harbor trial folders, whatever else it holds."""
    from agent_eval.interop.atif import file_start, is_atif_folder, looks_like_atif

    if path.is_dir():
        return "atif" if is_atif_folder(path) else None
    if path.suffix == ".eval":
        return "inspect"
    if path.suffix != ".json":
        return None
    start = file_start(path)
    if looks_like_atif(start):
        return "atif"
    inspect_keys = all(key in start for key in (b'"eval"', b'"status"', b'"version"'))
    if inspect_keys and b'"run"' not in start[:200]:  # ours starts with "schema" and "run"
        return "inspect"
    return None


def load_runs(path: str | Path) -> list[RunResults]:
    """Every run a path holds: one for a results file, one per task and model for a
    foreign log, and for a folder those of each run directly in it, then its ATIF files
    and Harbor trials as a run per agent and model."""
    path = Path(path)
    kind = foreign_kind(path)
    if kind == "inspect":
        from agent_eval.interop.inspect_log import read_inspect_log

        return list(read_inspect_log(path))
    if path.is_dir():
        return _folder_runs(path, atif=kind == "atif")
    if kind == "atif":
        from agent_eval.interop.atif import read_atif

        return list(read_atif(path))
    return [load_results(path)]


def _folder_runs(path: Path, atif: bool) -> list[RunResults]:
    runs = [run for child in _runs_in(path) for run in load_runs(child)]
    if atif:  # the attempts of one run lie in many files: they are read together
        from agent_eval.interop.atif import read_atif

        runs += read_atif(path)
    if not runs:
        raise ResultsError(
            f"{path}: a folder holding no run; give a results file, an Inspect AI log, "
            "an ATIF file or a Harbor job folder, or a folder of them"
        )
    return runs


def run_paths(path: Path) -> list[Path]:
    """The path itself, or for a plain folder the runs directly in it. A folder holding
    ATIF files is itself the path: its files are read together (``load_runs``)."""
    if not path.is_dir() or foreign_kind(path) is not None:
        return [path]
    return _runs_in(path)


def _runs_in(folder: Path) -> list[Path]:
    """The runs directly in ``folder`` that are a path each: results files, Inspect AI
    logs and other harnesses' folders. ATIF files are left to their folder (a run lies in
    many of them), a JSON report or config is left out, and so is a symbolic link, which
    the viewer does not follow either."""
    from agent_eval.interop.atif import file_start

    def is_run(child: Path) -> bool:
        kind = foreign_kind(child)
        if kind is None:
            return child.suffix == ".json" and b'"run"' in file_start(child)
        return kind == "inspect" or child.is_dir()

    return [child for child in sorted(folder.iterdir()) if not child.is_symlink() and is_run(child)]


def load_run(path: str | Path) -> RunResults:
    """The one run a path holds; ResultsError naming them when it holds several."""
    runs = load_runs(path)
    if len(runs) > 1:
        labels = "; ".join(run.label for run in runs)
        raise ResultsError(
            f"{path}: holds {len(runs)} runs ({labels}); give one of them, e.g. export each "
            "agent and model to its own folder"
        )
    return runs[0]


_LAZY = {
    "task_differences": "agent_eval.interop.foreign:task_differences",
    "write_atif": "agent_eval.interop.atif:write_atif",
    "write_inspect_log": "agent_eval.interop.inspect_log:write_inspect_log",
}
"""Public name -> where it lives: ``module:attribute``, or a module."""
__getattr__ = lazy_getattr(__name__, _LAZY)
