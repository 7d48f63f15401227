"""How fast `agent-eval view` opens a run of 100,000 attempts, measured in a real browser.

One synthetic run (1,000 tasks x 100 repeats by default) is written by scale.py's
generator, in the runner's layout, with one attempt's trajectory holding 5,000 records.
`agent-eval view` then starts as a fresh subprocess on port 0, and Debian's chromium,
driven by Playwright, opens:

- the runs page, timed from the server's start and from the page's navigation;
- the run page (summary and the first page of the task x attempt grid), once as soon as
  the runs page shows (the viewer is still reading the file) and once again later;
- the attempt page of the 5,000-record trajectory, counting the records drawn and open.

"Shown" means the page has drawn what its address asks for (the app marks it on
``body``); every figure is wall time as a user would see it. The median of ``--runs``.

    .venv/bin/python benchmarks/viewer.py [--tasks 1000] [--repeats 100] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import write_run  # the generator of benchmarks/scale.py

TARGET_SECONDS = 2.0
RECORDS = 5_000
SHOWN = "document.body.dataset.shown === location.hash"


def _trajectory(path: Path, records: int) -> None:
    """A trajectory file of ``records`` records after its meta line."""
    lines = [{"meta": {"task": "Which port does the gateway listen on?", "task_id": "t0000"}}]
    for index in range(records):
        if index % 2:
            lines.append({"type": "tool", "tool": "search_documents",
                          "args": {"query": f"q{index}"}, "error": index % 97 == 0,
                          "result": "passage " * 40})  # fmt: skip
        else:
            lines.append({"type": "model", "role": "agent", "model": "m",
                          "tool_calls": ["search_documents"], "prompt_tokens": 900,
                          "completion_tokens": 40, "seconds": 0.2,
                          "content": "thinking " * 30})  # fmt: skip
    lines.append({"type": "stop", "reason": "turn_limit"})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def _start(folder: Path) -> tuple[subprocess.Popen[str], str, float]:
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "agent_eval", "view", str(folder), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()
    return process, line.split()[3], started


def measure(folder: Path, browser: Any) -> dict[str, float]:
    """One cold start of the viewer and the pages a user opens first."""
    process, url, started = _start(folder)
    figures: dict[str, float] = {"server up": time.perf_counter() - started}
    try:
        # The waits below are evaluated scripts, which the app's own policy forbids.
        page = browser.new_context(bypass_csp=True).new_page()
        clock = time.perf_counter()
        page.goto(url)
        page.wait_for_function(SHOWN, timeout=120_000)
        now = time.perf_counter()
        figures["runs page"] = now - clock
        figures["runs page from start"] = now - started
        link = page.locator("#runs a").first
        href = link.get_attribute("href")
        clock = time.perf_counter()
        link.click()
        page.wait_for_function(SHOWN, timeout=120_000)
        figures["run page, cold"] = time.perf_counter() - clock
        page.goto(url)
        page.wait_for_function(SHOWN, timeout=120_000)
        clock = time.perf_counter()
        page.goto(url + href)
        page.wait_for_function(SHOWN, timeout=120_000)
        figures["run page, again"] = time.perf_counter() - clock
        clock = time.perf_counter()
        page.goto(url + href.replace("#/run/", "#/attempt/") + "/0")
        page.wait_for_function(SHOWN, timeout=120_000)
        figures["attempt page, 5,000 records"] = time.perf_counter() - clock
        figures["records drawn"] = page.locator("#timeline details").count()
        figures["records open"] = page.locator("#timeline details[open]").count()
        page.close()
    finally:
        process.terminate()
        process.wait(10)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("this benchmark needs Debian's chromium: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_run(folder / "results.json", args.tasks, args.repeats, 7, 0.0, "m", True)
        rows = (folder / "results.json").read_bytes().split(b'"results": [', 1)[1]
        first = json.loads(rows.split(b"\n", 2)[1].strip().rstrip(b","))
        _trajectory(folder / first["trajectory_file"], RECORDS)
        size = (folder / "results.json").stat().st_size / 1e6
        rounds = []
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            for _ in range(args.runs):
                rounds.append(measure(folder, browser))
            browser.close()
    attempts = args.tasks * args.repeats
    print(f"{args.tasks} tasks x {args.repeats} repeats = {attempts:,} attempts; results file "
          f"{size:.0f} MB; python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f}; median of {args.runs}")  # fmt: skip
    print(f"{'figure':32} {'seconds':>8}  target")
    for name in rounds[0]:
        value = statistics.median(r[name] for r in rounds)
        if name.startswith("records"):
            print(f"{name:32} {value:8.0f}")
            continue
        target = "" if name == "server up" else "ok" if value < TARGET_SECONDS else "MISSED"
        print(f"{name:32} {value:8.2f}  {target}")


if __name__ == "__main__":
    main()
