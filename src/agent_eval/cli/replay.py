"""`agent-eval replay`: one recorded attempt again in the foreground, its calls shown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from agent_eval.cli.common import EXIT_FAILED, EXIT_OK

CUT = 240
"""Characters of one string shown in a printed request or response, unless --full."""


@click.command()
@click.argument("results")
@click.option("--task", "task_id", required=True, help="The task id of the attempt.")
@click.option("--attempt", required=True, type=click.IntRange(min=1), help="Its attempt number.")
@click.option("--agent", help="The agent to run (default: the recorded run's --agent).")
@click.option("--tasks", help="The suite (default: the recorded run's, by its name).")
@click.option("--full", is_flag=True, help=f"Print long strings whole, not cut at {CUT}.")
def replay(
    results: str, task_id: str, attempt: int, agent: str | None, tasks: str | None, full: bool
) -> int:
    """Re-run one attempt of a recorded run (`run --record`) in this process, answered
    from its own recording: breakpoints and print statements in the agent work. Each
    model call is printed as it passes; a call that differs from the recording stops
    the attempt as replay_mismatch, naming the first differing field.

    Exit code 0 when the attempt passed, 2 when it failed.
    """
    from agent_eval.cli.console import attempt_detail, attempt_line
    from agent_eval.run import replay_attempt

    def show(session: Any, call: dict[str, Any]) -> None:
        response, error = call.get("response"), call.get("error")
        click.echo(
            f"call {call['call']}  {call['method']} {call['path']}  "
            f"from the {call.get('source')}, {call.get('seconds', 0):.3f}s"
        )
        click.echo("  request:  " + _shown(call["request"], full))
        if response is not None:
            click.echo(f"  response: {response.get('status')} " + _shown(response, full))
        if error is not None:
            click.echo(f"  error:    {error.get('kind')}: {error.get('message')}")

    row = replay_attempt(Path(results), task_id, attempt, show, agent, tasks)
    click.echo("")
    click.echo(attempt_line(row))
    for line in attempt_detail(row):
        click.echo(line)
    return EXIT_OK if row.passed else EXIT_FAILED


def _shown(part: dict[str, Any], full: bool) -> str:
    body = {k: v for k, v in part.items() if k in ("json", "text", "events")}
    value = next(iter(body.values()), None) if len(body) == 1 else body
    return json.dumps(value if full else _cut(value), ensure_ascii=False)


def _cut(value: Any) -> Any:
    if isinstance(value, str):
        return value if len(value) <= CUT else value[: CUT - 3] + "..."
    if isinstance(value, dict):
        return {k: _cut(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_cut(v) for v in value]
    return value
