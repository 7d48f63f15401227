"""Commands that run things: validate, run, rescore, audit and index."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from agent_eval.cli.common import (
    EXIT_FAILED,
    EXIT_INFRA,
    EXIT_INTERRUPTED,
    EXIT_OK,
    optional_path,
    progress_bar,
    text_or_json,
)
from agent_eval.cli.view import view_command
from agent_eval.errors import SuiteError

if TYPE_CHECKING:
    from agent_eval.run import RunConfig


@click.command()
@click.argument("suite")
@click.option("--workspace", help="The documents folder `run --workspace` will be given.")
@click.option("--allow-empty-workspace", is_flag=True, help="The tasks need no documents.")
def validate(suite: str, workspace: str | None, allow_empty_workspace: bool) -> int:
    """Check SUITE (a path or a shipped name such as part26) and list every problem,
    including a run that would start from no documents.
    """
    from agent_eval.run import check_workspace
    from agent_eval.suite import load_suite

    try:
        loaded = load_suite(suite)
    except SuiteError as exc:
        for problem in exc.problems:
            click.echo(problem)
        raise SuiteError(f"suite {suite}: {len(exc.problems)} problem(s) listed above") from exc
    check_workspace(loaded, optional_path(workspace), allow_empty_workspace)
    s = loaded.suite
    docs = f", documents in {loaded.documents}" if loaded.documents else ""
    if loaded.same_as:
        docs = f", the tasks of shipped suite {loaded.same_as}{docs}"
    click.echo(f"ok  {s.name} {s.version}: {len(s.tasks)} task(s), {loaded.hash}{docs}")
    commands = command_checks(s.tasks)
    note_commands(loaded, commands)
    for task_id, argv in commands:
        click.echo(f"  command  {task_id}: {shlex.join(argv)}")
    return EXIT_OK


def command_checks(tasks: list[Any]) -> list[tuple[str, list[str]]]:
    """Each command state check of ``tasks``: (task id, argv)."""
    from agent_eval.records import CommandCheck

    return [(task.id, check.command) for task in tasks for check in task.expect_state
            if isinstance(check, CommandCheck)]  # fmt: skip


def note_commands(loaded: Any, commands: list[tuple[str, list[str]]]) -> None:
    """Say, once, that the suite's checks are programs that run on this machine."""
    if commands:
        click.echo(
            f"Note: suite {loaded.path} runs commands from its folder: {len(commands)} "
            f"state check(s) are programs run after the agent; run only suites you trust "
            f"(agent-eval validate lists them)",
            err=True,
        )


RUN_HELP = """Run every task of a suite against an agent, with repeats.

\b
AGENT forms:  path/to/agent.py | package.module:object | builtin:NAME
Examples:
  agent-eval run --agent my_agent.py --tasks part26 --repeats 3 --out r.json
  agent-eval run --agent builtin:minimal --base-url http://127.0.0.1:4001/v1 --model mock

Without --tasks, the run uses ./agent-tasks.json when it exists, as the course does,
else the shipped part26, and says which on stderr. Before the first attempt it checks
that the endpoint answers and lists --model (and --router-model); --no-preflight skips
that, for an endpoint that lists nothing.

Exit code 0 when every attempt passed, 2 when some failed, 3 when the model endpoint
could not be used (the check found it down, or every attempt was an infra error), 1 on
an input error, 130 when interrupted (Ctrl-C; the finished attempts are written).
"""


@click.command(help=RUN_HELP)
@click.option("--agent", required=True, help="A .py file, module:object or builtin:NAME.")
@click.option(
    "--tasks",
    help="Suite file or shipped name [default: ./agent-tasks.json when it exists, else part26].",
)
@click.option("--only", multiple=True, help="Keep only tasks of this category (repeatable).")
@click.option("--task-id", "task_ids", multiple=True, help="Keep only this task id (repeatable).")
@click.option("--repeats", default=1, show_default=True, type=int, help="Attempts per task.")
@click.option(
    "--out",
    help="Write the results JSON here [default: results/{stamp}-{scaffold}-{model}.json].",
)
@click.option(
    "--trajectory-dir",
    default="trajectories",
    show_default=True,
    help="Folder for one JSON-lines trajectory per attempt.",
)
@click.option(
    "--base-url",
    envvar="OPENAI_BASE_URL",
    default="http://127.0.0.1:4000/v1",
    show_default=True,
    help="OpenAI-compatible endpoint given to the agent [env OPENAI_BASE_URL].",
)
@click.option("--model", default="local/chat", show_default=True, help="Model name for the agent.")
@click.option("--router-model", help="Model for a multi-agent router (default: --model).")
@click.option(
    "--api-key",
    envvar="OPENAI_API_KEY",
    help="API key for the endpoint [env OPENAI_API_KEY]; never written to any file.",
)
@click.option(
    "--workspace",
    help="Folder copied fresh into each attempt (default: the suite's documents); "
    "created with the suite's documents when it does not exist yet.",
)
@click.option(
    "--allow-empty-workspace",
    is_flag=True,
    help="Run even when there are no documents (tasks that need none).",
)
@click.option("--index", help="A search index built by `agent-eval index`, given to the agent.")
@click.option(
    "--option",
    "options",
    multiple=True,
    metavar="KEY=VALUE",
    help="Extra option passed to the agent (repeatable), e.g. tool_mode=json.",
)
@click.option(
    "--secret-option",
    "secret_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="An option passed to the agent but never recorded: its value is redacted "
    "wherever it would appear (repeatable).",
)
@click.option("--cost-per-million", type=float, help="Your price per million tokens.")
@click.option("--input-cost-per-million", type=float, help="Your price per million input tokens.")
@click.option("--output-cost-per-million", type=float, help="Your price per million output tokens.")
@click.option(
    "--max-cost-per-task",
    type=float,
    help="Cost budget of one attempt at your price; past it the attempt is over_budget.",
)
@click.option(
    "--split",
    type=click.Choice(["dev", "test"]),
    help="Keep only the tasks of this split; every test run is recorded in the labbook.",
)
@click.option(
    "--max-test-looks",
    default=3,
    show_default=True,
    type=click.IntRange(min=1),
    help="Warn when this suite version's test split has been evaluated more often than this.",
)
@click.option("--quant", help="Quantisation label recorded with the run, e.g. Q4_K_M.")
@click.option("--engine", help="Inference engine recorded with the run, e.g. llama.cpp.")
@click.option("--engine-version", help="Engine version recorded with the run.")
@click.option("--notes", help="Free text recorded with the run.")
@click.option("--lab", help="Lab or project label recorded with the run.")
@click.option("--labbook", help="Append the run's record to this JSON-lines file.")
@click.option("--verbose", is_flag=True, help="Print each failed attempt's answer and why.")
@click.option(
    "--concurrency",
    default=1,
    show_default=True,
    type=int,
    help="Attempts run side by side, each in its own worker process.",
)
@click.option(
    "--isolation",
    type=click.Choice(["attempt", "worker"]),  # run.config.ISOLATIONS, not imported at start-up
    default="attempt",
    show_default=True,
    help="attempt: every attempt starts from the agent's state right after build(), so no "
    "attempt sees another's memory. worker: a worker's attempts run in turn in one process "
    "and its state carries over, as in the course harness.",
)
@click.option(
    "--no-preflight",
    is_flag=True,
    help="Skip the check that the endpoint answers and lists --model before the first "
    "attempt (for an endpoint that serves models it does not list).",
)
@click.option(
    "--max-infra-retries",
    default=2,
    show_default=True,
    type=int,
    help="Retries of an attempt whose endpoint failed (down, timeout, 429, 5xx).",
)
@click.option(
    "--timeout-per-task",
    type=float,
    help="Hard time budget per attempt in seconds (a task's max_seconds wins).",
)
@click.option("--max-memory-mb", type=int, help="Memory limit of each worker process.")
@click.option(
    "--executor",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Where attempts run: worker processes here, or a Ray cluster (the ray extra).",
)
@click.option(
    "--ray-address",
    help="The Ray cluster: auto, HOST:PORT or ray://HOST:10001 (default: a local instance).",
)
@click.option(
    "--sandbox",
    type=click.Choice(["auto", "on", "off"]),  # run.config.SANDBOX_MODES
    default="auto",
    envvar="AGENT_EVAL_SANDBOX",
    show_default=True,
    help="Run every attempt (the agent, its tools, all it starts) and every state check in "
    "a bubblewrap sandbox: system read-only, only the workspace and a private /tmp "
    "writable, an empty HOME, an allow-listed environment, the run's outputs, journal and "
    "suite invisible, no process outliving its attempt. auto: where bubblewrap works, else "
    "a Note says the run is not sandboxed. on: an error when it cannot start. "
    "Default: $AGENT_EVAL_SANDBOX, else auto.",
)
@click.option(
    "--sandbox-network",
    type=click.Choice(["model", "none", "host"]),  # run.config.SANDBOX_NETWORKS
    default="model",
    show_default=True,
    help="What a sandboxed agent can reach. model: only the --base-url endpoint (relayed "
    "into the sandbox; any other address, loopback included, is refused). none: nothing. "
    "host: the machine's network, unconfined. State checks always get none.",
)
@click.option(
    "--max-workspace-mb",
    type=click.IntRange(min=1),
    default=1024,
    show_default=True,
    help="In the sandbox, the RAM an attempt's workspace, /tmp and HOME may fill together; "
    "a write past it fails with 'No space left on device'.",
)
@click.option("--resume", help="Continue an interrupted run from its results file or journal.")
@click.option("--overwrite", is_flag=True, help="Replace a finished run's results file at --out.")
@click.option("--seed", type=int, help="Seed for every choice the harness makes.")
@click.option("--shuffle", is_flag=True, help="Run attempts in a seeded random order.")
@click.option(
    "--otlp-endpoint",
    help="Send each attempt as an OpenTelemetry trace to this OTLP/HTTP endpoint.",
)
@click.option(
    "--otlp-header",
    "otlp_headers",
    multiple=True,
    metavar="KEY=VALUE",
    help="A header for the endpoint (repeatable); adds to OTEL_EXPORTER_OTLP_HEADERS.",
)
@click.option(
    "--otlp-content", is_flag=True, help="Also send the task text, model content and tool results."
)
@click.option(
    "--record",
    is_flag=True,
    help="Record each attempt's model calls through a proxy, one file beside its trajectory.",
)
@click.option(
    "--replay",
    metavar="RESULTS.json",
    help="Answer each attempt from its own recording in this run's results; the endpoint "
    "is not contacted. Model, router model, repeats, seed, options, limits, prices, a "
    "shipped suite and the tasks default to the recorded run's.",
)
@click.option(
    "--replay-missing",
    type=click.Choice(["error", "pass-through"]),  # run.config.REPLAY_MISSING
    default="error",
    show_default=True,
    help="A call the recording lacks: a replay_mismatch, or sent on to --base-url.",
)
@click.option(
    "--cache",
    "cache_dir",
    metavar="DIR",
    help="Reuse replies stored in DIR for the same request in the same task and attempt "
    "number (repeats stay independent).",
)
def run(**flags: Any) -> int:
    if flags["sandbox"] != "off":
        from agent_eval.sandbox import probe_ahead

        probe_ahead()  # while the run's modules load
    from agent_eval.workflows import run_one

    source = click.get_current_context().get_parameter_source
    flags["endpoint_named"] = any(
        source(name) not in (None, ParameterSource.DEFAULT)
        for name in ("base_url", "model", "router_model")
    )
    settings = run_settings(recorded_defaults(flags))
    debug = bool((click.get_current_context().find_root().obj or {}).get("debug"))
    console = RunLines(flags, debug)
    done = run_one(
        settings,
        console,
        lambda message: click.echo(f"Note: {message}", err=True),
        lambda message: click.echo(f"Warning: {message}", err=True),
    )
    config, report = done.config, done.report
    if report.interrupted:
        click.echo("Error: interrupted; the attempts that finished were written", err=True)
        return EXIT_INTERRUPTED
    summary = report.summary
    if summary.runs and summary.infra_errors == summary.runs:
        click.echo(
            f"Error: all {summary.runs} attempt(s) failed at the model endpoint "
            f"{config.base_url} (infra_error), so the agent was not measured; check that the "
            "server runs and answers, then run again",
            err=True,
        )
        return EXIT_INFRA
    return EXIT_OK if report.all_passed else EXIT_FAILED


class RunLines:
    """`run`'s console: the course's header and attempt lines on stdout, its notes on
    stderr, the summary and where everything went; each attempt also reaches the
    --otlp-endpoint export and the progress bar."""

    def __init__(self, flags: dict[str, Any], debug: bool) -> None:
        self.flags, self.debug = flags, debug
        self.copied: list[str] = []
        """The attempts that passed by copying a document, for the summary."""

    @contextmanager
    def opening(self, prepared: Any) -> Iterator[Any]:
        from agent_eval.agents import tool_mode_note
        from agent_eval.cli.console import header
        from agent_eval.run import EachAttempt, Observers

        config = prepared.config
        exporter = otlp_exporter(self.flags)  # before any attempt: a missing extra fails fast
        click.echo(header(prepared.agent.scaffold, config.model, len(prepared.tasks),
                          config.repeats))  # fmt: skip
        click.echo("")  # the course's blank line under its header
        mode_note = tool_mode_note(prepared.agent.run_task_module, config.options, config.base_url,
                                   config.api_key, config.model)  # fmt: skip
        if mode_note:
            click.echo(mode_note, err=True)
        if self.flags["tasks"] is None:
            click.echo(tasks_note(prepared), err=True)
        click.echo(prepared.workspace_note, err=True)
        note_commands(prepared.loaded, command_checks(prepared.tasks))
        with progress_bar(prepared.attempts, "attempts") as bar:
            try:
                yield Observers(
                    EachAttempt(self._line),
                    export_observer(exporter, config.out, run_info(config)),
                    bar_observer(bar),
                )
            finally:
                if exporter is not None:
                    exporter.shutdown()

    def _line(self, row: Any) -> None:
        from agent_eval.cli.console import attempt_detail, attempt_line, crash_lines
        from agent_eval.score import is_copied_pass

        click.echo(attempt_line(row))
        if is_copied_pass(row.passed, row.answer, row.copied_share):
            self.copied.append(f"{row.id} r{row.attempt}")
        for line in crash_lines(row, every=self.debug):  # ours: stdout stays the course's
            click.echo(line, err=True)
        if self.flags["verbose"]:
            for line in attempt_detail(row):
                click.echo(line)

    def closing(self, done: Any) -> None:
        from agent_eval.cli.console import summary_block, written

        config, report = done.config, done.report
        if report.resumed:
            click.echo(f"resumed: {report.resumed} finished attempt(s) kept, not re-run", err=True)
        click.echo("")
        for line in summary_block(report.summary.model_dump(), config.prices.as_dict(),
                                  self.copied):  # fmt: skip
            click.echo(line)
        if config.out is not None:
            recorded = config.labbook if not report.interrupted else None
            for line in written(config.out, config.trajectory_dir, recorded):
                click.echo(line)
        say_test_looks(done)
        seen = config.out if config.out is not None else config.trajectory_dir
        click.echo(f"to see each attempt: {view_command([seen])}", err=True)


def run_info(config: RunConfig) -> dict[str, Any]:
    """What an exported trace says of the run it belongs to."""
    return {"engine": config.engine, "engine_version": config.engine_version, "lab": config.lab}


def export_observer(exporter: Any, out: Path | None, info: dict[str, Any]) -> Any:
    """Each attempt's trace to --otlp-endpoint, or None without one. Trajectory file names
    are relative to the results file's folder (the working folder without --out)."""
    if exporter is None:
        return None
    from agent_eval.trace import ExportEachAttempt

    return ExportEachAttempt(exporter, out.resolve().parent if out else Path.cwd(), info)


def bar_observer(bar: Any) -> Any:
    """The progress bar, one step an attempt, or None when stderr is no terminal."""
    if bar is None:
        return None
    from agent_eval.run import EachAttempt

    return EachAttempt(lambda _row: bar[0].advance(bar[1]))


def say_test_looks(done: Any) -> None:
    """Where a test-split run was recorded, and a warning once the split was looked at
    too often."""
    if done.test_looks is None:
        return
    click.echo(f"test split: this run is recorded in {done.config.labbook}", err=True)
    for warning in done.test_looks:
        click.echo(f"Warning: {warning}", err=True)


def tasks_note(prepared: Any) -> str:
    """The stderr line that says which suite a run without --tasks used, and why."""
    from agent_eval.starter import COURSE_SUITE_FILE

    suite, config = prepared.loaded.suite, prepared.config
    what = f"{suite.name} {suite.version}, {len(suite.tasks)} task(s)"
    if config.tasks == COURSE_SUITE_FILE:
        return f"suite: ./{config.tasks} ({what}), the course's default without --tasks"
    if config.replay is not None:
        return f"suite: the shipped {config.tasks} ({what}), the recorded run's ({config.replay})"
    return (
        f"suite: the shipped {config.tasks} ({what}): no --tasks given and no ./"
        f"{COURSE_SUITE_FILE} here (`agent-eval init` writes one)"
    )


CONSOLE_FLAGS = ("verbose", "otlp_endpoint", "otlp_headers", "otlp_content")
"""`run` flags that change what is shown or exported, not what is run."""


def run_settings(flags: dict[str, Any]) -> dict[str, Any]:
    """The run settings `run`'s flags give (also each side of a duel), by name, for
    build_settings: the flags less the console's and those not given, with the default
    suite and results folder filled in."""
    from agent_eval.starter import default_tasks

    settings = {key: value for key, value in flags.items()
                if key not in CONSOLE_FLAGS and value is not None}  # fmt: skip
    settings["tasks"] = flags["tasks"] or default_tasks(Path.cwd())
    settings["results_dir"] = "results"
    return settings


