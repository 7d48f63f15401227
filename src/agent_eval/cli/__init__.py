"""The `agent-eval` command: parse flags, call the library, print, and set the exit code.

Exit codes: 0 when everything passed, 2 when some attempt failed (or a comparison found
B worse), 3 when the model endpoint could not be used (down, or every attempt an infra
error), 1 for a usage or input error, printed as one `Error: ...` line on stderr.
`--debug` anywhere on the command line shows the traceback instead.
"""

from __future__ import annotations

import gc
import signal
import sys
import traceback
from collections.abc import Sequence

import click

from agent_eval import __version__
from agent_eval.cli.common import EXIT_INFRA, EXIT_INPUT, EXIT_INTERRUPTED, EXIT_OK
from agent_eval.cli.demo import demo
from agent_eval.cli.duel import duel
from agent_eval.cli.init import init
from agent_eval.cli.models import mock_model, serve_model
from agent_eval.cli.replay import replay
from agent_eval.cli.reports import compare, export, export_otel, history, report
from agent_eval.cli.runs import audit, index, rescore, run, validate
from agent_eval.cli.sweep import sweep
from agent_eval.cli.view import view
from agent_eval.errors import AgentEvalError, ModelEndpointError


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    args = [a for a in args if a != "--debug"]
    try:
        code = cli.main(
            args=args, prog_name="agent-eval", standalone_mode=False, obj={"debug": debug}
        )
    except click.exceptions.Abort:
        if debug:
            traceback.print_exc()
        click.echo("Error: interrupted", err=True)
        code = EXIT_INTERRUPTED
    except click.UsageError as exc:
        if debug:
            traceback.print_exc()
        hint = f" (see agent-eval {exc.ctx.info_name} --help)" if exc.ctx else ""
        if exc.ctx and exc.ctx.parent is None:
            hint = " (see agent-eval --help)"
        click.echo(f"Error: {exc.format_message()}{hint}", err=True)
        code = EXIT_INPUT
    except (AgentEvalError, click.ClickException) as exc:
        if debug:
            traceback.print_exc()
        message = exc.format_message() if isinstance(exc, click.ClickException) else str(exc)
        click.echo(f"Error: {message}", err=True)
        code = EXIT_INFRA if isinstance(exc, ModelEndpointError) else EXIT_INPUT
    if argv is None:
        # This process exists to run the command, which has finished and flushed. A
        # Ctrl-C now has nothing left to stop: ignored, it cannot turn the exit code
        # into death by SIGINT (Python's finalisation restores SIGINT's default action,
        # but leaves an ignored signal ignored).
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        # Leave what is alive out of the collections the interpreter's shutdown would
        # run over it: after a run, a seventh of a second.
        gc.freeze()
    sys.exit(code if isinstance(code, int) else EXIT_OK)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="agent-eval")
@click.option("--debug", is_flag=True, help="Show the traceback of an error.")
def cli(debug: bool) -> None:
    """Measure AI agents on versioned, program-checked task suites.

    Run a suite against any agent with repeats, keep one trajectory per attempt, score
    every attempt deterministically, and report success, steps, tokens, seconds and cost.
    """


for command in (init, validate, run, duel, sweep, rescore, audit, index, demo, report, compare,
                history, export, export_otel, serve_model, mock_model, view, replay):  # fmt: skip
    cli.add_command(command)

__all__ = ["main"]
