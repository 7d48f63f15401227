"""`agent-eval duel`: two configurations in paired rounds, stopped as soon as the
difference is settled. Each side takes `run`'s own flags; every other `run` flag is
shared by both sides."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from agent_eval.cli.common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    progress_bar,
    text_or_json,
)
from agent_eval.cli.runs import bar_observer, export_observer, otlp_exporter, run, run_settings
from agent_eval.errors import ConfigError

DUEL_HELP = """Run two configurations side by side in paired rounds, one attempt per task on
each side a round, until the difference between them is settled.

\b
Each side is an agent with its own `run` flags; every other `run` flag is shared:
  agent-eval duel --tasks part26 \\
    --a 'builtin:minimal --model local/answer' \\
    --b 'builtin:multi-agent --model local/answer --router-model local/router'

After each round an anytime-valid confidence sequence for the mean difference over
tasks (B - A) is updated; it stays valid however often it is looked at. The duel stops
when the interval excludes 0 (a side is better), when it lies within +-margin (no
difference larger than the margin), or undecided at --max-repeats or a total budget,
with the rounds that would likely settle it. duel.json records the decision; duel-a.json
and duel-b.json are ordinary results files for report, compare and view.

Exit code 0 when decided, 2 when undecided, 130 when interrupted (continue it with
--resume duel.json), 1 on an input error.
"""

DUEL_SETS = {"agent": "--a/--b", "repeats": "--max-repeats", "out": "--out", "resume": "--resume",
             "overwrite": "--out"}  # fmt: skip
"""`run` flags the duel sets itself, with the duel's flag that does."""
SHARED_ONLY = {
    "tasks",
    "only",
    "task_ids",
    "split",
    "max_test_looks",
    "verbose",
    "otlp_endpoint",
    "otlp_headers",
    "otlp_content",
}
"""`run` flags a side may not set: the sides must share the tasks to be paired."""
NOT_RECORDED = {"api_key", "secret_options", "otlp_headers", "resume", "fmt"}
"""Flags the duel file does not keep: secrets, and how this invocation was called."""
_FLAG = {param.name: param.opts[0] for param in run.params if param.name}


