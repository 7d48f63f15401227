"""The `agent-eval` command: parse flags, call the library, print, and set the exit code.

Exit codes: 0 when everything passed, 2 when some attempt failed (or a comparison found
B worse), 1 for a usage or input error, printed as one `Error: ...` line on stderr.
`--debug` anywhere on the command line shows the traceback instead.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from agent_eval import __version__
from agent_eval.errors import AgentEvalError, SuiteError

EXIT_OK, EXIT_INPUT, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 2, 130


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    args = [a for a in args if a != "--debug"]
    try:
        code = cli.main(args=args, prog_name="agent-eval", standalone_mode=False)
    except click.exceptions.Abort:
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
        code = EXIT_INPUT
    sys.exit(code if isinstance(code, int) else EXIT_OK)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="agent-eval")
@click.option("--debug", is_flag=True, help="Show the traceback of an error.")
def cli(debug: bool) -> None:
    """Measure AI agents on versioned, program-checked task suites.

    Run a suite against any agent with repeats, keep one trajectory per attempt, score
    every attempt deterministically, and report success, steps, tokens, seconds and cost.
    """


@contextmanager
def progress_bar(total: int, label: str) -> Iterator[Any]:
    """A rich progress bar on stderr, only when stderr is a terminal."""
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


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


@cli.command()
@click.argument("suite")
def validate(suite: str) -> int:
    """Check SUITE (a path or a shipped name such as part26) and list every problem."""
    from agent_eval.suite import load_suite

    try:
        loaded = load_suite(suite)
    except SuiteError as exc:
        for problem in exc.problems:
            click.echo(problem)
        raise SuiteError(f"suite {suite}: {len(exc.problems)} problem(s) listed above") from exc
    s = loaded.suite
    docs = f", documents in {loaded.documents}" if loaded.documents else ""
    click.echo(f"ok  {s.name} {s.version}: {len(s.tasks)} task(s), {loaded.hash}{docs}")
    return EXIT_OK


RUN_HELP = """Run every task of a suite against an agent, with repeats.

\b
AGENT forms:  path/to/agent.py | package.module:object | builtin:NAME
Examples:
  agent-eval run --agent my_agent.py --tasks part26 --repeats 3 --out r.json
  agent-eval run --agent builtin:minimal --base-url http://127.0.0.1:4001/v1 --model any

