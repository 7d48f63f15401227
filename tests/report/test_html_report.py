"""The HTML report: one self-contained page, escaped content, and a real browser's view."""

from __future__ import annotations

import json
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
        '{"meta": {"task_id": "t1"}}\n{"type": "model", "content": "' + HOSTILE + '"}\n'
    )
    results = make_results(
        {"t1": [True, False], "t2": [False, "agent_error"], "t3": [True, True]},
        categories={"t2": "tools", "t3": "--><b>category</b>"},
        row_extra={
            "t1": {"answer": HOSTILE, "trajectory_file": "traj/t1-r1.jsonl"},
            "t2": {"error": HOSTILE},
        },
    )
    out = tmp_path / "report.html"
    code, stdout, stderr = agent_eval("report", results, "--format", "html", "--out", out)
    assert (code, stdout, stderr) == (0, "", f"html report written to {out}\n")
    return out


def test_page_is_self_contained(page: Path) -> None:
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert not re.search(r"https?:|//[a-z]", html, re.IGNORECASE)
    assert not re.search(r"<(script|link|iframe|object|img)\b", html, re.IGNORECASE)
    assert not re.search(r"\b(src|href)=\"", html)  # no reference, not even within the page
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
        pytest.skip(
            "Debian's chromium is not installed (apt-get install -y chromium); "
            "the headless screenshot check needs it"
        )
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--window-size=1280,2400",
            "--hide-scrollbars",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=90,
    )
    return shot


def _pixels(shot: Path) -> np.ndarray:
    """A screenshot's pixels as integer RGB."""
    from PIL import Image

    with Image.open(shot) as image:
        return np.asarray(image.convert("RGB")).astype(int)


def test_chromium_renders_the_plots(page: Path, tmp_path: Path) -> None:
    rgb = _pixels(_screenshot(page, tmp_path))
    assert rgb.shape[:2] == (2400, 1280)

    def pixels(colour: str) -> int:
        target = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)])
        return int(np.count_nonzero(np.abs(rgb - target).max(axis=-1) <= 6))

    # Bars and points in the SVG plots carry these colours; nothing else on the page does.
    assert pixels("#2a9d8f") > 500, "no passing-task bar or point was drawn"
    assert pixels("#e9c46a") > 500, "no mixed-task bar or point was drawn"
    assert pixels("#ffffff") > rgb.shape[0] * rgb.shape[1] // 3


@pytest.fixture
def large_page(
    agent_eval: Invoke, make_results: Callable[..., Path], tmp_path: Path
) -> tuple[Path, str]:
    """200 tasks x 10 attempts: 50 tasks always pass, 150 fail 8 times each (1,200 in all)."""
    outcomes = {
        f"t{i:03d}": [True] * 10 if i % 4 == 0 else [n in (1 + i % 5, 10) for n in range(1, 11)]
        for i in range(200)
    }
    document = json.loads(make_results(outcomes).read_text())
    (tmp_path / "traj").mkdir()
    for row in document["results"]:
        name = f"{row['id']}-r{row['attempt']}"
        row["answer"] = f"answer {name}. " + "x" * 1000 + HOSTILE
        row["trajectory_file"] = f"traj/{name}.jsonl"
        (tmp_path / "traj" / f"{name}.jsonl").write_text(f'{{"trajectory": "{name}"}}\n')
    results = tmp_path / "large.json"
    results.write_text(json.dumps(document))
    out = tmp_path / "large.html"
    assert agent_eval("report", results, "--format", "html", "--out", out)[0] == 0
    return results, out.read_text()


def test_a_large_run_page_lists_every_task_but_caps_the_attempts(
    large_page: tuple[Path, str],
) -> None:
    results, html = large_page
    # Six failing attempts of each failing task fit in 1,000; seven would not.
    assert html.count("<h4>") == html.count("x" * 1000) == 900
    assert len(html) < 1_800_000  # every attempt's answer alone would take 2.2 MB
    tasks = html[html.index("<h2>Tasks</h2>") : html.index("<h2>Attempts</h2>")]
    assert all(f"<td>t{i:03d}</td>" in tasks for i in range(200))
    assert (
        "<p>This run has 2,000 attempts, too many to show on one page, so this page shows "
        "the first 6 failing attempts of each task: 900 attempt(s) shown, 1,100 left out. "
        "Every attempt, with its answer, checks and trajectory file, is in the results file "
        f"<code>{results}</code>.</p>"
    ) in html
    # t001 passes at r2 and r10 and fails the other eight times: r8 and r9 are left out.
    t001 = html[html.index("<summary>t001 (2/10 passed)</summary>") :]
    t001 = t001[: t001.index("</details><details>")]
    assert re.findall(r"<h4>r(\d+): wrong_answer", t001) == ["1", "3", "4", "5", "6", "7"]
    assert "answer t001-r7." in t001 and "answer t001-r8." not in html
    assert t001.endswith("<p>Not shown: 4 attempt(s) of this task (2 failing, 2 passing).</p>")
    assert (
        "<summary>t000 (10/10 passed)</summary><p>Not shown: 10 attempt(s) of this task "
        "(0 failing, 10 passing).</p></details>"
    ) in html
    # Trajectories of the attempts shown only, and every piece of content escaped.
    assert html.count("{&quot;trajectory&quot;: &quot;") == 900
    assert "t001-r7&quot;}" in html and "t001-r8&quot;}" not in html
    assert html.count("&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;") == 900
    assert not re.search(r"<(script|img)\b", html, re.IGNORECASE)
    assert (
        "Unstable tasks: 150 of 200 tasks passed in some attempts and failed in others: "
        "t001, t002, t003, t005,"
    ) in html
    assert "t066 and 100 more (the task table has them all)</p>" in html