@click.command(help=DUEL_HELP)
@click.option(
    "--a", "side_a", metavar="'AGENT [FLAGS]'", help="Side A: an agent and its run flags."
)
@click.option(
    "--b", "side_b", metavar="'AGENT [FLAGS]'", help="Side B: an agent and its run flags."
)
@click.option(
    "--alpha",
    default=0.05,
    show_default=True,
    type=float,
    help="Chance of a wrong decision, however often the interval is looked at.",
)
@click.option(
    "--max-repeats",
    default=20,
    show_default=True,
    type=int,
    help="Rounds at most; then the duel stops undecided.",
)
@click.option(
    "--margin",
    default=0.1,
    show_default=True,
    type=float,
    help="A difference within +-margin counts as none; 0 turns that stop off.",
)
@click.option(
    "--max-total-tokens",
    type=int,
    help="Tokens of both sides together; no round starts that would likely pass it.",
)
@click.option(
    "--max-total-cost", type=float, help="Cost of both sides together at your price; likewise."
)
@click.option(
    "--out",
    default="duel.json",
    show_default=True,
    help="The duel file, or a folder for duel.json; the sides' results go beside it "
    "(duel-a.json, duel-b.json).",
)
@click.option("--resume", help="Continue the duel in this file; its flags hold unless given again.")
@text_or_json
def duel(**flags: Any) -> int:
    from agent_eval.results import SIDES, read_duel
    from agent_eval.workflows import (
        begin,
        check_resumable,
        check_specs,
        default_labbook,
        duel_config,
        play,
    )

    previous = None
    if flags["resume"]:
        previous = read_duel(Path(flags["resume"]))
        flags = _with_recorded(flags, previous.settings)
        flags["out"] = flags["resume"]
        check_resumable(previous, flags["alpha"], flags["margin"])
    specs = {"a": flags["side_a"], "b": flags["side_b"]}
    check_specs(specs)
    shared = {**flags, "repeats": 1, "out": None, "resume": None}
    out = Path(flags["out"])
    if flags["out"].endswith("/") or out.is_dir():  # a folder: the duel goes inside it
        out = out / "duel.json"
    config = duel_config(
        {side: run_settings(_side_flags(side, spec, shared)) for side, spec in specs.items()},
        out=out,
        settings=_recordable(flags),
        alpha=flags["alpha"],
        margin=flags["margin"],
        max_repeats=flags["max_repeats"],
        max_total_tokens=flags["max_total_tokens"],
        max_total_cost=flags["max_total_cost"],
        test_labbook=default_labbook(),
    )
    config, record = begin(config, previous)
    tasks = record.tasks
    report = click.echo if flags["fmt"] == "text" else (lambda line: click.echo(line, err=True))
    report(
        f"duel on {len(tasks)} task(s), up to {config.max_repeats} round(s), alpha "
        f"{config.alpha:g}, margin {config.margin:g}"
    )
    for side in SIDES:
        report(f"  {side.upper()}: {_public_spec(specs[side])}")
    exporter = otlp_exporter(flags)
    with progress_bar(2 * len(tasks) * config.max_repeats, "attempts") as bar:
        from agent_eval.run import EachAttempt, Observers

        def side_observer(side: str) -> Any:
            def line(row: Any) -> None:
                if flags["verbose"]:
                    from agent_eval.cli.console import attempt_line

                    report(f"{side.upper()}{attempt_line(row)[1:]}")

            return Observers(
                EachAttempt(line), export_observer(exporter, config.out, {}), bar_observer(bar)
            )

        try:
            observers = {side: side_observer(side) for side in SIDES}
            record = play(config, record, observers, lambda done: report(_round_line(done)))
        finally:
            if exporter is not None:
                exporter.shutdown()
    if record.stopped == "interrupted":
        click.echo(
            f"Error: interrupted; the attempts that finished were written. Continue "
            f"with agent-eval duel --resume {config.out}",
            err=True,
        )
        return EXIT_INTERRUPTED
    if flags["fmt"] == "json":
        click.echo(json.dumps(record.summary(), indent=2))
    else:
        for line in _verdict(record, config.out):
            click.echo(line)
    click.echo(f"duel written to {config.out}", err=True)
    return EXIT_OK if record.decision != "undecided" else EXIT_FAILED


duel.params.extend(p for p in run.params if p.name not in DUEL_SETS)


def _side_flags(side: str, spec: str, shared: dict[str, Any]) -> dict[str, Any]:
    """The run flags of one side: the shared ones, overridden by those in its string."""
    name = f"--{side}"
    try:
        tokens = shlex.split(spec)
    except ValueError as exc:
        raise ConfigError(f"{name} {spec!r}: {exc}") from None
    if not tokens or tokens[0].startswith("-"):
        raise ConfigError(
            f"{name} {spec!r}: start with the agent, e.g. {name} "
            f"'builtin:minimal --model local/answer'"
        )
    try:
        ctx = run.make_context(name, ["--agent", tokens[0], *tokens[1:]])
    except click.UsageError as exc:
        raise ConfigError(f"{name} {spec!r}: {exc.format_message()}") from None
    given = {
        key for key in ctx.params if ctx.get_parameter_source(key) is ParameterSource.COMMANDLINE
    }
    given.discard("agent")
    for key in sorted(given & (SHARED_ONLY | set(DUEL_SETS))):
        where = DUEL_SETS.get(key)
        fix = f"the duel sets it ({where})" if where else "both sides share it; give it outside"
        raise ConfigError(f"{name} {spec!r}: {_FLAG[key]} is not a side's flag: {fix}")
    # The side's run flags only: the duel's own (--alpha, --a...) are not a run's settings.
    merged = {key: shared[key] for key in ctx.params if key in shared}
    merged.update({key: ctx.params[key] for key in given}, agent=tokens[0])
    merged["options"] = (*shared["options"], *ctx.params["options"])  # the side's win
    merged["secret_options"] = (*shared["secret_options"], *ctx.params["secret_options"])
    return merged