Exit code 0 when every attempt passed, 2 when some failed, 1 on an input error.
"""


@cli.command(help=RUN_HELP)
@click.option("--agent", required=True, help="A .py file, module:object or builtin:NAME.")
@click.option("--tasks", default="part26", show_default=True, help="Suite file or shipped name.")
@click.option("--only", multiple=True, help="Keep only tasks of this category (repeatable).")
@click.option("--task-id", "task_ids", multiple=True, help="Keep only this task id (repeatable).")
@click.option("--repeats", default=1, show_default=True, type=int, help="Attempts per task.")
@click.option("--out", help="Write the results JSON here.")
@click.option(
    "--trajectory-dir", default="trajectories", show_default=True,
    help="Folder for one JSON-lines trajectory per attempt.",
)
@click.option(
    "--base-url", envvar="OPENAI_BASE_URL", default="http://127.0.0.1:4000/v1", show_default=True,
    help="OpenAI-compatible endpoint given to the agent [env OPENAI_BASE_URL].",
)
@click.option("--model", default="local/chat", show_default=True, help="Model name for the agent.")
@click.option("--router-model", help="Model for a multi-agent router (default: --model).")
@click.option(
    "--api-key", envvar="OPENAI_API_KEY", help="API key for the endpoint [env OPENAI_API_KEY]; "
    "never written to any file.",
)
@click.option("--workspace", help="Folder copied fresh into each attempt (default: suite's).")
@click.option("--index", help="A search index built by `agent-eval index`, given to the agent.")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE",
              help="Extra option passed to the agent (repeatable), e.g. tool_mode=json.")
@click.option("--cost-per-million", type=float, help="Your price per million tokens.")
@click.option("--input-cost-per-million", type=float, help="Your price per million input tokens.")
@click.option("--output-cost-per-million", type=float, help="Your price per million output tokens.")
@click.option("--quant", help="Quantisation label recorded with the run, e.g. Q4_K_M.")
@click.option("--engine", help="Inference engine recorded with the run, e.g. llama.cpp.")
@click.option("--engine-version", help="Engine version recorded with the run.")
@click.option("--notes", help="Free text recorded with the run.")
@click.option("--lab", help="Lab or project label recorded with the run.")
@click.option("--labbook", help="Append the run's record to this JSON-lines file.")
@click.option("--verbose", is_flag=True, help="Print each answer and what failed.")
@click.option("--concurrency", default=1, show_default=True, type=int,
              help="Attempts run side by side, each in its own worker process.")
@click.option("--max-infra-retries", default=2, show_default=True, type=int,
              help="Retries of an attempt whose endpoint failed (down, timeout, 429, 5xx).")
@click.option("--timeout-per-task", type=float,
              help="Hard time budget per attempt in seconds (a task's max_seconds wins).")
@click.option("--max-memory-mb", type=int, help="Memory limit of each worker process.")
@click.option("--resume", help="Continue an interrupted run from its results file or journal.")
@click.option("--seed", type=int, help="Seed for every choice the harness makes.")
@click.option("--shuffle", is_flag=True, help="Run attempts in a seeded random order.")
@click.option("--otlp-endpoint",
              help="Send each attempt as an OpenTelemetry trace to this OTLP/HTTP endpoint.")
@click.option("--otlp-header", "otlp_headers", multiple=True, metavar="KEY=VALUE",
              help="A header for the endpoint (repeatable); adds to OTEL_EXPORTER_OTLP_HEADERS.")
@click.option("--otlp-content", is_flag=True,
              help="Also send the task text, model content and tool results.")
def run(**flags: Any) -> int:
    from agent_eval.run.config import Prices, RunConfig, parse_options
    from agent_eval.run.console import attempt_detail, attempt_line, header, summary_block
    from agent_eval.run.runner import execute, prepare

    config = RunConfig(
        agent=flags["agent"],
        tasks=flags["tasks"],
        only=tuple(flags["only"]),
        task_ids=tuple(flags["task_ids"]),
        repeats=flags["repeats"],
        out=_path(flags["out"]),
        trajectory_dir=Path(flags["trajectory_dir"]),
        base_url=flags["base_url"],
        model=flags["model"],
        router_model=flags["router_model"],
        api_key=flags["api_key"],
        workspace=_path(flags["workspace"]),
        index=_path(flags["index"]),
        options=parse_options(flags["options"]),
        prices=Prices(
            flags["cost_per_million"],
            flags["input_cost_per_million"],
            flags["output_cost_per_million"],
        ),
        quant=flags["quant"],
        engine=flags["engine"],
        engine_version=flags["engine_version"],
        notes=flags["notes"],
        lab=flags["lab"],
        labbook=_path(flags["labbook"]),
        concurrency=flags["concurrency"],
        max_infra_retries=flags["max_infra_retries"],
        timeout_per_task=flags["timeout_per_task"],
        max_memory_mb=flags["max_memory_mb"],
        resume=_path(flags["resume"]),
        seed=flags["seed"],
        shuffle=flags["shuffle"],
    )
    if config.resume is not None and config.out is None and config.resume.suffix == ".json":
        config = replace(config, out=config.resume)
    prepared = prepare(config)
    exporter = _otlp_exporter(flags)  # before any attempt, so a missing extra fails fast
    run_info = {"engine": config.engine, "engine_version": config.engine_version, "lab": config.lab}
    base = config.out.resolve().parent if config.out is not None else Path.cwd()
    click.echo(header(prepared.agent.scaffold, config.model, len(prepared.tasks), config.repeats))
    click.echo(prepared.workspace_note, err=True)
    with progress_bar(prepared.attempts, "attempts") as bar:

        def on_attempt(row: Any) -> None:
            click.echo(attempt_line(row))
            if flags["verbose"]:
                for line in attempt_detail(row):
                    click.echo(line)
            if exporter is not None and row.trajectory_file:
                exporter.export_trajectory(base / row.trajectory_file, run_info)
            if bar is not None:
                bar[0].advance(bar[1])

        try:
            report = execute(prepared, on_attempt)
        finally:
            if exporter is not None:
                exporter.shutdown()
    if report.resumed:
        click.echo(f"resumed: {report.resumed} finished attempt(s) kept, not re-run", err=True)
    click.echo("")
    for line in summary_block(report.document["run"]["summary"], config.prices.as_dict()):
        click.echo(line)
    if config.out is not None:
        click.echo(f"results written to {config.out}", err=True)
    if report.interrupted:
        click.echo("Error: interrupted; the attempts that finished were written", err=True)
        return EXIT_INTERRUPTED
    return EXIT_OK if report.all_passed else EXIT_FAILED


def _otlp_exporter(flags: dict[str, Any]) -> Any:
    """The trace exporter `run --otlp-endpoint` asks for, or None."""
    if not flags["otlp_endpoint"]:
        return None
    from agent_eval.trace.otel import OtlpExporter, parse_env_headers, parse_header_items

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


@cli.command()
@click.argument("results")
@click.option("--tasks", required=True, help="The suite to score against (path or name).")
@click.option("--out", help="Write the rescored results here (default: only print).")
def rescore(results: str, tasks: str, out: str | None) -> int:
    """Score the saved attempts in RESULTS again against SUITE, without running anything."""
    from agent_eval.run.rescore import rescore as rescore_results

    outcome = rescore_results(Path(results), tasks, _path(out))
    for line in outcome.lines:
        click.echo(line)
    return EXIT_OK if outcome.all_passed else EXIT_FAILED


@cli.command()
@click.argument("suite")
@click.option("--format", "fmt", default="text", show_default=True,
              type=click.Choice(["text", "json"]), help="text for people, json for machines.")
@click.option("--workspace", help="Documents folder, for a suite that ships none.")
def audit(suite: str, fmt: str, workspace: str | None) -> int:
    """Run degenerate baselines (empty answer, echo the task, dump every document, top
    search passage, "I cannot find that") on SUITE and list the tasks they pass.

    Exit code 2 when some task can be gamed, so CI can guard a suite.
    """
    import json

    from agent_eval.run.audit import audit as run_audit

    found = run_audit(suite, _path(workspace))
    if fmt == "json":
        click.echo(json.dumps(found.as_json(), indent=2))
    else:
        for line in found.lines():
            click.echo(line)
    return EXIT_FAILED if found.gameable else EXIT_OK


@cli.command()
@click.argument("folder")
@click.option("-o", "--out", required=True, help="Where to write the index folder.")
def index(folder: str, out: str) -> int:
    """Build a BM25 search index of the documents in FOLDER once; give it to runs with
    --index so every attempt searches it instead of indexing its workspace.
    """
    from agent_eval.tools.search_documents import build_index

    count = build_index(Path(folder), Path(out))
    click.echo(f"indexed {count} passage(s) from {folder} into {out}")
    return EXIT_OK


@cli.command()
@click.option("--out-dir", default="demo-out", show_default=True,
              help="Folder for results, trajectories, HTML reports and the labbook.")
@click.option("--repeats", default=3, show_default=True, type=int, help="Attempts per task.")
@click.option("--task-id", "task_ids", multiple=True,
              help="Run only this part26 task (repeatable), for a quick look.")
@click.option("--parallel", default=2, show_default=True, type=click.IntRange(min=1),
              help="Model instances, and attempts run side by side.")
def demo(out_dir: str, repeats: int, task_ids: tuple[str, ...], parallel: int) -> int:
    """The main job: the shipped suite against both reference agents on the embedded
    local model, offline. Prints each run's report and their comparison, writes HTML
    reports and a labbook, and stops the model server.
    """
    from agent_eval.demo import DemoPlan, run_demo

    @contextmanager
    def progress(total: int, label: str) -> Iterator[Callable[[], None]]:
        with progress_bar(total, label) as bar:
            yield (lambda: bar[0].advance(bar[1])) if bar is not None else (lambda: None)

    plan = DemoPlan(Path(out_dir), repeats, parallel=parallel, task_ids=task_ids)
    return run_demo(click.echo, progress, plan)


# --- commands below are thin wrappers added per capability (append, keep each thin) ---


@cli.command("serve-model")
@click.option("--port", default=4000, show_default=True, type=int, help="Port; 0 picks a free one.")
@click.option(
    "--host", default="127.0.0.1", show_default=True,
    help="Address to bind; a non-loopback one needs --allow-remote.",
)
@click.option(
    "--model-path", type=click.Path(exists=True, dir_okay=False),
    help="Serve this GGUF file instead of the shipped Gemma 3 270M Q4_K_M.",
)
@click.option(
    "--parallel", default=1, show_default=True, type=click.IntRange(min=1),
    help="Model instances, that is requests answered at once.",
)
@click.option(
    "--n-ctx", default=8192, show_default=True, type=click.IntRange(min=256),
    help="Context window per instance, in tokens.",
)
@click.option(
    "--threads", type=click.IntRange(min=1),
    help="llama.cpp threads per instance [default: half the cores / --parallel].",
)
@click.option("--allow-remote", is_flag=True, help="Allow a non-loopback --host (no auth).")
def serve_model(
    port: int, host: str, model_path: str | None, parallel: int, n_ctx: int,
    threads: int | None, allow_remote: bool,
) -> int:
    """Serve a GGUF model over an OpenAI-compatible API until Ctrl-C.

    It answers the models local/chat, local/answer and local/router, and reports the
    model file, quantisation and engine version at /health.
    """
    import os

    from agent_eval.models.local_server import LocalModelServer

    xdg = os.environ.get("XDG_CACHE_HOME")
    server = LocalModelServer(
        model_path=_path(model_path), host=host, port=port, parallel=parallel, n_ctx=n_ctx,
        n_threads=threads, allow_remote=allow_remote,
        cache_dir=Path(xdg) / "agent-eval" / "models" if xdg else None,
    )
    server.open()
    info = server.health()
    click.echo(
        f"serving {info['model_file']} ({info['quant']}, {info['engine']} via "
        f"{info['engine_binding']} {info['engine_version']}) at {server.base_url}"
    )
    click.echo(f"models: {', '.join(c['id'] for c in server.model_cards())}; Ctrl-C stops")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        click.echo("stopped", err=True)
    return EXIT_OK


@cli.command("mock-model")
@click.option("--script", "script_path", required=True, help="The JSON script of replies.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", default=4001, show_default=True, type=click.IntRange(0, 65535),
    help="Port to listen on (0 picks a free one).",
)
@click.option(
    "--latency", default=0.0, show_default=True, type=click.FloatRange(min=0),
    help="Seconds added to every reply.",
)
@click.option(
    "--fault-rate", default=0.0, show_default=True, type=click.FloatRange(0, 1),
    help="Share of requests that fail with an injected fault.",
)
@click.option(
    "--faults", default="429,500,503,timeout,malformed", show_default=True,
    help="Comma-separated fault kinds drawn at --fault-rate (also no_choices).",
)
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the fault draws.")
def mock_model(
    script_path: str, host: str, port: int, latency: float, fault_rate: float, faults: str,
    seed: int,
) -> int:
    """Serve scripted chat-completion replies until Ctrl-C, for hermetic agent tests.

    The server answers /v1/models and /v1/chat/completions from the script's rules and
    ordered replies, in native tool-call or JSON-action mode (see examples/mock-replies.json).
    """
    from agent_eval.models.mock_server import serve

    kinds = tuple(k.strip() for k in faults.split(",") if k.strip())
    serve(script_path, host, port, latency, fault_rate, kinds, seed)
    return EXIT_OK


@cli.command()
@click.argument("results")
@click.option(
    "--format", "fmt", default="text", show_default=True,
    type=click.Choice(["text", "markdown", "junit", "html", "json"]),
    help="text for a terminal, markdown for a CI step summary, junit for CI dashboards, "
    "html for one self-contained page with plots, json for machines.",
)
@click.option("--out", help="Write the report to this file instead of printing it.")
def report(results: str, fmt: str, out: str | None) -> int:
    """Report one run from its RESULTS file alone: success with intervals, pass@k and
    pass^k, the variance split, unstable tasks, failure classes, tokens and cost.
    """
    from agent_eval.report import load_results, render_report, write_output

    text = render_report(load_results(results), fmt)
    if out:
        write_output(text, out)
        click.echo(f"{fmt} report written to {out}", err=True)
    else:
        click.echo(text, nl=False)
    return EXIT_OK


@cli.command()
@click.argument("a")
@click.argument("b")
@click.option("--format", "fmt", default="text", show_default=True,
              type=click.Choice(["text", "json"]), help="text for people, json for machines.")
@click.option("--alpha", default=0.05, show_default=True, type=float,
              help="Significance level of both tests and of the planning figures.")
@click.option("--power", default=0.8, show_default=True, type=float,
              help="Power the repeats-needed and MDE figures plan for.")
@click.option("--delta", type=float,
              help="Difference in success rate to plan for (default: the observed one).")
@click.option("--fail-if-worse", is_flag=True,
              help="Exit 2 when B is worse than A beyond attempt noise on this suite.")
@click.option("--allow-suite-change", is_flag=True,
              help="Pair the shared task ids even though the suite hashes differ.")
def compare(a: str, b: str, fmt: str, alpha: float, power: float, delta: float | None,
            fail_if_worse: bool, allow_suite_change: bool) -> int:
    """Compare run B against run A, paired by task id, and say whether the change is real."""
    from agent_eval.report import compare_runs, load_results, render_compare

    result = compare_runs(load_results(a), load_results(b), alpha=alpha, power=power,
                          delta=delta, allow_suite_change=allow_suite_change)
    click.echo(render_compare(result, fmt), nl=False)
    if fail_if_worse and result["worse_beyond_noise"]:
        click.echo("B is worse than A beyond attempt noise (--fail-if-worse)", err=True)
        return EXIT_FAILED
    return EXIT_OK


@cli.command()
@click.option("--labbook", required=True, help="The JSON-lines file runs appended to.")
@click.option("--format", "fmt", default="text", show_default=True,
              type=click.Choice(["text", "json"]), help="text for people, json for machines.")
def history(labbook: str, fmt: str) -> int:
    """List the runs in a labbook over time, and flag suites changed without a version bump."""
    from agent_eval.report import read_history, render_history

    click.echo(render_history(read_history(labbook), fmt), nl=False)
    return EXIT_OK


@cli.command("export-otel")
@click.argument("results")
@click.option("--otlp-endpoint", required=True,
              help="OTLP/HTTP base URL (http://127.0.0.1:4318) or a full .../v1/traces URL.")
@click.option("--otlp-header", "headers", multiple=True, metavar="KEY=VALUE",
              help="A header for the endpoint (repeatable); adds to OTEL_EXPORTER_OTLP_HEADERS.")
@click.option("--otlp-content", is_flag=True,
              help="Also send the task text, model content and tool results.")
def export_otel(results: str, otlp_endpoint: str, headers: tuple[str, ...],
                otlp_content: bool) -> int:
    """Send every attempt of a saved run to an OTLP trace store, at its recorded times."""
    from agent_eval.trace.otel import OtlpExporter, parse_env_headers, parse_header_items

    sent_headers = {**parse_env_headers(os.environ.get("OTEL_EXPORTER_OTLP_HEADERS", "")),
                    **parse_header_items(headers)}
    with OtlpExporter(otlp_endpoint, sent_headers, content=otlp_content) as exporter:
        summary = exporter.export_results(Path(results))
    for problem in summary.problems:
        click.echo(f"Warning: {problem}", err=True)
    click.echo(f"{summary.sent} of {summary.attempts} attempts sent to {exporter.shown_url}")
    if summary.sent < summary.attempts:
        why = f": {summary.warning}" if summary.warning else ""
        missed = summary.attempts - summary.sent
        click.echo(f"Error: {missed} of {summary.attempts} attempts not sent{why}", err=True)
        return EXIT_INPUT
    return EXIT_OK
