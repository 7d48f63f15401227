"""The HTML report: one self-contained page, escaped content, and a real browser's view."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

Invoke = Any

HOSTILE = "<script>alert('x')</script><img src=x onerror=alert(1)>"


@pytest.fixture
def page(agent_eval: Invoke, make_results: Callable[..., Path], tmp_path: Path) -> Path:
    (tmp_path / "traj").mkdir()
    (tmp_path / "traj" / "t1-r1.jsonl").write_text(
        '{"meta": {"task_id": "t1"}}\n{"type": "model", "content": "' + HOSTILE + '"}\n')
    results = make_results(
        {"t1": [True, False], "t2": [False, "agent_error"], "t3": [True, True]},
        categories={"t2": "tools", "t3": "--><b>category</b>"},
        row_extra={"t1": {"answer": HOSTILE, "trajectory_file": "traj/t1-r1.jsonl"},
                   "t2": {"error": HOSTILE}})
    out = tmp_path / "report.html"
    code, stdout, stderr = agent_eval("report", results, "--format", "html", "--out", out)
    assert (code, stdout, stderr) == (0, "", f"html report written to {out}\n")
    return out


def test_page_is_self_contained(page: Path) -> None:
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert not re.search(r"https?:|//[a-z]", html, re.IGNORECASE)
    assert not re.search(r"<(script|link|iframe|object|img)\b", html, re.IGNORECASE)
    # Only references inside the page: the SVG's own glyph and marker definitions.
    assert not re.search(r"\b(src|href)=\"(?!#)", html)
    assert html.count("<svg") == 3
    for caption in ("Success per category", "Steps per task", "Tokens against success"):
        assert f"<figcaption>{caption}</figcaption>" in html


def test_run_content_is_escaped(page: Path) -> None:
    html = page.read_text()
    escaped = "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"
    assert html.count(escaped) >= 3  # the answer, the error and the trajectory
    assert "onerror=alert(1)>" not in html
    assert "&lt;b&gt;category&lt;/b&gt;" in html and "<b>category</b>" not in html


def _screenshot(page: Path, tmp_path: Path) -> Path:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium); "
                    "the headless screenshot check needs it")
    shot = tmp_path / "shot.png"
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--no-first-run",
         f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1280,2400",
         "--hide-scrollbars", f"--screenshot={shot}", page.as_uri()],
        check=True, capture_output=True, timeout=90)
    return shot


def test_chromium_renders_the_plots(page: Path, tmp_path: Path) -> None:
    from matplotlib.image import imread

    shot = _screenshot(page, tmp_path)
    image = np.asarray(imread(shot))[..., :3]
    assert image.shape[:2] == (2400, 1280)
    rgb = (image * 255).round().astype(int) if image.dtype.kind == "f" else image.astype(int)

    def pixels(colour: str) -> int:
        target = np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)])
        return int(np.count_nonzero(np.abs(rgb - target).max(axis=-1) <= 6))

    # Bars and points in the SVG plots carry these colours; nothing else on the page does.
    assert pixels("#2a9d8f") > 500, "no passing-task bar or point was drawn"
    assert pixels("#e9c46a") > 500, "no mixed-task bar or point was drawn"
    assert pixels("#ffffff") > image.shape[0] * image.shape[1] // 3
