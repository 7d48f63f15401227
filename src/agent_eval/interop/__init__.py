"""Other harnesses' runs in and out: Inspect AI logs and ATIF trajectories (Harbor).

``load_runs`` is the one entry point the readers use: it recognises an Inspect AI log
(``.eval``, or an Inspect ``.json``), an ATIF file, a folder of ATIF files or a Harbor
job folder, and converts it; any other path goes to the results-file reader. Each
format's own library does the reading and writing, from an optional extra.
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
    """inspect or atif when ``path`` is another harness's run, None otherwise."""
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
    foreign log or folder, and those of each run directly in a plain folder."""
    path = Path(path)
    kind = foreign_kind(path)
    if kind == "inspect":
        from agent_eval.interop.inspect_log import read_inspect_log

        return list(read_inspect_log(path))
    if kind == "atif":
        from agent_eval.interop.atif import read_atif

        return list(read_atif(path))
    if path.is_dir():
        inside = run_paths(path)
        if not inside:
            raise ResultsError(
                f"{path}: a folder holding no run; give a results file, an Inspect AI log, "
                "an ATIF file or a Harbor job folder, or a folder of them"
            )
        return [run for child in inside for run in load_runs(child)]
    return [load_results(path)]


def run_paths(path: Path) -> list[Path]:
    """The path itself, or for a plain folder the runs directly in it: other harnesses'
    logs and folders, and results files (a JSON report or config is left out)."""
    if not path.is_dir() or foreign_kind(path) is not None:
        return [path]
    found = []
    for child in sorted(path.iterdir()):
        if foreign_kind(child) is not None:
            found.append(child)
        elif child.suffix == ".json" and child.is_file():
            with child.open("rb") as handle:
                if b'"run"' in handle.read(4096):
                    found.append(child)
    return found


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
