"""A folder of runs of every harness: each run found, whatever else the folder holds."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx
from tests.interop.conftest import InspectRun

from agent_eval.interop import load_runs
from agent_eval.viewer import open_viewer

Cli = Callable[..., subprocess.CompletedProcess[str]]


def _mixed(tmp_path: Path, inspect_run: InspectRun, our_run: Path, cli: Cli) -> Path:
    """runs/mixed, holding our results file, an Inspect log and two ATIF files of one run."""
    exported = tmp_path / "exported"
    assert cli("export", str(our_run), "--format", "atif", "--out", str(exported)).returncode == 0
    folder = tmp_path / "runs" / "mixed"
    folder.mkdir(parents=True)
    shutil.copy(our_run, folder / "ours.json")
    shutil.copy(inspect_run.log, folder / "arith.eval")
    shutil.copy(exported / "sum-r1.json", folder / "atif1.json")
    shutil.copy(exported / "sum-r2.json", folder / "atif2.json")
    (folder / "report.json").write_text('{"summary": {}}')  # not a run: left out
    return folder


EXPECTED = [("minimal", 2, 2), ("minimal", 8, 4), ("use_tools+generate", 8, 4)]
"""(scaffold, attempts, passed) of each run: the ATIF files are one run of two attempts."""


def test_a_folder_of_a_results_file_a_log_and_atif_files_holds_three_runs(
    inspect_run: InspectRun, our_run: Path, cli: Cli, tmp_path: Path
) -> None:
    folder = _mixed(tmp_path, inspect_run, our_run, cli)
    found = sorted((r.run.scaffold, len(r.rows), sum(x.passed for x in r.rows))
                   for r in load_runs(folder))  # fmt: skip
    assert found == EXPECTED
    history = cli("history", str(folder), "--format", "json")
    assert history.returncode == 0, history.stderr
    listed = json.loads(history.stdout)
    assert sorted((r["scaffold"], r["attempts"], r["passed"]) for r in listed["runs"]) == EXPECTED
    assert listed["problems"] == []
    text = cli("history", str(folder))
    assert text.stdout.startswith(f"3 run(s) in {folder}\n")
    report = cli("report", str(folder), "--allow-suite-change", "--format", "json")
    assert report.returncode == 0, report.stderr
    configurations = json.loads(report.stdout)["configurations"]
    assert sorted(c["attempts"] for c in configurations) == [2, 8, 8]
    # In a folder of folders, the mixed one is found whole, once.
    parent = cli("history", str(folder.parent), "--format", "json")
    assert len(json.loads(parent.stdout)["runs"]) == 3


def test_the_viewer_lists_every_run_of_a_mixed_folder(
    inspect_run: InspectRun, our_run: Path, cli: Cli, tmp_path: Path
) -> None:
    folder = _mixed(tmp_path, inspect_run, our_run, cli)
    for given in (folder, folder.parent):
        server = open_viewer([given]).start()
        try:
            runs = httpx.get(f"{server.root_url}/api/runs", timeout=60).json()["runs"]
            assert sorted((r["scaffold"], r["attempts"], r["passed"])
                          for r in runs) == EXPECTED  # fmt: skip
            for run in runs:
                grid = httpx.get(f"{server.root_url}/api/grid/{run['id']}", timeout=60).json()
                assert sum(len(t["cells"]) for t in grid["tasks"]) == run["attempts"]
        finally:
            server.stop()
    site = tmp_path / "site"
    done = cli("view", str(folder), "--export", str(site))
    assert done.returncode == 0, done.stderr
    listing = (site / "data" / "runs.js").read_text()
    assert listing.count('"run_id"') >= 3
