"""Runs made by the real runner, a viewer serving them on port 0, and a real browser."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent_eval.run.runner import execute, prepare
from agent_eval.run.settings import RunConfig
from agent_eval.viewer import open_viewer
from agent_eval.web import AppServer

AGENT = """
import os

SCAFFOLD_NAME = "toy"

HOSTILE = "<script>window.PWNED = 1</script><img src=x onerror=\\"window.PWNED = 2\\">"
LINK = '<a id="evil" href="javascript:window.PWNED = 3">click me</a>'


def run_task(task, options):
    mode, task_id, n = options.get("mode", "a"), options["task_id"], options["attempt"]
    good = {
        "a": {"t-port": n != 2, "t-two": n != 2, "t-flip": True},
        "b": {"t-port": n != 2, "t-two": True, "t-flip": False},
    }[mode][task_id]
    if good and task_id == "t-flip":
        with open(os.path.join(options["workspace"], "notes.txt"), "w") as handle:
            handle.write("port 4000\\n")
    steps = [{"type": "route", "route": "researcher", "reason": "the task needs evidence"},
             {"type": "model", "role": "agent", "model": "m", "tool_calls": ["search_documents"],
              "prompt_tokens": 10, "completion_tokens": 5, "seconds": 0.1,
              "content": HOSTILE + " looking for the port"}]
    if good:
        steps.append({"type": "tool", "tool": "search_documents", "args": {"query": "port"},
                      "error": False, "result": "gateway port 4000 " + LINK})
    else:
        steps.append({"type": "tool", "tool": "read_file", "args": {"path": "../secret"},
                      "error": True, "result": "refused: outside the workspace " + HOSTILE})
    steps.append({"type": "model", "role": "agent", "model": "m", "tool_calls": [],
                  "prompt_tokens": 20, "completion_tokens": 5, "seconds": 0.1, "content": "done"})
    steps.append({"type": "stop", "reason": "finished"})
    if options.get("records"):
        steps = [{"type": "tool", "tool": "search_documents", "args": {"query": f"q{i}"},
                  "error": False, "result": f"passage {i}"} for i in range(int(options["records"]))]
    answer = "the port is 4000" if good else "I cannot tell " + HOSTILE + LINK
    return {"answer": answer, "steps": 3, "tokens": 40, "prompt_tokens": 30,
            "completion_tokens": 10, "trajectory": steps, "roles": {"agent": 40}}
"""

SUITE = {
    "name": "tiny",
    "version": "1.0.0",
    "tasks": [
        {"id": "t-port", "category": "retrieval", "task": "What port?",
         "expect_in_answer": ["4000"]},
        {"id": "t-two", "category": "refusal", "task": "Second <b>task</b>?",
         "expect_in_answer": ["4000"], "expect_tool": "search_documents"},
        {"id": "t-flip", "category": "retrieval", "task": "Flip?", "expect_in_answer": ["4000"],
         "expect_state": [{"file": "notes.txt", "exists": True}]},
    ],
}  # fmt: skip


def run_toy(folder: Path, mode: str, repeats: int = 3, **options: str) -> Path:
    """Run the toy agent in ``mode`` on the tiny suite; return its results file."""
    folder.mkdir(parents=True, exist_ok=True)
    agent = folder / "agent.py"
    if not agent.exists():
        agent.write_text(textwrap.dedent(AGENT), encoding="utf-8")
        (folder / "suite.json").write_text(json.dumps(SUITE), encoding="utf-8")
    out = folder / f"results-{mode}.json"
    config = RunConfig(
        agent=str(agent), tasks=str(folder / "suite.json"), repeats=repeats, model="m",
        options={"mode": mode, **options}, out=out, trajectory_dir=folder / f"trajectories-{mode}",
        labbook=folder / "labbook.jsonl", allow_empty_workspace=True,
    )  # fmt: skip
    execute(prepare(config))
    return out


@dataclass
class Served:
    """A viewer on port 0 over a folder of runs."""

    folder: Path
    server: AppServer

    @property
    def url(self) -> str:
        return self.server.root_url + "/"


@pytest.fixture
def make_run() -> Callable[..., Path]:
    """``make_run(folder, mode, repeats=3, **options)``: a real run of the toy agent."""
    return run_toy


@pytest.fixture(scope="session")
def runs_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two finished runs of one suite, a damaged results file and a labbook."""
    folder = tmp_path_factory.mktemp("runs")
    run_toy(folder, "a")
    run_toy(folder, "b")
    (folder / "broken-results.json").write_text('{"schema": 1, "run": {"run_id": ', "utf-8")
    return folder


@pytest.fixture(scope="session")
def served(runs_folder: Path) -> Iterator[Served]:
    server = open_viewer([runs_folder]).start()
    yield Served(runs_folder, server)
    server.stop()


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's chromium driven by Playwright; a skip only outside CI, where it must run.
    Per module: Playwright's sync API keeps an event loop running in this thread while
    it is open, and tests of other modules may run their own."""
    executable = chromium_path()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    if executable is None or sync_playwright is None:
        missing = "chromium (apt-get install -y chromium)" if executable is None else "playwright"
        if os.environ.get("CI"):
            pytest.fail(f"the viewer's browser tests need {missing}; .ci/run installs it")
        pytest.skip(f"the viewer's browser tests need {missing}")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page that records every dialog (a script that ran). The page's Content
    Security Policy is bypassed, so that the tests prove the page itself never turns
    data into markup, and so that they can evaluate their own waits."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    opened = context.new_page()
    opened.dialogs = []  # type: ignore[attr-defined]
    opened.on("dialog", lambda d: (opened.dialogs.append(d.message), d.dismiss()))
    yield opened
    context.close()


@pytest.fixture(scope="session")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go; its path is printed so that a person can look."""
    folder = Path(os.environ.get("AGENT_EVAL_SHOTS") or tmp_path_factory.mktemp("shots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder
