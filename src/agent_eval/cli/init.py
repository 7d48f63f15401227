"""`agent-eval init [DIR]`: a student's folder with what the lesson assumes they have."""

from __future__ import annotations

import click

from agent_eval.cli.common import EXIT_OK


@click.command()
@click.argument("folder", default=".", required=False)
@click.option(
    "--suite",
    default="part26",
    show_default=True,
    type=click.Choice(["part26", "ops-state", "cited"]),  # suite.SHIPPED_FILES, checked by a test
    help="The shipped suite to start from.",
)
def init(folder: str, suite: str) -> int:
    """Write FOLDER (default: here) with the lesson's suite as agent-tasks.json, its
    documents in agent-workspace/, an agent of your own to edit (my_agent.py), the
    lesson's four-role system and a README of the next commands.

    It never overwrites a file: when any of them exists, it names them and writes nothing.
    """
    from pathlib import Path

    from agent_eval.starter import next_commands, write_starter

    target = Path(folder)
    starter = write_starter(target, suite)
    for line in starter.lines:
        click.echo(f"wrote {line}" if folder == "." else f"wrote {folder}/{line}")
    click.echo("next:")
    if folder != ".":
        click.echo(f"  cd {folder}")
    for command in next_commands():
        click.echo(f"  {command}")
    return EXIT_OK
