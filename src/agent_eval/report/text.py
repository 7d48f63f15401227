"""The terminal report of one run: rich tables rendered to plain text."""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from agent_eval.results import NOT_RECORDED
from agent_eval.score import AT_LENGTH, MOSTLY


def fmt(value: float | None, digits: int = 3) -> str:
    """A figure for people; '-' where it is undefined."""
    return "-" if value is None else f"{value:.{digits}f}"


def fmt_sig(value: float | None, digits: int = 3) -> str:
    """A figure with ``digits`` significant digits and no exponent: 0.000617, 12.3, 1234."""
    if value is None:
        return "-"
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    places = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return f"{value:.{places}f}"


def fmt_interval(pair: list[float] | None, digits: int = 3) -> str:
    """An interval as [lo, hi]; '-' where it is undefined."""
    return "-" if pair is None else f"[{pair[0]:.{digits}f}, {pair[1]:.{digits}f}]"


def short_hash(value: object) -> str:
    """The first 12 hex digits of a content hash, without an algorithm prefix."""
    if value is None:
        return NOT_RECORDED
    return str(value).rsplit(":", 1)[-1][:12]


def fmt_p(value: float | None) -> str:
    """A p-value: four decimals, or scientific notation when that would print zero."""
    if value is None:
        return "-"
    return f"{value:.1e}" if value < 1e-4 else f"{value:.4f}"


def shown_k(ks: list[str]) -> list[str]:
    """The k of pass@k and pass^k a report lists: every k up to 10, then 20, 50, 100,
    200... and the largest. With 100 repeats, 200 rows of them would bury the other
    figures; the JSON report keeps every k.
    """
    return [k for k in ks if int(k) <= 10 or k.rstrip("0") in ("1", "2", "5") or k == ks[-1]]


NOT_ESTIMABLE = "cannot be estimated"
"""Shown where a figure would be; the reason goes beside it."""


def _mean_note(s: dict[str, Any]) -> str:
    """SE and degrees of freedom of the mean over tasks, saying how tasks were clustered."""
    cluster = s.get("cluster") or {"by": "none", "clusters": s["tasks"]}
    df = max(cluster["clusters"] - 1, 0)
    if cluster["by"] == "none":
        return f"SE {fmt(s['task_se'])}, t on {df} df"
    return (
        f"SE {fmt(s['task_se'])} clustered by {cluster['by']} "
        f"({cluster['clusters']} clusters), t on {df} df"
    )


def figure_rows(s: dict[str, Any]) -> list[list[str]]:
    """The success figures every format shows: figure, value, 95% interval, note.

    A figure the run cannot estimate (one task, one attempt, no variation) says so and
    why, instead of showing a zero-width interval or an SE of 0.
    """
    why = s["not_estimable"]
    task_note = _mean_note(s)
    if "task_ci95" in why:
        task_note = f"SE and interval {NOT_ESTIMABLE}: {why['task_ci95']}"
    rows = [
        [
            "success rate",
            fmt(s["success_rate"]),
            fmt_interval(s["wilson95"]),
            f"Wilson, {s['passed']} of {s['attempts']} attempts",
        ],
        [
            "mean over tasks",
            fmt(s["task_mean"]),
            NOT_ESTIMABLE if "task_ci95" in why else fmt_interval(s["task_ci95"]),
            task_note,
        ],
    ]
    ks = shown_k(list(s["pass_at_k"]))
    last = None  # a reason is given once; the rows after it that share it say so
    for name, key in (("pass@", "pass_at_k"), ("pass^", "pass_hat_k")):
        reasons = why.get(f"{key}_se", {})
        for k in ks:
            note = f"SE {fmt(s[f'{key}_se'][k])}"
            if k in reasons:
                same = reasons[k] == last
                note = f"SE {NOT_ESTIMABLE}" + (", as above" if same else f": {reasons[k]}")
                last = reasons[k]
            rows.append([f"{name}{k}", fmt(s[key][k]), "", note])
    if s["within_task_var"] is None:
        rows.append(["variance split", "-", "", f"{NOT_ESTIMABLE}: {why['within_task_var']}"])
    else:
        noise = "attempt noise"
        if s["within_task_var"] == 0:
            noise += " (none seen: every task gave one verdict on every attempt)"
        rows.append(["within-task var", fmt(s["within_task_var"], 4), "", noise])
        rows.append(
            [
                "between-task var",
                fmt(s["between_task_var"], 4),
                "",
                "true differences between tasks",
            ]
        )
    return rows


