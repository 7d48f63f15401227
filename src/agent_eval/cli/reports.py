"""Commands that read saved runs: report, compare, history and export-otel."""

from __future__ import annotations

import gc
import os
import pickle
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from agent_eval.cli.common import EXIT_FAILED, EXIT_INPUT, EXIT_OK, emit_report, text_or_json

if TYPE_CHECKING:
    from agent_eval.report import RunTotals
    from agent_eval.results import RunResults

T = TypeVar("T")

cluster_option = click.option(
    "--cluster",
    default="none",
    show_default=True,
    type=click.Choice(["none", "group", "category"]),
    help="Make SEs, intervals and repeats needed cluster-robust over task groups or "
    "categories; none keeps one cluster per task.",
)


@click.command()
@click.argument("results", nargs=-1, required=True)
@click.option(
    "--format",
    "fmt",
    default="text",
    show_default=True,
    type=click.Choice(["text", "markdown", "junit", "html", "json"]),
    help="text for a terminal, markdown for a CI step summary, junit for CI dashboards "
    "(one run), html for one self-contained page with plots, json for machines.",
)
@click.option("--out", help="Write the report to this file instead of printing it.")
@click.option(
    "--baseline",
    help="With several runs: pair every run against this results file (default: the first).",
)
@click.option(
    "--allow-suite-change",
    is_flag=True,
    help="With several runs: pair the shared task ids even though the suite hashes differ.",
)
@cluster_option
def report(
    results: tuple[str, ...],
    fmt: str,
    out: str | None,
    baseline: str | None,
    allow_suite_change: bool,
    cluster: str,
) -> int:
    """Report one run from its RESULTS file alone: success with intervals, pass@k and
    pass^k, the variance split, unstable tasks, failure classes, tokens and cost.

    RESULTS may also be an Inspect AI log (.eval or .json), an ATIF trajectory file, a
    folder of them or a Harbor job folder; a log of several agents or models is several
    runs.

    With several RESULTS files: one table, a row per configuration (success with its
    interval, mean steps, tokens and seconds, cost), then each run's paired verdict
    against the first (or --baseline).
    """
    from agent_eval.interop import load_run, load_runs

    if len(results) == 1 and baseline is None and _own_results_file(results[0]):
        from agent_eval.results import load_back_rows, load_results

        # A child validates the back of the file's rows while this imports and validates
        # the front: a large run loads in about half the time.
        with _in_child(partial(load_back_rows, results[0])) as back_rows:
            from agent_eval.report import render_report

            runs = [load_results(results[0], back_rows)]
    else:
        runs = [run for path in results for run in load_runs(path)]
    from agent_eval.report import render_report

    if len(runs) == 1 and baseline is None:
        text = render_report(runs[0], fmt, cluster)
    else:
        from agent_eval.report import check_multi_format, multi_report, render_multi

        check_multi_format(fmt)
        doc = multi_report(
            runs,
            baseline=load_run(baseline) if baseline else None,
            allow_suite_change=allow_suite_change,
            cluster=cluster,
        )
        text = render_multi(doc, fmt)
    emit_report(text, fmt, out)
    return EXIT_OK


