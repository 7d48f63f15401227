"""What every command shares: exit codes, the progress bar, optional paths."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

EXIT_OK, EXIT_INPUT, EXIT_FAILED, EXIT_INFRA, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
"""3: the model endpoint could not be used (down before the first attempt, or every
attempt an infra error), so nothing was measured."""


@contextmanager
def progress_bar(total: int, label: str) -> Iterator[Any]:
    """A rich progress bar on stderr, only when stderr is a terminal."""
    if not _may_be_terminal():
        yield None  # what rich would decide, without its import (about 60 ms)
        return
    # rich is imported here, not at the top, so `agent-eval --help` does not pay for it
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    console = Console(stderr=True)
    if not console.is_terminal:
        yield None
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        yield (progress, progress.add_task(label, total=total))


def _may_be_terminal() -> bool:
    """False where rich's Console(stderr=True).is_terminal is surely False: stderr is no
    terminal, and neither TTY_COMPATIBLE nor FORCE_COLOR says otherwise."""
    if os.environ.get("TTY_COMPATIBLE") or os.environ.get("FORCE_COLOR") is not None:
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced, or closed
        return False


def optional_path(value: str | None) -> Path | None:
    return Path(value) if value else None


text_or_json = click.option(
    "--format",
    "fmt",
    default="text",
    show_default=True,
    type=click.Choice(["text", "json"]),
    help="text for people, json for machines.",
)
"""The --format option of commands that print for people or for machines."""


def emit_report(text: str, fmt: str, out: str | None) -> None:
    """Print a report, or write it to ``out`` and say so on stderr."""
    if out:
        from agent_eval.report import write_output

        write_output(text, out)
        click.echo(f"{fmt} report written to {out}", err=True)
    else:
        click.echo(text, nl=False)
