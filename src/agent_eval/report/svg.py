"""A plot's frame, axes and marks, written as one inline <svg> element.

The report's plots are a few dozen dots, whiskers and bars on two linear axes, so they
are written here directly rather than drawn by a plotting library (whose import and
drawing were a quarter of an HTML report's time at 100,000 rows). Text is SVG text in
the page's own font; every piece of it goes through ``shown``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape

from agent_eval.report.xml_text import xml_safe

INK = "#264653"
"""Whiskers, points' edges and the frame."""
FONT = 11
"""Font size of labels, in pixels."""
WIDTH_PER_SIZE = 0.62
"""A generous average width of one character, as a share of its font size."""
CHAR = WIDTH_PER_SIZE * FONT
"""The width of one character of a label."""


def shown(words: str) -> str:
    """Text as SVG content: escaped, and with what XML cannot hold (control characters)
    replaced, so that a name a suite or agent chose neither breaks nor marks up a plot."""
    return escape(xml_safe(words))


def nice_ticks(low: float, high: float, count: int = 7) -> list[float]:
    """Round tick values, about ``count`` of them, from the last at or below ``low`` to
    the first at or above ``high``: an axis from the first to the last holds both."""
    if not high > low:
        return [low]
    raw = (high - low) / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first, last = math.floor(low / step + 1e-9), math.ceil(high / step - 1e-9)
    return [round(i * step, 12) for i in range(first, last + 1)]


def tick_text(value: float, ticks: list[float]) -> str:
    """A tick's label with as many decimals as the step between ticks needs."""
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) if step > 0 else 0
    return f"{value:,.{decimals}f}"


def label_room(labels: list[str], size: float = FONT) -> float:
    """Pixels the longest of ``labels`` needs along its line."""
    return WIDTH_PER_SIZE * size * max((len(label) for label in labels), default=0)


def y_axis_room(ticks: list[float]) -> float:
    """The left margin a y axis needs: its title, a gap, its longest value, its ticks."""
    return 20 + label_room([tick_text(value, ticks) for value in ticks]) + 10


@dataclass
class Axes:
    """A plot area of ``width`` x ``height`` pixels inside margins, with linear x and y
    scales; marks are added in data units and ``svg()`` writes the whole figure."""

    width: float
    height: float
    x_range: tuple[float, float]
    y_range: tuple[float, float]
    left: float = 50
    bottom: float = 40
    top: float = 10
    right: float = 12
    marks: list[str] = field(default_factory=list)

    def x(self, value: float) -> float:
        low, high = self.x_range
        return round(self.left + (value - low) / ((high - low) or 1) * self.width, 2)

    def y(self, value: float) -> float:
        low, high = self.y_range
        return round(self.top + (high - value) / ((high - low) or 1) * self.height, 2)

    def text(
        self,
        x: float,
        y: float,
        words: str,
        anchor: str = "start",
        size: int = FONT,
        rotate: float = 0,
    ) -> None:
        """Text at pixel (x, y), its baseline's start, middle or end there."""
        x, y = round(x, 2), round(y, 2)
        turn = f' transform="rotate({rotate} {x} {y})"' if rotate else ""
        self.marks.append(
            f'<text x="{x}" y="{y}" font-size="{size}" text-anchor="{anchor}"'
            f"{turn}>{shown(words)}</text>"
        )

    def line(self, x1: float, y1: float, x2: float, y2: float, colour: str = INK) -> None:
        """A line between two pixel points."""
        self.marks.append(f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="{colour}"/>')

    def whisker(self, at: float, low: float, high: float, horizontal: bool, cap: float = 4) -> None:
        """An interval from ``low`` to ``high`` with end caps, at ``at`` on the other axis
        (all in data units)."""
        if horizontal:
            y, x1, x2 = self.y(at), self.x(low), self.x(high)
            self.line(x1, y, x2, y)
            for x in (x1, x2):
                self.line(x, y - cap, x, y + cap)
        else:
            x, y1, y2 = self.x(at), self.y(low), self.y(high)
            self.line(x, y1, x, y2)
            for y in (y1, y2):
                self.line(x - cap, y, x + cap, y)

    def dot(
        self, x: float, y: float, colour: str = INK, radius: float = 4, tip: str | None = None
    ) -> None:
        """A point at data (x, y), with an optional tooltip."""
        title = f"<title>{shown(tip)}</title>" if tip else ""
        self.marks.append(
            f'<circle cx="{self.x(x)}" cy="{self.y(y)}" r="{radius}" '
            f'fill="{colour}" stroke="{INK}">{title}</circle>'
        )

    def bar(
        self, x0: float, x1: float, y0: float, y1: float, colour: str, tip: str | None = None
    ) -> None:
        """A rectangle spanning data x0..x1 and y0..y1, with an optional tooltip."""
        left, right, top, base = self.x(x0), self.x(x1), self.y(y1), self.y(y0)
        title = f"<title>{shown(tip)}</title>" if tip else ""
        self.marks.append(
            f'<rect x="{left}" y="{top}" width="{round(right - left, 2)}" '
            f'height="{round(base - top, 2)}" fill="{colour}">{title}</rect>'
        )

    def x_axis(self, ticks: list[float], title: str) -> None:
        """Ticks and their values under the plot, and the axis title below them."""
        base = self.top + self.height
        labels = [tick_text(value, ticks) for value in ticks]
        for value, words in zip(ticks, labels, strict=True):
            x = self.x(value)
            self.line(x, base, x, base + 4)
            self.text(x, base + 16, words, anchor="middle")
        self.right = max(self.right, label_room(labels[-1:]) / 2 + 2)  # the last value whole
        self.text(self.left + self.width / 2, base + 33, title, anchor="middle")

    def y_axis(self, ticks: list[float], title: str) -> None:
        """Ticks and their values left of the plot, and the axis title turned upright
        (an Axes made with ``left=y_axis_room(ticks)`` has room for them)."""
        for value in ticks:
            y = self.y(value)
            self.line(self.left - 4, y, self.left, y)
            self.text(self.left - 7, y + FONT / 3, tick_text(value, ticks), anchor="end")
        middle = self.top + self.height / 2
        self.text(12, middle, title, anchor="middle", rotate=-90)

    def svg(self) -> str:
        """The figure: a white ground, the frame and every mark, in the order added."""
        width = math.ceil(self.left + self.width + self.right)
        height = math.ceil(self.top + self.height + self.bottom)
        frame = (
            f'<rect x="{self.left}" y="{self.top}" width="{self.width}" '
            f'height="{self.height}" fill="none" stroke="{INK}"/>'
        )
        return (
            f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'role="img" font-family="system-ui, sans-serif" fill="#222">'
            f'<rect width="{width}" height="{height}" fill="#fff"/>'
            f"{''.join(self.marks)}{frame}</svg>"
        )
