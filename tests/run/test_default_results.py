"""A run without --out still leaves a results file, at a path it prints, that report reads."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

Cli = Callable[..., subprocess.CompletedProcess[str]]
AGENT = """
SCAFFOLD_NAME = "fixed"
def run_task(task, options):
    return {"answer": "The gateway listens on 4000.", "steps": 1, "tokens": 10}
"""


def written_to(done: subprocess.CompletedProcess[str]) -> str:
    """The path of the course's line on stdout, `results written to OUT; trajectories in DIR/`."""
    (line,) = [ln for ln in done.stdout.splitlines() if ln.startswith("results written to ")]
    return line.removeprefix("results written to ").split("; trajectories in ")[0]


def test_run_without_out_writes_a_results_file_report_reads(
    tmp_path: Path, write_agent: Callable[..., Path], agent_eval: Cli
) -> None:
    write_agent(AGENT, "fixed.py")
    args = ("run", "--agent", "fixed.py", "--task-id", "r-gateway-port", "--model", "local/chat",
            "--no-preflight")  # fmt: skip
    first, second = agent_eval(*args, cwd=tmp_path), agent_eval(*args, cwd=tmp_path)
    assert (first.returncode, second.returncode) == (0, 0), first.stderr
    paths = [written_to(first), written_to(second)]
    assert paths[0] != paths[1]  # a second run never overwrites the first
    for path in paths:
        assert Path(path).parent == Path("results")
        # two runs in one second: the second adds its run id rather than overwrite
        assert re.fullmatch(r"\d{8}T\d{6}-fixed-local_chat(-[0-9a-f]{12})?\.json", Path(path).name)
        assert json.loads((tmp_path / path).read_text())["run"]["summary"]["passed"] == 1
    assert not list(tmp_path.rglob("*.journal.jsonl"))  # the run finished: no journal left
    report = agent_eval("report", paths[0], cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert "1 of 1" in report.stdout


def test_an_explicit_out_is_used_as_given(
    tmp_path: Path, write_agent: Callable[..., Path], agent_eval: Cli
) -> None:
    write_agent(AGENT, "fixed.py")
    done = agent_eval("run", "--agent", "fixed.py", "--task-id", "r-gateway-port",
                      "--out", "mine.json", cwd=tmp_path)  # fmt: skip
    assert written_to(done) == "mine.json"
    assert not (tmp_path / "results").exists()
