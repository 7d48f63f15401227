"""`agent-eval sweep MATRIX.toml`: every configuration of a matrix, one results file each,
then the report across them. Starting the same sweep again continues it: finished
configurations are kept, an interrupted one resumes from its journal."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from agent_eval.cli.common import EXIT_INTERRUPTED, EXIT_OK, emit_report, progress_bar


@click.command()
@click.argument("matrix")
@click.option(
    "--format",
    "fmt",
    default="text",
    show_default=True,
    type=click.Choice(["text", "markdown", "html", "json"]),
    help="Format of the closing report across configurations.",
)
@click.option("--out", help="Write the closing report here instead of printing it.")
def sweep(matrix: str, fmt: str, out: str | None) -> int:
    """Run every configuration of MATRIX (agents x models x options, in TOML) with the
    run settings it shares, one results file per configuration, and end with the report
    across them. Ctrl-C stops the sweep; the same command again resumes the whole sweep.

    Exit code 0 when every configuration finished, 130 when interrupted, 1 on an error.
    """
    from agent_eval.report import load_results, multi_report, render_multi
    from agent_eval.workflows import load_sweep, run_sweep

    configurations = load_sweep(
        Path(matrix), os.environ.get("OPENAI_API_KEY"), os.environ.get("OPENAI_BASE_URL")
    )
    stopped = run_sweep(configurations, CellLines(), click.echo)
    if stopped is not None:
        click.echo(
            f"Error: interrupted at {stopped.name}; the attempts that finished were written. "
            f"Run `agent-eval sweep {matrix}` again to resume the sweep",
            err=True,
        )
        return EXIT_INTERRUPTED
    runs = [load_results(cell.config.out) for cell in configurations if cell.config.out]
    text = render_multi(multi_report(runs), fmt)
    emit_report(text, fmt, out)
    return EXIT_OK


class CellLines:
    """A sweep configuration's console: the course's header, attempt lines and summary."""

    @contextmanager
    def opening(self, prepared: Any) -> Iterator[Any]:
        from agent_eval.cli.console import attempt_line, header
        from agent_eval.cli.runs import bar_observer
        from agent_eval.run import EachAttempt, Observers

        config = prepared.config
        click.echo(header(prepared.agent.scaffold, config.model, len(prepared.tasks),
                          config.repeats))  # fmt: skip
        with progress_bar(prepared.attempts, config.out.stem) as bar:
            yield Observers(EachAttempt(lambda row: click.echo(attempt_line(row))),
                            bar_observer(bar))  # fmt: skip

    def closing(self, done: Any) -> None:
        from agent_eval.cli.console import summary_block
        from agent_eval.cli.runs import say_test_looks

        if done.report.interrupted:  # the sweep says where it stopped
            return
        for line in summary_block(done.report.summary.model_dump(), done.config.prices.as_dict()):
            click.echo(line)
        say_test_looks(done)
        click.echo("")
