"""`agent-eval view`: browse runs, attempts and comparisons in a local web app."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

import click

from agent_eval.cli.common import EXIT_OK

DEFAULT_PORT = 7575


def view_command(paths: Sequence[str | Path]) -> str:
    """The command that opens the viewer on ``paths``, for runs to print when they end."""
    return "agent-eval view " + " ".join(shlex.quote(str(p)) for p in paths)


@click.command()
@click.argument("paths", nargs=-1)
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(0, 65535),
              help="Port; 0 picks a free one.")  # fmt: skip
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind; a non-loopback one needs --allow-remote.")  # fmt: skip
@click.option("--allow-remote", is_flag=True,
              help="Allow a non-loopback --host and any Host name (no auth).")  # fmt: skip
@click.option("--export", "export_dir", type=click.Path(file_okay=False),
              help="Write a static site into this folder instead of serving.")  # fmt: skip
def view(
    paths: tuple[str, ...], port: int, host: str, allow_remote: bool, export_dir: str | None
) -> int:
    """Browse runs in a local, read-only web app: the runs, a run's summary and task x
    attempt grid, an attempt's trajectory and checks, two runs compared.

    PATHS are results files, journals, labbooks or folders that hold them (default: the
    current folder). Trajectories are read from the folders given, and nothing else.
    """
    from agent_eval import viewer

    chosen = list(paths) or ["."]
    if export_dir is not None:
        count = viewer.export(chosen, Path(export_dir))
        click.echo(f"static site written to {export_dir}/index.html ({count} data files)")
        return EXIT_OK
    viewer.serve(chosen, host, port, allow_remote, click.echo)
    return EXIT_OK
