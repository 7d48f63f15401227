"""The terminal view of a comparison: what changed per task, the figures, the verdict."""

from __future__ import annotations

import textwrap
from typing import Any

from rich.table import Table

from agent_eval.report.figures import FIGURES
from agent_eval.report.text import (
    NOT_ESTIMABLE,
    PLAIN_ABOVE,
    fmt,
    fmt_interval,
    fmt_p,
    fmt_sig,
    plain_table,
    render_tables,
)

CHANGE_COLUMNS = ("task", "category", "A", "B", "change")


def _changes(result: dict[str, Any]) -> Table | str:
    changed = [row for row in result["per_task"] if row["change"] != "same"]
    if not changed:
        return f"no task changed ({result['tasks']} paired)"
    title = f"Tasks that changed ({len(changed)} of {result['tasks']})"
    cells = [
        (
            row["task_id"],
            row["category"],
            row["a"],
            row["b"],
            f"{row['change']} ({row['difference']:+.2f})",
        )
        for row in changed
    ]
    if len(cells) > PLAIN_ABOVE:
        return plain_table(title, CHANGE_COLUMNS, cells, right=())
    table = Table(title=title, title_justify="left")
    for column in CHANGE_COLUMNS:
        table.add_column(column)
    for row_cells in cells:
        table.add_row(*row_cells)
    return table


FIGURE_NAMES = {
    "ci95": "95% interval",
    "se_paired": "SE paired",
    "se_unpaired": "SE unpaired",
    "correlation": "correlation",
    "p_population": "paired t p",
    "repeats_needed": "repeats needed",
    "mde": "minimum detectable difference",
}
"""The figures of the table whose reason is listed below it when they cannot be estimated."""


def _figures(r: dict[str, Any]) -> Table:
    why = r["not_estimable"]

    def shown(key: str, text: str) -> str:
        return NOT_ESTIMABLE if key in why else text

    plan = (
        str(r["repeats_needed"])
        if r["repeats_needed"] is not None
        else NOT_ESTIMABLE
        if "repeats_needed" in why
        else "none is enough: add tasks"
    )
    rows = [
        ("tasks paired", str(r["tasks"])),
        ("mean A (over tasks)", fmt(r["mean_a"])),
        ("mean B (over tasks)", fmt(r["mean_b"])),
        ("difference B - A",
         f"{fmt(r['difference'])}  95% {shown('ci95', fmt_interval(r['ci95']))}"),
        ("SE paired / unpaired", f"{shown('se_paired', fmt(r['se_paired']))} / "
                                 f"{shown('se_unpaired', fmt(r['se_unpaired']))}"),
        ("correlation A, B", shown("correlation", fmt(r["correlation"]))),
        ("p, this suite", f"{fmt_p(r['p_fixed_suite'])} ({r['fixed_suite_test']})"),
        ("p, tasks like these (paired t)", shown("p_population", fmt_p(r["p_population"]))),
        (f"repeats needed (delta {r['delta']:.3f})", plan),
        ("minimum detectable difference", shown("mde", fmt(r["mde"]))),
    ]  # fmt: skip
    if r["cluster"]["by"] != "none":
        rows.insert(5, ("clustered by", f"{r['cluster']['by']} ({r['cluster']['clusters']} "
                        "clusters; SE, interval, t test and planning)"))  # fmt: skip
    table = Table(title="Paired by task", title_justify="left")
    table.add_column("figure")
    table.add_column("value")
    for name, value in rows:
        table.add_row(name, value)
    return table


def _reasons(r: dict[str, Any]) -> list[str]:
    """One line per reason, naming the figures of the table it leaves unestimated."""
    grouped: dict[str, list[str]] = {}
    for key, name in FIGURE_NAMES.items():
        if key in r["not_estimable"]:
            grouped.setdefault(r["not_estimable"][key], []).append(name)
    return [f"  {', '.join(names)}: {reason}" for reason, names in grouped.items()]


def four_numbers(r: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """Success, steps, tokens, seconds and cost: A, B, the paired B - A and its interval."""
    rows = [("success (mean over tasks)", fmt(r["mean_a"]), fmt(r["mean_b"]),
             f"{r['difference']:+.3f}" if r["difference"] is not None else "-",
             fmt_interval(r["ci95"]))]  # fmt: skip
    for name in FIGURES:
        f = r["figures"][name]
        label = "cost per attempt" if name == "cost" else f"mean {name}"
        if f["difference"] is None:
            why = "not priced" if name == "cost" else "-"
            rows.append((label, fmt_sig(f["a"]), fmt_sig(f["b"]), why, ""))
            continue
        interval = (
            "-" if f["ci95"] is None else f"[{fmt_sig(f['ci95'][0])}, {fmt_sig(f['ci95'][1])}]"
        )
        sign = "+" if f["difference"] > 0 else ""
        rows.append((label, fmt_sig(f["a"]), fmt_sig(f["b"]), sign + fmt_sig(f["difference"]),
                     interval))  # fmt: skip
    return rows


def _four_table(r: dict[str, Any]) -> Table:
    table = Table(title="Four numbers and cost (mean over paired tasks)", title_justify="left")
    for column in ("figure", "A", "B", "B - A", "95% interval"):
        table.add_column(column, justify="left" if column == "figure" else "right")
    for row in four_numbers(r):
        table.add_row(*row)
    return table


def render_compare_text(result: dict[str, Any], width: int = 100) -> str:
    """The comparison for a terminal, from ``compare_runs``'s dict."""
    items: list[Table | str] = [
        f"A: {result['a']['label']}  ({result['a']['path']})",
        f"B: {result['b']['label']}  ({result['b']['path']})",
    ]
    for side in ("only_a", "only_b"):
        if result[side]:
            items.append(f"only in {side[-1].upper()} (not paired): " + ", ".join(result[side]))
    items += [
        _changes(result),
        _figures(result),
    ]
    reasons = _reasons(result)
    if reasons:
        items += [f"{NOT_ESTIMABLE}, and why:", *reasons]
    items += [
        _four_table(result),
        "verdict:",
        textwrap.fill(result["verdict"], width=width, initial_indent="  ", subsequent_indent="  "),
    ]
    return render_tables(items, width)