def _with_recorded(flags: dict[str, Any], recorded: dict[str, Any]) -> dict[str, Any]:
    """The flags of a resumed duel: those given now, else those the duel file recorded."""
    ctx = click.get_current_context()
    merged = dict(flags)
    for key, value in recorded.items():
        if key in merged and ctx.get_parameter_source(key) is ParameterSource.DEFAULT:
            merged[key] = tuple(value) if isinstance(value, list) else value
    return merged


def _public_option(pair: str) -> str:
    """An --option pair as it may be recorded: a secret-named one's value redacted."""
    from agent_eval.redaction import REDACTED, is_secret_name

    key, sep, _ = pair.partition("=")
    return f"{key}={REDACTED}" if sep and is_secret_name(key.strip()) else pair


def _public_spec(spec: str | None) -> str | None:
    """A side's string as it may be recorded or printed: no secret in it."""
    from agent_eval.redaction import REDACTED

    if spec is None:
        return None
    try:
        tokens = shlex.split(spec)
    except ValueError:
        return REDACTED  # cannot tell its secrets apart; _side_flags says what is wrong

    def public(flag: str, value: str) -> str:
        if flag == "--api-key":
            return REDACTED
        if flag == "--secret-option":
            return f"{value.partition('=')[0]}={REDACTED}"
        return _public_option(value) if flag == "--option" else value

    kept: list[str] = []
    for n, token in enumerate(tokens):
        flag, joined, value = token.partition("=")
        if joined and flag.startswith("--"):  # --api-key=VALUE
            kept.append(f"{flag}={public(flag, value)}")
        elif n and tokens[n - 1].startswith("--") and "=" not in tokens[n - 1]:
            kept.append(public(tokens[n - 1], token))
        else:
            kept.append(token)
    return shlex.join(kept)


def _recordable(flags: dict[str, Any]) -> dict[str, Any]:
    """The flags as the duel file keeps them: no secret, not even inside a side's string."""
    kept = {key: value for key, value in flags.items() if key not in NOT_RECORDED}
    kept["options"] = [_public_option(pair) for pair in flags["options"]]
    kept["side_a"], kept["side_b"] = _public_spec(flags["side_a"]), _public_spec(flags["side_b"])
    return kept


def _round_line(record: Any) -> str:
    a, b = (sum(record.passed[side][-1]) for side in ("a", "b"))
    lo, hi = record.interval
    return (
        f"round {record.rounds:>2}  A {a}/{len(record.tasks)}  B {b}/{len(record.tasks)}  "
        f"difference {record.difference:+.3f}  interval [{lo:+.3f}, {hi:+.3f}]"
    )


VERDICTS = {
    "b_better": "B is better",
    "a_better": "A is better",
    "no_difference": "no difference larger than the margin",
    "undecided": "undecided",
}


def _verdict(record: Any, out: Path) -> list[str]:
    """The closing block of a text duel."""
    lo, hi = record.interval
    why = {
        "max_repeats": "--max-repeats reached",
        "token_budget": "token budget spent",
        "cost_budget": "cost budget spent",
    }.get(record.stopped)
    lines = [
        "",
        f"decision      {VERDICTS[record.decision]}" + (f" ({why})" if why else ""),
        f"rounds        {record.rounds} ({record.attempts} attempts)",
    ]
    if record.difference is not None:
        lines.append(
            f"difference    {record.difference:+.3f}  (B - A, mean over {len(record.tasks)} tasks)"
        )
    lines.append(f"interval      [{lo:+.3f}, {hi:+.3f}]  anytime-valid, alpha {record.alpha:g}")
    if record.decision == "undecided":
        more = record.projected_rounds
        lines.append(
            "to settle     "
            + (
                f"about {more} round(s) in all, were later rounds like these"
                if more
                else "no affordable number of rounds is in sight"
            )
        )
    fixed = record.fixed_design_attempts
    lines.append(
        "fixed design  "
        + (
            f"{fixed} attempts for 80% power (as compare plans it)"
            if fixed is not None
            else "cannot be planned from these rounds"
        )
    )
    # Where the sides' files are, as a user would open them: beside the duel file.
    a, b = (out.parent / record.results[side] for side in ("a", "b"))
    lines.append(f"results       {a} (A), {b} (B)")
    return lines
