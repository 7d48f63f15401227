"""The HTML report's plots: well-formed SVG whose every mark lies inside its figure,
round ticks that cover the data, and run content shown as text only."""

from __future__ import annotations

import functools
import itertools
import math
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from agent_eval.report import plots
from agent_eval.report.svg import label_room, nice_ticks

HOSTILE = "</text><script>alert(1)</script><text>"
NAME_CHARACTERS = st.characters(blacklist_categories=("Cc", "Cs"))
"""Any printable name: control characters are replaced when shown (tested apart)."""


@given(
    low=st.floats(-1e6, 1e6, allow_nan=False),
    span=st.floats(1e-3, 1e7, allow_nan=False),
    count=st.integers(2, 12),
)
def test_ticks_are_evenly_spaced_and_cover_the_range(low: float, span: float, count: int) -> None:
    assume(span > abs(low) * 1e-4)  # a narrower axis far from 0 is beyond a float's steps
    high = low + span
    ticks = nice_ticks(low, high, count)
    step = ticks[1] - ticks[0]
    assert all(math.isclose(b - a, step, rel_tol=1e-6) for a, b in itertools.pairwise(ticks))
    assert 2 <= len(ticks) <= count + 2
    # Within a rounding error of a step: the values themselves are rounded to 12 places.
    assert ticks[0] <= low + 1e-6 * step and ticks[-1] >= high - 1e-6 * step
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert any(math.isclose(mantissa, m, rel_tol=1e-6) for m in (1, 2, 5, 10))


def _number(element: ET.Element, name: str) -> float:
    return float(element.get(name, "0"))


def _marks_inside(svg: str) -> ET.Element:
    """Parse a plot and assert that every rectangle, circle, line and upright text lies
    within its width and height (a text's width as the plots reckon it)."""
    root = ET.fromstring(svg)
    width, height = float(root.get("width", "0")), float(root.get("height", "0"))
    assert root.get("viewBox") == f"0 0 {int(width)} {int(height)}"

    def inside(x: float, y: float) -> bool:
        return -0.01 <= x <= width + 0.01 and -0.01 <= y <= height + 0.01

    for element in root.iter():
        get = functools.partial(_number, element)
        if element.tag == "rect":
            corners = [(get("x"), get("y")), (get("x") + get("width"), get("y") + get("height"))]
            assert get("height") >= 0 and get("width") >= 0
            assert all(inside(*corner) for corner in corners), ET.tostring(element)
        elif element.tag == "circle":
            assert inside(get("cx"), get("cy")), ET.tostring(element)
        elif element.tag == "line":
            assert inside(get("x1"), get("y1")) and inside(get("x2"), get("y2"))
        elif element.tag == "text" and element.get("transform") is None:
            room = label_room([element.text or ""], get("font-size"))
            start = {"start": 0, "middle": room / 2, "end": room}[element.get("text-anchor", "")]
            x, y = get("x") - start, get("y")
            assert inside(x, y) and inside(x + room, y), ET.tostring(element)
    return root


def _under_a_bar(text: ET.Element) -> bool:
    """A task's label under its bar: the one text turned a slant (the y title is upright)."""
    return "rotate(-60 " in (text.get("transform") or "")


rates = st.sampled_from([0.0, 0.25, 0.5, 1.0])


@st.composite
def task_rows(draw: Any) -> list[dict[str, Any]]:
    """What the report gives the plots for each task: steps, tokens and success."""
    rows = []
    for i in range(draw(st.integers(1, 90))):
        low = draw(st.integers(0, 40))
        high = low + draw(st.integers(0, 60))
        mean = draw(st.floats(low, high)) if high > low else float(low)
        rows.append(
            {
                "task_id": f"task-{i}" + "x" * draw(st.integers(0, 50)),
                "mean_steps": mean,
                "min_steps": low,
                "max_steps": high,
                "mean_tokens": draw(st.floats(0, 5e6)),
                "success_rate": draw(rates),
            }
        )
    return rows


@settings(max_examples=60, deadline=None)
@given(rows=task_rows())
def test_every_plot_keeps_its_marks_inside_the_figure(rows: list[dict[str, Any]]) -> None:
    configurations = [
        {"name": row["task_id"], "success": row["success_rate"], "mean_tokens": row["mean_tokens"],
         "success_ci95": [row["success_rate"] / 2, (1 + row["success_rate"]) / 2]}
        for row in rows[:12]
    ]  # fmt: skip
    for svg in (
        plots.steps_per_task(rows),
        plots.tokens_against_success(rows),
        plots.success_per_configuration(configurations),
        plots.tokens_against_success_per_configuration(configurations),
    ):
        _marks_inside(svg)


