"""Two runs into one trajectory folder keep every trajectory of both, even when they
start in the same second, and a resumed run carries on its own names."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

Cli = Callable[..., subprocess.CompletedProcess[str]]

AGENT = """
SCAFFOLD_NAME = "fixed"
def run_task(task, options):
    return {"answer": "The gateway listens on 4000.", "steps": 1, "tokens": 10}
"""
RUN = ("run", "--agent", "fixed.py", "--tasks", "part26", "--model", "local/chat", "--no-preflight",
       "--repeats", "2", "--trajectory-dir", "shared")  # fmt: skip


def trajectories_of(folder: Path, results: str) -> list[Path]:
    """Each attempt's trajectory file, checked to be this run's own."""
    saved = json.loads((folder / results).read_text())
    files = [folder / row["trajectory_file"] for row in saved["results"]]
    for path in files:
        meta = json.loads(path.read_text().splitlines()[0])["meta"]
        assert meta["run_id"] == saved["run"]["run_id"], path.name
    return files


def test_runs_started_together_into_one_folder_keep_all_their_trajectories(
    tmp_path: Path, write_agent: Callable[..., Path], agent_eval: Cli
) -> None:
    write_agent(AGENT, "fixed.py")
    # Started at once, both runs begin in the same second on almost any machine.
    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda out: agent_eval(*RUN, "--out", out, cwd=tmp_path),
                             ["r1.json", "r2.json"]))  # fmt: skip
    for run in runs:
        assert run.returncode == 2, run.stderr  # ran to the end; most tasks fail
    first, second = trajectories_of(tmp_path, "r1.json"), trajectories_of(tmp_path, "r2.json")
    assert len(first) == len(second) == 30
    assert not set(first) & set(second)
    assert len(list((tmp_path / "shared").glob("*.jsonl"))) == 60


def test_more_repeats_of_a_finished_run_keep_its_names(
    tmp_path: Path, write_agent: Callable[..., Path], agent_eval: Cli
) -> None:
    write_agent(AGENT, "fixed.py")
    base = ("run", "--agent", "fixed.py", "--task-id", "r-gateway-port", "--model", "local/chat",
            "--no-preflight",
            "--trajectory-dir", "shared", "--out", "r.json")  # fmt: skip
    done = agent_eval(*base, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    more = agent_eval(*base[:-2], "--resume", "r.json", "--repeats", "3", cwd=tmp_path)
    assert more.returncode == 0, more.stderr
    files = trajectories_of(tmp_path, "r.json")
    assert len(files) == 3
    prefixes = {path.name.rsplit("-r", 1)[0] for path in files}
    assert len(prefixes) == 1  # one stamp for the run, before and after the resume
