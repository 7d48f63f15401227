"""The multi-configuration report as text, Markdown, HTML or JSON, from ``multi_report``."""

from __future__ import annotations

import json
import textwrap
from html import escape
from typing import Any

from rich.table import Table

from agent_eval.errors import ConfigError
from agent_eval.report.text import fmt_interval, fmt_p, fmt_sig, render_tables

COLUMNS = ("run", "scaffold", "model", "quant", "engine", "success", "95% interval",
           "steps", "tokens", "seconds", "cost/attempt")  # fmt: skip
MULTI_FORMATS = ("text", "markdown", "html", "json")


def _cells(row: dict[str, Any]) -> tuple[str, ...]:
    return (
        row["name"], str(row["scaffold"]), str(row["model"]), row["quant"] or "-",
        row["engine"] or "-", "-" if row["success"] is None else f"{row['success']:.3f}",
        fmt_interval(row["success_ci95"]), fmt_sig(row["mean_steps"]),
        fmt_sig(row["mean_tokens"]), fmt_sig(row["mean_seconds"]),
        fmt_sig(row["mean_cost"]) if row["mean_cost"] is not None else "not priced",
    )  # fmt: skip


def _verdict_line(v: dict[str, Any]) -> str:
    diff = "-" if v["difference"] is None else f"{v['difference']:+.3f}"
    return (
        f"{v['name']}: {diff} {fmt_interval(v['ci95'])}, p this suite "
        f"{fmt_p(v['p_fixed_suite'])} ({v['fixed_suite_test']}), p tasks like these "
        f"{fmt_p(v['p_population'])}"
    )


def render_multi_text(doc: dict[str, Any], width: int = 140) -> str:
    suite = doc["suite"]
    table = Table(title=f"{len(doc['configurations'])} configurations on {suite['task_set']} "
                  f"{suite['task_set_version']}", title_justify="left")  # fmt: skip
    for number, column in enumerate(COLUMNS):
        table.add_column(column, justify="right" if number >= 5 else "left")
    for row in doc["configurations"]:
        table.add_row(*_cells(row))
    items: list[Table | str] = [table, f"paired against {doc['baseline']['name']} "
                                f"({doc['baseline']['label']}), B - A by task:"]  # fmt: skip
    for v in doc["verdicts"]:
        items.append("  " + _verdict_line(v))
        items.append(textwrap.fill(v["verdict"], width=width, initial_indent="    ",
                                   subsequent_indent="    "))  # fmt: skip
    return render_tables(items, width)


def render_multi_markdown(doc: dict[str, Any]) -> str:
    from agent_eval.report.markdown import table

    suite = doc["suite"]
    lines = [f"## {len(doc['configurations'])} configurations on `{suite['task_set']}` "
             f"{suite['task_set_version']}", ""]  # fmt: skip
    lines += table(list(COLUMNS), [list(_cells(row)) for row in doc["configurations"]])
    lines += ["", f"Paired against **{doc['baseline']['name']}**, B - A by task:", ""]
    for v in doc["verdicts"]:
        lines += [f"- {_verdict_line(v)}", f"  {v['verdict']}"]
    return "\n".join(lines) + "\n"


def render_multi_html(doc: dict[str, Any]) -> str:
    from agent_eval.report import plots
    from agent_eval.report.html import _table, page_head

    rows = doc["configurations"]
    title = escape(f"{len(rows)} configurations on {doc['suite']['task_set']}")
    verdicts = "".join(f"<li><strong>{escape(_verdict_line(v))}</strong><br>"
                       f"{escape(v['verdict'])}</li>" for v in doc["verdicts"])  # fmt: skip
    return "\n".join([
        page_head(title),
        _table(list(COLUMNS), [[escape(c) for c in _cells(row)] for row in rows]),
        f"<h2>Paired against {escape(doc['baseline']['name'])}</h2><ul>{verdicts}</ul>",
        "<h2>Plots</h2>",
        "<figure><figcaption>Success per configuration</figcaption>"
        f"{plots.success_per_configuration(rows)}</figure>",
        "<figure><figcaption>Tokens against success</figcaption>"
        f"{plots.tokens_against_success_per_configuration(rows)}</figure>",
        "</body></html>",
        "",
    ])  # fmt: skip


def check_multi_format(fmt: str) -> None:
    """ConfigError before any work when ``fmt`` has no multi-configuration form."""
    if fmt not in MULTI_FORMATS:
        raise ConfigError(
            f"report: --format {fmt} takes one results file; with several use one of "
            f"{', '.join(MULTI_FORMATS)}"
        )


def render_multi(doc: dict[str, Any], fmt: str) -> str:
    """The multi-configuration report in ``fmt``."""
    check_multi_format(fmt)
    if fmt == "text":
        return render_multi_text(doc)
    if fmt == "markdown":
        return render_multi_markdown(doc)
    if fmt == "html":
        return render_multi_html(doc)
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