@settings(max_examples=40, deadline=None)
@given(
    categories=st.lists(
        st.tuples(
            st.integers(1, 500),
            st.integers(0, 500),
            st.text(NAME_CHARACTERS, min_size=1, max_size=60),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_the_category_plot_keeps_its_marks_inside_the_figure(
    categories: list[tuple[int, int, str]],
) -> None:
    summary = {"categories": {}}
    for attempts, passed, name in categories:
        passed = min(passed, attempts)
        rate = passed / attempts
        summary["categories"][name] = {
            "success_rate": rate,
            "passed": passed,
            "attempts": attempts,
            "wilson95": [max(0, rate - 0.3), min(1, rate + 0.3)],
        }
    root = _marks_inside(plots.success_by_category(summary))
    shown = {element.text for element in root.iter("text")}
    assert all(plots._short(name) in shown for name in summary["categories"])


def test_the_tallest_histogram_keeps_its_counts_inside_the_figure() -> None:
    rows = [{"task_id": f"t{i}", "mean_steps": 3.0, "min_steps": 3, "max_steps": 3,
             "mean_tokens": 1.0, "success_rate": 1.0} for i in range(100_000)]  # fmt: skip
    root = _marks_inside(plots.steps_per_task(rows))
    assert "100,000" in {element.text for element in root.iter("text")}


def test_a_histogram_counts_every_task_once() -> None:
    rows = [
        {
            "task_id": f"t{i}",
            "mean_steps": 1 + i % 13,
            "min_steps": 1,
            "max_steps": 14,
            "mean_tokens": 100.0,
            "success_rate": (0.0, 0.5, 1.0)[i % 3],
        }
        for i in range(300)
    ]
    root = _marks_inside(plots.steps_per_task(rows))
    counted = sum(int(title.text.split()[0]) for title in root.iter("title"))  # "4 task(s) ..."
    assert counted == 300


def test_run_content_in_a_plot_is_text_and_a_long_id_is_whole_in_its_tooltip() -> None:
    long_id = "a-very-long-task-identifier-" * 4
    rows = [
        {
            "task_id": task_id,
            "mean_steps": 3.0,
            "min_steps": 1,
            "max_steps": 5,
            "mean_tokens": 900.0,
            "success_rate": 0.5,
        }
        for task_id in (HOSTILE, long_id)
    ]
    configurations = [
        {"name": HOSTILE, "success": 0.5, "success_ci95": [0.2, 0.8], "mean_tokens": None}
    ]
    for svg in (
        plots.steps_per_task(rows),
        plots.tokens_against_success(rows),
        plots.success_by_category(
            {
                "categories": {
                    HOSTILE: {
                        "success_rate": None,
                        "passed": 0,
                        "attempts": 0,
                        "wilson95": [0.0, 1.0],
                    }
                }
            }
        ),
        plots.success_per_configuration(configurations),
        plots.tokens_against_success_per_configuration(configurations),
    ):
        root = _marks_inside(svg)
        assert "<script" not in svg and root.find(".//script") is None
        assert any(HOSTILE in (element.text or "") for element in root.iter())
    controls = plots.success_per_configuration([{**configurations[0], "name": "a\x1bb\x00c"}])
    assert "a\ufffdb\ufffdc" in {element.text for element in ET.fromstring(controls).iter("text")}
    bars = ET.fromstring(plots.steps_per_task(rows))
    labels = [element.text for element in bars.iter("text") if _under_a_bar(element)]
    assert long_id[: plots.LABEL_CHARS - 1] + "…" in labels and long_id not in labels
    assert any((title.text or "").startswith(long_id + ":") for title in bars.iter("title"))


@pytest.mark.parametrize("tasks", [1, plots.BARS_UP_TO, plots.BARS_UP_TO + 1])
def test_steps_are_bars_up_to_the_bound_and_a_histogram_past_it(tasks: int) -> None:
    rows = [
        {
            "task_id": f"t{i}",
            "mean_steps": 2.0,
            "min_steps": 2,
            "max_steps": 2,
            "mean_tokens": 10.0,
            "success_rate": 1.0,
        }
        for i in range(tasks)
    ]
    root = _marks_inside(plots.steps_per_task(rows))
    labelled = [element for element in root.iter("text") if _under_a_bar(element)]
    if tasks <= plots.BARS_UP_TO:
        assert len(labelled) == tasks
    else:
        assert [
            element.text
            for element in root.iter("text")
            if element.text and "tasks)" in element.text
        ] == [f"mean steps per attempt ({tasks} tasks)"]