def shown_k_note(ks: list[str]) -> str | None:
    """The sentence that says which k were left out, or None when none was."""
    shown = shown_k(ks)
    if len(shown) == len(ks):
        return None
    return (
        f"pass@k and pass^k are shown for k = {', '.join(shown)}; the JSON report "
        "(--format json) has every k."
    )


def render_tables(tables: list[Table | str], width: int = 100) -> str:
    """Render rich tables and lines to plain text of a fixed width, without colour codes."""
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width,
        color_system=None,
        force_terminal=False,
        highlight=False,
        emoji=False,
        markup=False,
    )
    for item in tables:
        # Lines are printed whole: a script reading them should not meet a wrapped line.
        console.print(item, soft_wrap=isinstance(item, str))
    # rich pads titles and cells to the table's width; trailing blanks only get in the way.
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


def _headline(s: dict[str, Any]) -> list[str]:
    run = s["run"]
    quant = f" ({run['quant']})" if run.get("quant") else ""
    lines = [
        f"{run['scaffold']} x {run['model']}{quant}: {s['tasks']} task(s), "
        f"{run['repeats']} attempt(s) each",
        f"suite {run['task_set']} {run['task_set_version']} "
        f"(hash {short_hash(run['suite_hash'])}), run {run['run_id']}",
        s["headline"],
    ]
    if s["interrupted"]:
        lines.append(
            "WARNING: this run was interrupted; only the attempts that finished are counted"
        )
    return lines


def _overview(s: dict[str, Any]) -> Table:
    table = Table(title="Success", title_justify="left")
    for column in ("figure", "value", "95% interval", "note"):
        table.add_column(column)
    for row in figure_rows(s):
        table.add_row(*row)
    return table


def _categories(s: dict[str, Any]) -> Table:
    table = Table(title="Categories", title_justify="left")
    for column in ("category", "tasks", "passed", "rate", "95% interval (Wilson)"):
        table.add_column(column)
    for name, cat in s["categories"].items():
        table.add_row(
            name,
            str(cat["tasks"]),
            f"{cat['passed']}/{cat['attempts']}",
            fmt(cat["success_rate"]),
            fmt_interval(cat["wilson95"]),
        )
    return table


def _failures(s: dict[str, Any]) -> Table:
    table = Table(title="Failure classes", title_justify="left")
    table.add_column("class")
    table.add_column("attempts", justify="right")
    for name, count in s["failure_classes"].items():
        table.add_row(name, str(count))
    return table


def _success_lines(s: dict[str, Any]) -> list[str]:
    usable, model = s["usable_success"], s["model_success"]
    lines = [
        f"usable success  {fmt(usable['rate'])}  ({usable['passed']} of "
        f"{usable['attempts']} attempts, all counted)",
        f"model success   {fmt(model['rate'])}  ({model['passed']} of "
        f"{model['attempts']} attempts, infra errors excluded)",
    ]
    if s["cited_attempts"] or s["bad_citation_attempts"]:
        lines.append(citation_line(s))
    if s["copied_passes"]:
        lines.append(copied_line(s))
    return lines


def copied_line(s: dict[str, Any]) -> str:
    """The passes made mostly of text copied from the task or documents, named."""
    flagged = s["copied_passes"]
    names = ", ".join(f"{c['task_id']} r{c['attempt']} ({c['copied_share']:.2f})" for c in flagged)
    return (
        f"copied passes  {len(flagged)} of {s['passed']} passes mostly copy the task or the "
        f"documents (copied_share >= {MOSTLY:g}, {AT_LENGTH}+ words; the checks still count "
        f"them): {names}"
    )


def citation_line(s: dict[str, Any]) -> str:
    """How many answers invent or misattribute a source."""
    return (
        f"bad citations  {s['bad_citation_attempts']} of {s['attempts']} attempts cite a quote "
        "their file does not hold"
    )


TASK_COLUMNS = ("task", "category", "passed", "rate", "steps", "tokens", "first failure")
PLAIN_ABOVE = 200
"""Past this many rows a long table (the report's tasks and changed files, compare's
changed tasks) is plain aligned text: rich lays out a table at about 3 ms a row, which
at 1,000 tasks is most of a report's time."""


