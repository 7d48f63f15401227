"""The HTML report's plots, as inline SVG (report/svg.py draws the axes and marks).

Every plot is self-contained: no font file, script or URL, and what a run wrote (task ids,
categories, configuration names) is escaped text, never markup.
"""

from __future__ import annotations

from typing import Any

from agent_eval.report.svg import CHAR, FONT, INK, Axes, label_room, nice_ticks, y_axis_room

PASS_COLOUR = "#2a9d8f"
FAIL_COLOUR = "#e76f51"
MIXED_COLOUR = "#e9c46a"

LABEL_CHARS = 40
"""Longer task ids and names are cut to this many characters in a plot (the tables
beside it have them whole)."""


def _colour(rate: float) -> str:
    return PASS_COLOUR if rate >= 1 else FAIL_COLOUR if rate <= 0 else MIXED_COLOUR


def _short(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"


def _intervals(names: list[str], rows: list[tuple[float, float, float, str]], title: str) -> str:
    """One row per name: a rate as a dot inside its interval, annotated on the right."""
    labels = [_short(name) for name in names]
    unit = 340  # pixels from a rate of 0 to 1; the longest note fits right of 1
    notes = label_room([row[3] for row in rows], FONT - 2) + 12
    axes = Axes(
        width=unit + notes,
        height=28 * max(len(names), 1),
        x_range=(0, 1 + notes / unit),
        y_range=(len(names) - 0.4, -0.6),
        left=label_room(labels) + 16,
    )
    for y, (label, (rate, low, high, note)) in enumerate(zip(labels, rows, strict=True)):
        axes.whisker(y, low, high, horizontal=True)
        axes.dot(rate, y)
        axes.text(axes.x(high) + 6, axes.y(y) + FONT / 3, note, size=FONT - 2)
        axes.line(axes.left - 4, axes.y(y), axes.left, axes.y(y))
        axes.text(axes.left - 7, axes.y(y) + FONT / 3, label, anchor="end")
    axes.x_axis([0, 0.2, 0.4, 0.6, 0.8, 1.0], title)
    return axes.svg()


def success_by_category(summary: dict[str, Any]) -> str:
    """Success rate per category with its Wilson interval, one row per category."""
    names = list(summary["categories"])
    rows = []
    for name in names:
        cat = summary["categories"][name]
        rate = cat["success_rate"] or 0.0
        low, high = cat["wilson95"]
        rows.append((rate, low, high, f"{rate:.2f} ({cat['passed']}/{cat['attempts']})"))
    return _intervals(names, rows, "success rate (95% Wilson interval)")


BARS_UP_TO = 60
"""Up to this many tasks, steps per task is one labelled bar per task; past it, bars and
labels would be too thin to read (and slow to draw), so the plot becomes a histogram."""

OUTCOMES = (
    ("every attempt passed", PASS_COLOUR),
    ("some passed", MIXED_COLOUR),
    ("none passed", FAIL_COLOUR),
)
"""How a task's attempts went, with the colour it is drawn in; the histogram's legend."""


def steps_per_task(per_task: list[dict[str, Any]]) -> str:
    """Mean steps per task with the min-max range, coloured by how often the task passed;
    past BARS_UP_TO tasks, how many tasks took each mean number of steps.
    """
    if len(per_task) > BARS_UP_TO:
        return _steps_histogram(per_task)
    labels = [_short(row["task_id"]) for row in per_task]
    ticks = nice_ticks(0, max(max(row["max_steps"] for row in per_task), 1))
    axes = Axes(
        width=max(400, 24 * len(per_task)),
        height=210,
        x_range=(-0.6, len(per_task) - 0.4),
        y_range=(0, ticks[-1]),
        left=y_axis_room(ticks),
        bottom=label_room(labels, FONT - 2) * 0.87 + 16,  # sin 60°: the labels' slant
    )
    for x, (label, row) in enumerate(zip(labels, per_task, strict=True)):
        tip = (
            f"{row['task_id']}: {row['mean_steps']:.3g} steps on average "
            f"({row['min_steps']}-{row['max_steps']}), success {row['success_rate']:.2f}"
        )
        axes.bar(x - 0.4, x + 0.4, 0, row["mean_steps"], _colour(row["success_rate"]), tip)
        axes.whisker(x, row["min_steps"], row["max_steps"], horizontal=False, cap=2)
        base = axes.top + axes.height
        axes.line(axes.x(x), base, axes.x(x), base + 4)
        axes.text(axes.x(x) + FONT / 3, base + 8, label, anchor="end", size=FONT - 2, rotate=-60)
    axes.y_axis(ticks, "steps (mean, min-max)")
    return axes.svg()


def _steps_histogram(per_task: list[dict[str, Any]], bins: int = 30) -> str:
    """Tasks counted by their mean steps, stacked by how their attempts went."""
    means = [row["mean_steps"] for row in per_task]
    low, high = min(means), max(means)
    if high - low < 1:
        low, high = low - 0.5, high + 0.5
    width = (high - low) / bins
    counts = {colour: [0] * bins for _, colour in OUTCOMES}
    for row in per_task:
        bin_index = min(int((row["mean_steps"] - low) / width), bins - 1)
        counts[_colour(row["success_rate"])][bin_index] += 1
    tallest = max(map(sum, zip(*counts.values(), strict=True)))
    y_ticks = nice_ticks(0, tallest, count=min(7, tallest + 1))  # whole tasks
    x_ticks = nice_ticks(low, high)
    axes = Axes(
        width=460,
        height=210,
        x_range=(x_ticks[0], x_ticks[-1]),
        y_range=(0, y_ticks[-1]),
        left=y_axis_room(y_ticks),
    )
    stacked = [0] * bins
    for label, colour in OUTCOMES:
        for i, count in enumerate(counts[colour]):
            if count:
                start = low + i * width
                axes.bar(
                    start,
                    start + width,
                    stacked[i],
                    stacked[i] + count,
                    colour,
                    f"{count} task(s) {label}, {start:.3g}-{start + width:.3g} steps",
                )
                stacked[i] += count
    shown = [(label, colour) for label, colour in OUTCOMES if any(counts[colour])]
    key_x = axes.left + axes.width - CHAR * max(len(label) for label, _ in shown) - 26
    for i, (label, colour) in enumerate(shown):
        y = axes.top + 8 + 16 * i
        axes.marks.append(f'<rect x="{key_x}" y="{y}" width="10" height="10" fill="{colour}"/>')
        axes.text(key_x + 15, y + 9, label, size=FONT - 1)
    axes.x_axis(x_ticks, f"mean steps per attempt ({len(per_task)} tasks)")
    axes.y_axis(y_ticks, "tasks")
    return axes.svg()


def _scatter(points: list[tuple[float, float, str, str]], title: str, named: bool) -> str:
    """Mean tokens (x) against success (y): one coloured point per (x, y, colour, name)."""
    ticks = nice_ticks(0, max((x for x, *_ in points), default=0) or 1)
    rates = [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    names = [_short(name) for *_, name in points] if named else []
    axes = Axes(
        width=460,
        height=220,
        x_range=(0, ticks[-1]),
        y_range=(-0.08, 1.08),
        left=y_axis_room(rates),
        right=label_room(names, FONT - 2) + 10,  # room for a name beside the rightmost point
    )
    for x, y, colour, name in points:
        axes.dot(x, y, colour, radius=5, tip=f"{name}: {x:,.0f} tokens, success {y:.2f}")
        if named:
            axes.text(axes.x(x) + 7, axes.y(y) - 5, _short(name), size=FONT - 2)
    axes.x_axis(ticks, "mean tokens per attempt")
    axes.y_axis(rates, title)
    return axes.svg()


def tokens_against_success(per_task: list[dict[str, Any]]) -> str:
    """Each task's mean tokens against its success rate: does spending more help?"""
    points = [
        (row["mean_tokens"], row["success_rate"], _colour(row["success_rate"]), row["task_id"])
        for row in per_task
    ]
    return _scatter(points, "task success rate", named=False)


def success_per_configuration(rows: list[dict[str, Any]]) -> str:
    """Each configuration's success with its 95% interval, one row per configuration."""
    found = []
    for row in rows:
        rate = row["success"] or 0.0
        low, high = row["success_ci95"] or (rate, rate)
        found.append((rate, low, high, f"{rate:.2f}"))
    return _intervals([row["name"] for row in rows], found, "success (95% interval)")


def tokens_against_success_per_configuration(rows: list[dict[str, Any]]) -> str:
    """Each configuration's mean tokens per attempt against its success."""
    points = [(row["mean_tokens"] or 0.0, row["success"] or 0.0, INK, row["name"]) for row in rows]
    return _scatter(points, "success", named=True)
