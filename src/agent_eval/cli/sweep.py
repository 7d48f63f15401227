"""`agent-eval sweep MATRIX.toml`: every configuration of a matrix, one results file each,
then the report across them. Starting the same sweep again continues it: finished
configurations are kept, an interrupted one resumes from its journal."""

from __future__ import annotations

import os
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
    from agent_eval.cli.console import attempt_line, header, summary_block
    from agent_eval.cli.runs import record_held_out, warn_test_looks
    from agent_eval.report import load_results
    from agent_eval.report.across_runs import multi_report
    from agent_eval.report.across_runs_text import render_multi
    from agent_eval.run.runner import execute, prepare
    from agent_eval.workflows.sweep import load_sweep

    configurations = load_sweep(
        Path(matrix), os.environ.get("OPENAI_API_KEY"), os.environ.get("OPENAI_BASE_URL")
    )
    total = len(configurations)
    for number, cell in enumerate(configurations, start=1):
        config = cell.config
        state = cell.state
        click.echo(f"[{number}/{total}] {cell.name}" + (" (resumed)" if state == "resume" else ""))
        if state == "done":
            click.echo(f"  finished earlier: {config.out} kept, not re-run")
            continue
        prepared = prepare(config)
        config = record_held_out(prepared)
        click.echo(header(prepared.agent.scaffold, config.model, len(prepared.tasks),
                          config.repeats))  # fmt: skip
        with progress_bar(prepared.attempts, cell.name) as bar:

            def on_attempt(row: Any) -> None:
                click.echo(attempt_line(row))
                if bar is not None:
                    bar[0].advance(bar[1])

            try:
                report = execute(prepared, on_attempt)
            except KeyboardInterrupt:  # a Ctrl-C before the run took charge of it
                report = None
        if report is None or report.interrupted:
            click.echo(
                f"Error: interrupted at {cell.name}; the attempts that finished were written. "
                f"Run `agent-eval sweep {matrix}` again to resume the sweep",
                err=True,
            )
            return EXIT_INTERRUPTED
        for line in summary_block(report.summary.model_dump(), config.prices.as_dict()):
            click.echo(line)
        if "test" in prepared.splits and config.labbook is not None:
            suite = prepared.loaded.suite
            warn_test_looks(config.labbook, cell.max_test_looks, (suite.name, suite.version))
        click.echo("")
    runs = [load_results(cell.config.out) for cell in configurations if cell.config.out]
    text = render_multi(multi_report(runs), fmt)
    emit_report(text, fmt, out)
    return EXIT_OK
