"""The main job behind `make demo`: the shipped suite against a shipped agent, reported."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agent_eval.run.config import RunConfig
from agent_eval.run.console import attempt_line, header, summary_block
from agent_eval.run.runner import execute, prepare

DEMO_DIR = Path("demo-out")


def run_demo(echo: Callable[[str], None], out_dir: Path = DEMO_DIR) -> int:
    """Run part26 against the top-passage baseline and print the course's report.

    Returns 0: the demo succeeds when it measured, whatever the agent scored.
    """
    config = RunConfig(
        agent="builtin:top-passage",
        tasks="part26",
        out=out_dir / "results-top-passage.json",
        trajectory_dir=out_dir / "trajectories",
        labbook=out_dir / "labbook.jsonl",
        notes="demo: degenerate baseline (first search hit as the answer)",
    )
    prepared = prepare(config)
    echo(header(prepared.agent.scaffold, config.model, len(prepared.tasks), config.repeats))
    report = execute(prepared, lambda row: echo(attempt_line(row)))
    echo("")
    for line in summary_block(report.document["run"]["summary"], config.prices.as_dict()):
        echo(line)
    echo(f"results: {config.out}  trajectories: {config.trajectory_dir}  labbook: {config.labbook}")
    return 0
