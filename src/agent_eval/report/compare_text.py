"""The terminal view of a comparison: what changed per task, the figures, the verdict."""

from __future__ import annotations

import textwrap
from typing import Any

from rich.table import Table

from agent_eval.report.text import PLAIN_ABOVE, fmt, fmt_interval, fmt_p, plain_table, render_tables

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


def _figures(r: dict[str, Any]) -> Table:
    table = Table(title="Paired by task", title_justify="left")
    table.add_column("figure")
    table.add_column("value")
    plan = (
        "none is enough: add tasks"
        if r["repeats_needed"] is None and r["omega2"] is not None
        else "needs 2+ attempts per task"
        if r["repeats_needed"] is None
        else str(r["repeats_needed"])
    )
    rows = [
        ("tasks paired", str(r["tasks"])),
        ("mean A (over tasks)", fmt(r["mean_a"])),
        ("mean B (over tasks)", fmt(r["mean_b"])),
        ("difference B - A", f"{fmt(r['difference'])}  95% {fmt_interval(r['ci95'])}"),
        ("SE paired / unpaired", f"{fmt(r['se_paired'])} / {fmt(r['se_unpaired'])}"),
        ("correlation A, B", fmt(r["correlation"])),
        ("p, this suite", f"{fmt_p(r['p_fixed_suite'])} ({r['fixed_suite_test']})"),
        ("p, tasks like these (paired t)", fmt_p(r["p_population"])),
        (f"repeats needed (delta {r['delta']:.3f})", plan),
        ("minimum detectable difference", fmt(r["mde"])),
    ]
    for name, value in rows:
        table.add_row(name, value)
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
        "verdict:",
        textwrap.fill(result["verdict"], width=width, initial_indent="  ", subsequent_indent="  "),
    ]
    return render_tables(items, width)
