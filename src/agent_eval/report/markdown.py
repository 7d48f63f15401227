"""The run report as GitHub-flavoured Markdown, for a CI step summary."""

from __future__ import annotations

from html import escape
from typing import Any

from agent_eval.report.text import (
    citation_line,
    copied_line,
    figure_rows,
    fmt,
    fmt_sig,
    shown_k_note,
)


def _cell(text: object) -> str:
    """Table-safe text: a pipe or a newline would break the row, and CI summaries render
    raw HTML and Markdown, so what a model or an agent wrote is escaped: its markup, and
    the ``](`` that would make an image (fetched as the summary loads) or a link of it.
    """
    safe = escape(str(text), quote=False).replace("](", "]\\(")
    return safe.replace("|", "\\|").replace("\n", " ")


def table(header: list[str], rows: list[list[object]]) -> list[str]:
    """A Markdown table with left-aligned columns."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join([":---"] * len(header)) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def render_markdown(report: dict[str, Any]) -> str:
    """The run report for a CI step summary, from ``summarise_run``'s dict."""
    s, run = report["summary"], report["summary"]["run"]
    quant = f" ({run['quant']})" if run.get("quant") else ""
    lines = [
        f"## {_cell(run['scaffold'])} x {_cell(run['model'])}{_cell(quant)}",
        "",
        f"Suite `{run['task_set']}` {run['task_set_version']} · {s['tasks']} task(s) · "
        f"{run['repeats']} attempt(s) each · run `{run['run_id']}`",
        "",
        f"**{_cell(s['headline'])}**",
        "",
    ]
    figures: list[list[object]] = [list(row) for row in figure_rows(s)]
    lines += [*table(["figure", "value", "95% interval", "note"], figures), ""]
    note = shown_k_note(list(s["pass_at_k"]))
    if note:
        lines += [note, ""]
    usable, model = s["usable_success"], s["model_success"]
    lines += [
        f"- usable success {fmt(usable['rate'])} ({usable['passed']} of "
        f"{usable['attempts']} attempts, all counted)",
        f"- model success {fmt(model['rate'])} ({model['passed']} of "
        f"{model['attempts']} attempts, infra errors excluded)",
        "- failure classes: " + ", ".join(f"{k} {v}" for k, v in s["failure_classes"].items()),
    ]
    if s["cited_attempts"] or s["bad_citation_attempts"]:
        lines.append("- " + citation_line(s))
    if s["copied_passes"]:
        lines.append("- " + _cell(copied_line(s)))
    if s["unstable_tasks"]:
        lines.append("- unstable tasks: " + ", ".join(f"`{t}`" for t in s["unstable_tasks"]))
    lines.append(
        f"- per attempt: {fmt_sig(s['mean_steps'])} steps, {fmt_sig(s['mean_tokens'])} tokens, "
        f"{fmt_sig(s['mean_seconds'])} seconds"
    )
    if s["cost"] is not None:
        lines.append(
            f"- cost {fmt_sig(s['cost']['cost_total'])} total, "
            f"{fmt_sig(s['cost']['cost_per_task'])} per attempt"
        )
    lines += ["", "### Tasks", ""]
    lines += table(
        ["task", "category", "passed", "rate", "steps", "tokens", "first failure"],
        [
            [
                f"`{r['task_id']}`",
                r["category"],
                f"{r['successes']}/{r['attempts']}",
                fmt(r["success_rate"], 2),
                f"{r['mean_steps']:.1f}",
                f"{r['mean_tokens']:.0f}",
                r["failures"][0] if r["failures"] else "",
            ]
            for r in report["per_task"]
        ],
    )
    return "\n".join(lines) + "\n"
