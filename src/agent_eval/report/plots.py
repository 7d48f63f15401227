"""Plots for the HTML report, drawn by matplotlib as inline SVG.

matplotlib is maintained, works offline, and renders text as paths, so the page needs
no font, script or network. Figures are built without pyplot, which keeps no global
state and is safe in threads; ids are salted per plot so several SVGs share a page.
"""

from __future__ import annotations

import io
import re
from typing import Any

import matplotlib
from matplotlib.figure import Figure

PASS_COLOUR = "#2a9d8f"
FAIL_COLOUR = "#e76f51"
MIXED_COLOUR = "#e9c46a"

_PROLOGUE = re.compile(r"^.*?(?=<svg)", re.DOTALL)
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*|<!--.*?-->\s*", re.DOTALL)
_NAMESPACES = re.compile(r'\s+xmlns(:\w+)?="[^"]*"')


def to_svg(figure: Figure, salt: str) -> str:
    """The figure as an inline <svg> element, stripped of everything that names a URL.

    The XML prologue, the DTD and the RDF metadata only name external documents, and
    HTML needs no namespace declarations for inline SVG. Comments, which repeat label
    text, go too: the labels are drawn as paths already.
    """
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": salt, "svg.fonttype": "path"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
    svg = _METADATA.sub("", _PROLOGUE.sub("", buffer.getvalue(), count=1))
    return _NAMESPACES.sub("", svg).strip()


def _colour(rate: float) -> str:
    return PASS_COLOUR if rate >= 1 else FAIL_COLOUR if rate <= 0 else MIXED_COLOUR


def success_by_category(summary: dict[str, Any]) -> str:
    """Success rate per category with its Wilson interval, one row per category."""
    names = list(summary["categories"])
    figure = Figure(figsize=(6.4, 0.5 + 0.45 * max(len(names), 1)))
    axes = figure.add_subplot()
    for y, name in enumerate(names):
        cat = summary["categories"][name]
        lo, hi = cat["wilson95"]
        rate = cat["success_rate"] or 0.0
        spread = [[max(0.0, rate - lo)], [max(0.0, hi - rate)]]
        axes.errorbar([rate], [y], xerr=spread, fmt="o", capsize=4, color="#264653")
        axes.annotate(
            f"{rate:.2f} ({cat['passed']}/{cat['attempts']})",
            (hi, y),
            xytext=(6, -3),
            textcoords="offset points",
            fontsize=8,
        )
    axes.set_yticks(range(len(names)), names)
    axes.set_xlim(0, 1.25)
    axes.set_ylim(-0.6, max(len(names), 1) - 0.4)
    axes.set_xlabel("success rate (95% Wilson interval)")
    axes.invert_yaxis()
    return to_svg(figure, "success-by-category")


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
    figure = Figure(figsize=(max(6.4, 0.35 * len(per_task) + 1.5), 3.2))
    axes = figure.add_subplot()
    xs = range(len(per_task))
    means = [row["mean_steps"] for row in per_task]
    axes.bar(xs, means, color=[_colour(row["success_rate"]) for row in per_task])
    axes.errorbar(
        xs,
        means,
        yerr=[
            [m - row["min_steps"] for m, row in zip(means, per_task, strict=True)],
            [row["max_steps"] - m for m, row in zip(means, per_task, strict=True)],
        ],
        fmt="none",
        color="#264653",
        capsize=2,
    )
    axes.set_xticks(
        list(xs), [row["task_id"] for row in per_task], rotation=60, ha="right", fontsize=7
    )
    axes.set_ylabel("steps (mean, min-max)")
    return to_svg(figure, "steps-per-task")


def _steps_histogram(per_task: list[dict[str, Any]]) -> str:
    """Tasks counted by their mean steps, stacked by how their attempts went."""
    figure = Figure(figsize=(6.4, 3.2))
    axes = figure.add_subplot()
    groups = [
        (
            label,
            colour,
            [row["mean_steps"] for row in per_task if _colour(row["success_rate"]) == colour],
        )
        for label, colour in OUTCOMES
    ]
    groups = [group for group in groups if group[2]]
    axes.hist(
        [group[2] for group in groups],
        bins=30,
        stacked=True,
        color=[group[1] for group in groups],
        label=[group[0] for group in groups],
    )
    axes.legend(fontsize=8)
    axes.set_xlabel(f"mean steps per attempt ({len(per_task)} tasks)")
    axes.set_ylabel("tasks")
    return to_svg(figure, "steps-per-task")


def tokens_against_success(per_task: list[dict[str, Any]]) -> str:
    """Each task's mean tokens against its success rate: does spending more help?"""
    figure = Figure(figsize=(6.4, 3.4))
    axes = figure.add_subplot()
    axes.scatter(
        [row["mean_tokens"] for row in per_task],
        [row["success_rate"] for row in per_task],
        c=[_colour(row["success_rate"]) for row in per_task],
        edgecolors="#264653",
    )
    axes.set_xlabel("mean tokens per attempt")
    axes.set_ylabel("task success rate")
    axes.set_ylim(-0.08, 1.08)
    return to_svg(figure, "tokens-against-success")


def success_per_configuration(rows: list[dict[str, Any]]) -> str:
    """Each configuration's success with its 95% interval, one row per configuration."""
    figure = Figure(figsize=(6.4, 0.5 + 0.45 * max(len(rows), 1)))
    axes = figure.add_subplot()
    for y, row in enumerate(rows):
        rate = row["success"] or 0.0
        lo, hi = row["success_ci95"] or (rate, rate)
        spread = [[max(0.0, rate - lo)], [max(0.0, hi - rate)]]
        axes.errorbar([rate], [y], xerr=spread, fmt="o", capsize=4, color="#264653")
        axes.annotate(f"{rate:.2f}", (hi, y), xytext=(6, -3), textcoords="offset points",
                      fontsize=8)  # fmt: skip
    axes.set_yticks(range(len(rows)), [row["name"] for row in rows])
    axes.set_xlim(0, 1.25)
    axes.set_ylim(-0.6, max(len(rows), 1) - 0.4)
    axes.set_xlabel("success (95% interval)")
    axes.invert_yaxis()
    return to_svg(figure, "success-per-configuration")


def tokens_against_success_per_configuration(rows: list[dict[str, Any]]) -> str:
    """Each configuration's mean tokens per attempt against its success."""
    figure = Figure(figsize=(6.4, 3.4))
    axes = figure.add_subplot()
    for row in rows:
        axes.scatter([row["mean_tokens"] or 0.0], [row["success"] or 0.0], color="#264653")
        axes.annotate(row["name"], (row["mean_tokens"] or 0.0, row["success"] or 0.0),
                      xytext=(5, 4), textcoords="offset points", fontsize=8)  # fmt: skip
    axes.set_xlabel("mean tokens per attempt")
    axes.set_ylabel("success")
    axes.set_ylim(-0.08, 1.08)
    return to_svg(figure, "tokens-against-success-per-configuration")