def test_a_large_runs_steps_plot_is_a_histogram(
    large_page: tuple[Path, str], tmp_path: Path
) -> None:
    from agent_eval.report import plots

    _, html = large_page
    assert html.count("<svg") == 3 and "<figcaption>Steps per task</figcaption>" in html
    rows = [
        {
            "task_id": f"task-{i:04d}",
            "mean_steps": 2 + i % 7,
            "min_steps": 1,
            "max_steps": 12,
            "success_rate": (i % 3) / 2,
        }
        for i in range(1000)
    ]
    # One bar and one drawn label per task came to 1.9 MB of SVG at 1,000 tasks.
    assert len(plots.steps_per_task(rows)) < 100_000
    page = tmp_path / "large-page.html"
    page.write_text(html)
    rgb = _pixels(_screenshot(page, tmp_path))
    mixed = np.array([0xE9, 0xC4, 0x6A])
    assert np.count_nonzero(np.abs(rgb - mixed).max(axis=-1) <= 6) > 2000


def test_every_attempt_is_shown_up_to_the_bound(
    agent_eval: Invoke, make_results: Callable[..., Path], tmp_path: Path
) -> None:
    from agent_eval.report.html import EVERY_ATTEMPT_UP_TO

    out = tmp_path / "page.html"
    tasks = EVERY_ATTEMPT_UP_TO // 10
    outcomes = {f"t{i:03d}": [True, False] * 5 for i in range(tasks)}
    agent_eval("report", make_results(outcomes), "--format", "html", "--out", out)
    html = out.read_text()
    assert html.count("<h4>") == EVERY_ATTEMPT_UP_TO and "Not shown" not in html
    # Ten attempts more, and only the failing ones are shown: they all fit.
    outcomes[f"t{tasks:03d}"] = [True, False] * 5
    agent_eval("report", make_results(outcomes), "--format", "html", "--out", out)
    html = out.read_text()
    assert html.count("<h4>") == html.count("<h4>r2: wrong_answer") * 5 == 505
    assert (
        "this page shows every failing attempt of each task: 505 attempt(s) shown, 505 left out."
    ) in html


def test_the_attempts_shown_are_capped_in_all(
    agent_eval: Invoke, make_results: Callable[..., Path], tmp_path: Path
) -> None:
    from agent_eval.report.html import SHOWN_AT_MOST

    outcomes = {f"t{i:04d}": [False] for i in range(SHOWN_AT_MOST + 1)}
    out = tmp_path / "page.html"
    agent_eval("report", make_results(outcomes), "--format", "html", "--out", out)
    html = out.read_text()
    assert html.count("<h4>") == SHOWN_AT_MOST
    assert (
        "this page shows the first failing attempt of the first 1,000 tasks with a failure: "
        "1,000 attempt(s) shown, 1 left out."
    ) in html
    assert html.endswith(
        "<summary>t1000 (0/1 passed)</summary><p>Not shown: 1 attempt(s) of "
        "this task (1 failing, 0 passing).</p></details>\n</body></html>\n"
    )
    # 600 tasks failing twice: one each fits in 1,000, two each would not.
    outcomes = {f"t{i:04d}": [False, False] for i in range(600)}
    agent_eval("report", make_results(outcomes), "--format", "html", "--out", out)
    html = out.read_text()
    assert html.count("<h4>r1: wrong_answer") == html.count("<h4>") == 600
    assert (
        "this page shows the first failing attempt of each task: 600 attempt(s) shown, "
        "600 left out."
    ) in html


def test_many_repeats_show_a_selection_of_k(
    agent_eval: Invoke, make_results: Callable[..., Path], tmp_path: Path
) -> None:
    out = tmp_path / "page.html"
    agent_eval(
        "report",
        make_results({"t1": [True, False] * 6, "t2": [True] * 12}),
        "--format",
        "html",
        "--out",
        out,
    )
    html = out.read_text()
    shown = [k for k in range(1, 13) if f"<td>pass@{k}</td>" in html]
    assert shown == [*range(1, 11), 12] == [k for k in range(1, 13) if f"<td>pass^{k}</td>" in html]
    assert (
        "<p>pass@k and pass^k are shown for k = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12; the JSON "
        "report (--format json) has every k.</p>"
    ) in html