@click.command()
@click.argument("a")
@click.argument("b")
@text_or_json
@click.option(
    "--alpha",
    default=0.05,
    show_default=True,
    type=float,
    help="Significance level of both tests and of the planning figures.",
)
@click.option(
    "--power",
    default=0.8,
    show_default=True,
    type=float,
    help="Power the repeats-needed and MDE figures plan for.",
)
@click.option(
    "--delta",
    type=float,
    help="Difference in success rate to plan for (default: the observed one).",
)
@click.option(
    "--fail-if-worse",
    is_flag=True,
    help="Exit 2 when B is worse than A beyond attempt noise on this suite.",
)
@click.option(
    "--allow-suite-change",
    is_flag=True,
    help="Pair the shared task ids even though the suite hashes differ.",
)
@cluster_option
def compare(
    a: str,
    b: str,
    fmt: str,
    alpha: float,
    power: float,
    delta: float | None,
    fail_if_worse: bool,
    allow_suite_change: bool,
    cluster: str,
) -> int:
    """Compare run B against run A, paired by task id, and say whether the change is real.

    A and B may be results files, Inspect AI logs or ATIF runs, in any mix."""
    from agent_eval.interop import load_run, task_differences

    differences = None  # two agent-eval runs: their suite hashes say how their tasks differ
    if _own_results_file(a) and _own_results_file(b):
        with _in_child(partial(_totals_of, b)) as totals_of_b:
            from agent_eval.report import run_totals

            totals_a = run_totals(load_run(a))
            # Loaded here after all when the child could not: any error is then this one's.
            totals_b = totals_of_b() or run_totals(load_run(b))
    else:
        from agent_eval.report import run_totals

        first, second = load_run(a), load_run(b)
        differences = task_differences(first, second)
        totals_a, totals_b = run_totals(first), run_totals(second)
    from agent_eval.report import compare_totals, render_compare

    if totals_a.path.resolve() == totals_b.path.resolve() or totals_a.run == totals_b.run:
        click.echo(  # the same file, or a copy
            f"Warning: A and B are the same run ({totals_a.run.run_id}); "
            "every difference is zero by construction; compare two different runs",
            err=True,
        )
    result = compare_totals(
        totals_a,
        totals_b,
        differences=differences,
        alpha=alpha,
        power=power,
        delta=delta,
        allow_suite_change=allow_suite_change,
        cluster=cluster,
    )
    click.echo(render_compare(result, fmt), nl=False)
    for path in result["unverified_suites"]:
        click.echo(
            f"Warning: {path} records no suite hash (the course harness writes none), so a "
            "change to its tasks cannot be detected; it is paired by suite name and version",
            err=True,
        )
    if fail_if_worse and result["worse_beyond_noise"]:
        click.echo("B is worse than A beyond attempt noise (--fail-if-worse)", err=True)
        return EXIT_FAILED
    return EXIT_OK


def _totals_of(path: str) -> RunTotals:
    from agent_eval.interop import load_run
    from agent_eval.report import run_totals

    return run_totals(load_run(path))


def _own_results_file(path: str) -> bool:
    """Whether ``path`` is a file that is not another harness's run."""
    from agent_eval.interop import foreign_kind

    return Path(path).is_file() and foreign_kind(Path(path)) is None


@contextmanager
def _in_child(work: Callable[[], T]) -> Iterator[Callable[[], T | None]]:
    """Run ``work`` in a forked child while this process goes on; the function given
    waits for its result, None when the child could not give one (no fork here, or any
    error), and the caller then does the work itself, so that every message is the one it
    would have given alone.

    Loading a run is pydantic's work, which holds the GIL: a second process is the only
    way to use a second core. It costs CPU (the child pickles what it gives, about a
    fifth of a second for half a 100,000-row run), so with one core to run on the work is
    left to this process. Only for a command: forking a process with threads is unsafe.
    """
    from agent_eval.processes import usable_cores

    if not hasattr(os, "fork") or usable_cores() < 2:
        # One core: the child's pickling would only add to the same core's work.
        yield lambda: None
        return
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: it never returns, and runs no exit handler of the parent's
        # Short-lived and making only acyclic objects: without the collector, validating
        # and pickling take half the time, and no pass writes to (so copies) the pages it
        # shares with the parent.
        gc.disable()
        os.close(read_end)
        code = 1
        try:
            data = pickle.dumps(work(), pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write_end, "wb") as sink:
                sink.write(data)
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    reaped = False

    def result() -> T | None:
        nonlocal reaped
        with os.fdopen(read_end, "rb") as source:
            data = source.read()
        _, status = os.waitpid(pid, 0)
        reaped = True
        found: T | None = pickle.loads(data) if status == 0 else None
        return found

    try:
        yield result
    finally:
        if not reaped:  # this side stopped first (an error): the child's work is not wanted
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read_end)


max_test_looks_option = click.option(
    "--max-test-looks",
    default=3,
    show_default=True,
    type=click.IntRange(min=1),
    help="Warn when one suite version's test split has been evaluated more often than this.",
)


@click.command()
@click.argument("runs", nargs=-1)
@click.option("--labbook", help="The JSON-lines file runs appended to.")
@text_or_json
@max_test_looks_option
def history(runs: tuple[str, ...], labbook: str | None, fmt: str, max_test_looks: int) -> int:
    """List the runs in a labbook over time, and flag suites changed without a version
    bump and test splits evaluated too often.

    Instead of --labbook, give RUNS: results files, Inspect AI logs, ATIF folders or
    Harbor jobs, or folders holding them."""
    from agent_eval.errors import ConfigError
    from agent_eval.report import history_of_runs, read_history, render_history

    if (labbook is None) == (not runs):
        raise ConfigError(
            "history: give either --labbook FILE or saved runs (results files, Inspect AI "
            "logs, ATIF folders), not both and not neither"
        )
    document = read_history(labbook) if labbook else history_of_runs(runs)
    click.echo(render_history(document, fmt, max_test_looks), nl=False)
    return EXIT_OK