def recorded_defaults(flags: dict[str, Any]) -> dict[str, Any]:
    """`run`'s flags, with what --replay's recorded run used where the user gave nothing:
    its model, router model, repeats, seed, endpoint, limits, prices and options
    (replay.recorded_settings), its suite when it was a shipped one, and (without
    --task-id or --only) its tasks."""
    if not flags.get("replay"):
        return flags
    from agent_eval.errors import ConfigError
    from agent_eval.replay import recorded_settings
    from agent_eval.results import iter_rows, read_head

    path = Path(flags["replay"])
    if not path.is_file():
        raise ConfigError(
            f"--replay {path}: no such results file; give the results file of a run made "
            "with --record"
        )
    head = read_head(path).run
    context = click.get_current_context()
    default = click.core.ParameterSource.DEFAULT
    given = {name for name in flags if context.get_parameter_source(name) != default}
    flags = {**flags, **recorded_settings(path, given)}
    recorded_options = [f"{k}={v}" for k, v in (head.options or {}).items() if v != "[redacted]"]
    flags["options"] = (*recorded_options, *flags["options"])  # the user's win
    if "tasks" not in given:
        from agent_eval.replay import recorded_suite

        flags["tasks"] = recorded_suite(path, head.suite_hash)
    if not flags["task_ids"] and not flags["only"]:
        flags["task_ids"] = tuple(dict.fromkeys(row.id for row in iter_rows(path)))
    return flags


def otlp_exporter(flags: dict[str, Any]) -> Any:
    """The trace exporter `run --otlp-endpoint` asks for, or None."""
    if not flags["otlp_endpoint"]:
        return None
    from agent_eval.trace import OtlpExporter, parse_env_headers, parse_header_items

    headers = {
        **parse_env_headers(os.environ.get("OTEL_EXPORTER_OTLP_HEADERS", "")),
        **parse_header_items(flags["otlp_headers"]),
    }
    return OtlpExporter(
        flags["otlp_endpoint"],
        headers,
        content=flags["otlp_content"],
        warn=lambda message: click.echo(f"Warning: {message}", err=True),
    )


@click.command()
@click.argument("results")
@click.option("--tasks", required=True, help="The suite to score against (path or name).")
@click.option("--out", help="Write the rescored results here (default: only print).")
def rescore(results: str, tasks: str, out: str | None) -> int:
    """Score the saved attempts in RESULTS again against SUITE, without running anything."""
    from agent_eval.workflows import rescore_results

    outcome = rescore_results(Path(results), tasks, optional_path(out))
    for warning in outcome.warnings:
        click.echo(f"Warning: {warning}", err=True)
    for line in outcome.lines:
        click.echo(line)
    return EXIT_OK if outcome.all_passed else EXIT_FAILED


@click.command()
@click.argument("suite")
@text_or_json
@click.option("--workspace", help="Documents folder, for a suite that ships none.")
@click.option("--allow-empty-workspace", is_flag=True, help="The tasks need no documents.")
def audit(suite: str, fmt: str, workspace: str | None, allow_empty_workspace: bool) -> int:
    """Run degenerate baselines (empty answer, echo the task, dump every document, top
    search passage, "I cannot find that", the reference agents' own instructions) on
    SUITE and list the tasks they pass.

    Exit code 2 when some task can be gamed, so CI can guard a suite.
    """
    import json

    from agent_eval.suite import load_suite
    from agent_eval.workflows import run_audit

    loaded = load_suite(suite)
    note_commands(loaded, command_checks(loaded.suite.tasks))
    found = run_audit(suite, optional_path(workspace), allow_empty_workspace)
    if fmt == "json":
        click.echo(json.dumps(found.as_json(), indent=2))
    else:
        for line in found.lines():
            click.echo(line)
    return EXIT_FAILED if found.gameable else EXIT_OK


@click.command()
@click.argument("folder")
@click.option("-o", "--out", required=True, help="Where to write the index folder.")
def index(folder: str, out: str) -> int:
    """Build a BM25 search index of the documents in FOLDER once; give it to runs with
    --index so every attempt searches it instead of indexing its workspace.
    """
    from agent_eval.tools import build_index

    count = build_index(Path(folder), Path(out))
    click.echo(f"indexed {count} passage(s) from {folder} into {out}")
    return EXIT_OK
