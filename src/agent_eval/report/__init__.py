"""Reports built from results files alone: text, Markdown, JUnit, HTML, JSON, compare, history.

Nothing here imports the runner, so a results file from any past run can be re-reported
offline.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic_core import to_json as _pydantic_json

from agent_eval.errors import ConfigError
from agent_eval.lazy import lazy_getattr
from agent_eval.report.compare import RunTotals, compare_runs, compare_totals, run_totals
from agent_eval.report.compare_text import render_compare_text
from agent_eval.report.history import (
    DEFAULT_MAX_TEST_LOOKS,
    overlooked,
    read_history,
    render_history_text,
)
from agent_eval.report.run_report import summarise_run
from agent_eval.results import RunResults, TaskOutcome, load_results

# The face's names that live in its modules, imported on first use (__getattr__).
if TYPE_CHECKING:
    from agent_eval.report.across_runs import multi_report
    from agent_eval.report.across_runs_text import check_multi_format, render_multi
    from agent_eval.report.history import history_of_runs
    from agent_eval.report.lesson import render_lesson


REPORT_FORMATS = ("text", "markdown", "junit", "html", "json")
"""Formats of ``agent-eval report``."""

__all__ = [
    "REPORT_FORMATS",
    "RunResults",
    "RunTotals",
    "TaskOutcome",
    "check_multi_format",
    "compare_runs",
    "compare_totals",
    "history_of_runs",
    "load_results",
    "multi_report",
    "overlooked",
    "read_history",
    "render_compare",
    "render_compare_text",
    "render_history",
    "render_history_text",
    "render_lesson",
    "render_multi",
    "render_report",
    "run_totals",
    "summarise_run",
    "write_output",
]


def render_report(results: RunResults, fmt: str = "text", cluster: str = "none") -> str:
    """One run's report in the given format, its tasks clustered by ``cluster``."""
    report = summarise_run(results, cluster)
    if fmt == "text":
        from agent_eval.report.text import render_text

        return render_text(report)
    if fmt == "markdown":
        from agent_eval.report.markdown import render_markdown

        return render_markdown(report)
    if fmt == "junit":
        from agent_eval.report.junit import render_junit

        return render_junit(results, report)
    if fmt == "html":
        from agent_eval.report.html import render_html

        return render_html(results, report)
    if fmt == "json":
        return to_json(report)
    raise ConfigError(f"report: unknown format {fmt!r} (use one of {', '.join(REPORT_FORMATS)})")


def render_compare(result: dict[str, Any], fmt: str = "text") -> str:
    """A comparison as text or JSON."""
    if fmt == "json":
        return to_json(result)
    if fmt == "text":
        return render_compare_text(result)
    raise ConfigError(f"compare: unknown format {fmt!r} (use text or json)")


def render_history(
    history: dict[str, Any], fmt: str = "text", max_looks: int = DEFAULT_MAX_TEST_LOOKS
) -> str:
    """A labbook history as text or JSON; both warn of a test split looked at too often."""
    if fmt == "json":
        return to_json({**history, "warnings": overlooked(history, max_looks)})
    if fmt == "text":
        return render_history_text(history, max_looks=max_looks)
    raise ConfigError(f"history: unknown format {fmt!r} (use text or json)")


def to_json(document: dict[str, Any]) -> str:
    """Indented JSON with a final newline; NaN never appears, undefined values are null.

    pydantic-core's encoder: the standard library's falls back to pure Python when it
    indents, a third of a second for a 100,000-row report."""
    return _pydantic_json(document, indent=2, inf_nan_mode="null").decode() + "\n"


def write_output(text: str, out: str | Path) -> None:
    """Write a report to ``out``; ConfigError naming the path when it cannot be written."""
    path = Path(out)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"--out {path}: cannot write the report ({exc.strerror}); check "
            "that the folder exists and is writable"
        ) from None


_LAZY = {
    "check_multi_format": "agent_eval.report.across_runs_text:check_multi_format",
    "history_of_runs": "agent_eval.report.history:history_of_runs",
    "multi_report": "agent_eval.report.across_runs:multi_report",
    "render_lesson": "agent_eval.report.lesson:render_lesson",
    "render_multi": "agent_eval.report.across_runs_text:render_multi",
}
"""Public name -> where it lives: ``module:attribute``, or a module."""
__getattr__ = lazy_getattr(__name__, _LAZY)