@click.command("export-otel")
@click.argument("results")
@click.option(
    "--otlp-endpoint",
    required=True,
    help="OTLP/HTTP base URL (http://127.0.0.1:4318) or a full .../v1/traces URL.",
)
@click.option(
    "--otlp-header",
    "headers",
    multiple=True,
    metavar="KEY=VALUE",
    help="A header for the endpoint (repeatable); adds to OTEL_EXPORTER_OTLP_HEADERS.",
)
@click.option(
    "--otlp-content", is_flag=True, help="Also send the task text, model content and tool results."
)
@click.option(
    "--phoenix-annotations",
    metavar="URL",
    help="Also post each attempt's verdict and checks as span annotations to this Phoenix "
    "server (http://127.0.0.1:6006); the headers go with them. Re-sending updates them.",
)
def export_otel(
    results: str,
    otlp_endpoint: str,
    headers: tuple[str, ...],
    otlp_content: bool,
    phoenix_annotations: str | None,
) -> int:
    """Send every attempt of a saved run to an OTLP trace store, at its recorded times."""
    from agent_eval.trace import OtlpExporter, parse_env_headers, parse_header_items

    sent_headers = {
        **parse_env_headers(os.environ.get("OTEL_EXPORTER_OTLP_HEADERS", "")),
        **parse_header_items(headers),
    }
    from agent_eval.trace import annotations_url, post_annotations

    target = annotations_url(phoenix_annotations) if phoenix_annotations else None
    with OtlpExporter(otlp_endpoint, sent_headers, content=otlp_content) as exporter:
        summary = exporter.export_results(Path(results))
    for problem in summary.problems:
        click.echo(f"Warning: {problem}", err=True)
    click.echo(f"{summary.sent} of {summary.attempts} attempts sent to {exporter.shown_url}")
    code = EXIT_OK
    if summary.sent < summary.attempts:
        why = f": {summary.warning}" if summary.warning else ""
        missed = summary.attempts - summary.sent
        click.echo(f"Error: {missed} of {summary.attempts} attempts not sent{why}", err=True)
        code = EXIT_INPUT
    if phoenix_annotations:
        posted = post_annotations(phoenix_annotations, summary.plans, sent_headers)
        if posted.error:
            click.echo(f"Error: annotations not sent: {posted.error}", err=True)
            return EXIT_INPUT
        click.echo(
            f"{posted.annotations} annotations on {posted.attempts} attempts sent to {target}"
        )
    return code


@click.command()
@click.argument("results")
@click.option(
    "--format",
    "fmt",
    required=True,
    type=click.Choice(["inspect", "atif"]),
    help="inspect: one Inspect AI log (.eval, or .json by the --out suffix), a sample per "
    "attempt; atif: one ATIF trajectory file per attempt in the --out folder.",
)
@click.option("--out", required=True, help="The log file (inspect) or folder (atif) to write.")
def export(results: str, fmt: str, out: str) -> int:
    """Write a saved run in another harness's format: an Inspect AI log that Inspect's
    reader and viewer open, or ATIF trajectories that Harbor and other ATIF tools read."""
    from agent_eval.errors import ConfigError
    from agent_eval.interop import load_run

    run = load_run(results)
    target = Path(out)
    try:
        message = _export(run, fmt, target)
    except OSError as exc:
        raise ConfigError(
            f"export --out {out}: cannot be written ({exc.strerror or exc}); check that the "
            "folder exists and is writable"
        ) from None
    click.echo(message)
    return EXIT_OK


def _export(run: RunResults, fmt: str, target: Path) -> str:
    from agent_eval.errors import ConfigError

    if fmt == "inspect":
        from agent_eval.interop import write_inspect_log

        if target.suffix not in (".eval", ".json"):
            raise ConfigError(f"export --out {target}: an Inspect AI log ends in .eval or .json")
        count = write_inspect_log(run, target)
        return f"{count} attempts written to {target} (Inspect AI log)"
    from agent_eval.interop import write_atif

    if target.exists() and not target.is_dir():
        raise ConfigError(f"export --out {target}: not a folder; ATIF is one file per attempt")
    written = write_atif(run, target)
    return f"{len(written)} attempts written to {target} (one ATIF file each)"