def _tasks(per_task: list[dict[str, Any]]) -> Table | str:
    cells = [
        (row["task_id"], row["category"], f"{row['successes']}/{row['attempts']}",
         fmt(row["success_rate"], 2) + (" (unstable)" if row["unstable"] else ""),
         f"{row['mean_steps']:.1f}", f"{row['mean_tokens']:.0f}",
         row["failures"][0] if row["failures"] else "")
        for row in per_task
    ]  # fmt: skip
    if len(cells) > PLAIN_ABOVE:
        return plain_table("Tasks", TASK_COLUMNS, cells, right=(4, 5))
    table = Table(title="Tasks", title_justify="left")
    for number, column in enumerate(TASK_COLUMNS):
        table.add_column(column, justify="right" if number in (4, 5) else "left")
    for row_cells in cells:
        table.add_row(*row_cells)
    return table


def plain_table(
    title: str, columns: tuple[str, ...], rows: Sequence[tuple[str, ...]], right: tuple[int, ...]
) -> str:
    """Columns aligned with two spaces between them, the title and a rule above."""
    widths = [max(len(str(r[i])) for r in [columns, *rows]) for i in range(len(columns))]

    def line(values: tuple[str, ...]) -> str:
        parts = [v.rjust(w) if i in right else v.ljust(w)
                 for i, (v, w) in enumerate(zip(values, widths, strict=True))]  # fmt: skip
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([title, line(columns), rule, *(line(r) for r in rows)])


def _footer(s: dict[str, Any]) -> list[Table | str]:
    items: list[Table | str] = []
    if s["tokens_by_role"]:
        roles = Table(title="Tokens per role", title_justify="left")
        roles.add_column("role")
        roles.add_column("tokens", justify="right")
        for role, tokens in s["tokens_by_role"].items():
            roles.add_row(role, str(tokens))
        items.append(roles)
    items.append(f"steps         {fmt_sig(s['mean_steps'])} per attempt")
    items.append(f"tokens        {s['total_tokens']} total, {fmt(s['mean_tokens'], 1)} per attempt")
    items.append(f"seconds       {fmt_sig(s['mean_seconds'])} per attempt")
    cost = s["cost"]
    if cost is None:
        items.append(
            "cost          not computed: no price was given (run with "
            "--cost-per-million, or input and output prices)"
        )
    else:
        prices = ", ".join(f"{k}={v}" for k, v in cost["prices"].items() if v is not None)
        items.append(
            f"cost          {fmt_sig(cost['cost_total'])} total, "
            f"{fmt_sig(cost['cost_per_task'])} per attempt ({prices})"
        )
    if s["infra_retries"] is not None:
        items.append(f"infra errors are counted after up to {s['infra_retries']} retries")
    return items


def render_text(report: dict[str, Any], width: int = 100) -> str:
    """The run report for a terminal, from ``summarise_run``'s dict."""
    s = report["summary"]
    items: list[Table | str] = [*_headline(s), _overview(s)]
    note = shown_k_note(list(s["pass_at_k"]))
    if note:
        items.append(note)
    if s["unstable_tasks"]:
        items.append("unstable tasks: " + ", ".join(s["unstable_tasks"]))
    if len(s["categories"]) > 1:
        items.append(_categories(s))
    items += [_failures(s), *_success_lines(s), _tasks(report["per_task"])]
    if s["changed_files"]:
        items.append(_changed(s["changed_files"]))
    items += _footer(s)
    return render_tables(items, width)


CHANGED_COLUMNS = ("attempt", "files (A added, M modified, D deleted)")


def _changed(attempts: list[dict[str, Any]]) -> Table | str:
    """What each attempt did to its workspace: A added, M modified, D deleted."""
    cells = [
        (f"{item['task_id']} r{item['attempt']}", ", ".join(item["files"])) for item in attempts
    ]
    if len(cells) > PLAIN_ABOVE:
        return plain_table("Files changed", CHANGED_COLUMNS, cells, right=())
    table = Table(title="Files changed", title_justify="left")
    for column in CHANGED_COLUMNS:
        table.add_column(column)
    for row_cells in cells:
        table.add_row(*row_cells)
    return table
