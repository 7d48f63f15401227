"""`agent-eval demo`: the main job, real agents on the embedded local model, measured
offline (workflows/demo.py runs it; this module gives its flags and prints it)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from agent_eval.cli.common import EXIT_OK, progress_bar
from agent_eval.cli.view import view_command


@click.command()
@click.option(
    "--out-dir",
    default="demo-out",
    show_default=True,
    help="Folder for results, trajectories, HTML reports and the labbook.",
)
@click.option("--repeats", default=3, show_default=True, type=int, help="Attempts per task.")
@click.option(
    "--task-id",
    "task_ids",
    multiple=True,
    help="Run only this part26 task (repeatable), for a quick look.",
)
@click.option(
    "--parallel",
    default=2,
    show_default=True,
    type=click.IntRange(min=1),
    help="Model instances, and attempts run side by side.",
)
@click.option(
    "--seed",
    default=26,
    show_default=True,
    type=int,
    help="Run seed; each attempt samples with a seed derived from it, its task and attempt.",
)
@click.option(
    "--cost-per-million",
    type=click.FloatRange(min=0),
    help="Your price per million tokens for the lesson's cost column (else an example).",
)
@click.option(
    "--replay",
    is_flag=True,
    help="Replay the runs already in --out-dir from their recordings, without the model: "
    "the same verdicts and lesson in seconds.",
)
def demo(
    out_dir: str,
    repeats: int,
    task_ids: tuple[str, ...],
    parallel: int,
    seed: int,
    cost_per_million: float | None,
    replay: bool,
) -> int:
    """The main job: the shipped suite against the three reference scaffolds on the
    embedded local model, offline, with sampled repeats. Writes full reports, results,
    trajectories and a labbook, stops the model server, and ends with a short lesson:
    each scaffold's figures, which differences are real, and the unstable tasks.
    """
    from agent_eval.workflows import DemoPlan, run_demo

    plan = DemoPlan(
        Path(out_dir),
        repeats,
        parallel=parallel,
        task_ids=task_ids,
        seed=seed,
        price_per_million=cost_per_million,
        replay=replay,
    )
    results = run_demo(click.echo, DemoLines(), plan)
    if not replay:
        for line in ending(plan.out_dir, results):
            click.echo(line)
    return EXIT_OK


class DemoLines:
    """Each scaffold's run as the demo shows it: a blank line, the course's header and
    attempt lines, and a progress bar."""

    @contextmanager
    def opening(self, prepared: Any) -> Iterator[Any]:
        from agent_eval.cli.console import attempt_line, header
        from agent_eval.cli.runs import bar_observer
        from agent_eval.run import EachAttempt, Observers

        config = prepared.config
        click.echo("")
        click.echo(header(prepared.agent.scaffold, config.model, len(prepared.tasks),
                          config.repeats))  # fmt: skip
        with progress_bar(prepared.attempts, config.agent.removeprefix("builtin:")) as bar:
            yield Observers(EachAttempt(lambda row: click.echo(attempt_line(row))),
                            bar_observer(bar))  # fmt: skip

    def closing(self, done: Any) -> None:
        """The demo's lesson speaks for all its runs at the end."""


def ending(out_dir: Path, results: list[Path]) -> list[str]:
    """The demo's last lines: where everything it wrote is, and how to look at it."""
    lines = ["", f"Full reports (text and HTML), results, trajectories and the labbook: {out_dir}/"]
    if len(results) >= 2:
        lines.append(f"  agent-eval compare {results[1]} {results[0]}   # any two runs, in full")
    lines.append(f"to see where each attempt went wrong: {view_command([out_dir])}")
    lines += [
        "",
        "Next, measure your own agent: `agent-eval init student && cd student` writes the",
        "lesson's suite, its documents and my_agent.py to edit; its README has the commands.",
    ]
    return lines
