"""The same deterministic agents through the course harness and through agent-eval: the
verdicts, the summary, the per-task view, every row, the labbook line and the console
must be the course's, key for key and byte for byte, except timing, paths and dates.

The course harness is ../shared/course/agent-eval.py from the repository's root, run as a
program. Without it (a user's clone) the test skips; with CI set it fails instead. The
agents are tests/results/data/course_agents/: steady.py passes some tasks, fails others,
over-steps and calls tools repeatedly; raises.py raises on every task. agent-eval runs
them with --isolation worker, so that, as in the course harness, one process runs every
attempt in the course's order.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import course_harness

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "results" / "data"
LAB = "part-26/evaluating-agents"
"""The course's lab, which it always writes; agent-eval writes the --lab given."""
TIMING = {"seconds", "wall_seconds", "mean_seconds"}
PATHS = {"trajectory_file"}
DATES = {"date", "run_id"}
"""The course's run id is its start, to the second."""
CASES = {  # one priced, so that the cost figures and line are compared; one not
    "steady": ["--repeats", "2", "--cost-per-million", "0.7"],
    "raises": ["--repeats", "2"],
}


@dataclass(frozen=True)
class Side:
    """One harness's run of one agent: its results file, labbook line and console."""

    folder: Path
    results: dict[str, Any]
    labbook: list[dict[str, Any]]
    stdout: str
    returncode: int


@dataclass(frozen=True)
class Pair:
    course: Side
    ours: Side


def _run(folder: Path, command: list[str]) -> Side:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300,
                          env=env, check=False)  # fmt: skip
    assert done.returncode in (0, 2), done.stdout + done.stderr
    labbook = [json.loads(line) for line in (folder / "lb.jsonl").read_text().splitlines()]
    results = json.loads((folder / "results.json").read_text())
    return Side(folder, results, labbook, done.stdout, done.returncode)


def _both(root: Path, agent: str, flags: list[str]) -> Pair:
    """The agent run by each harness in a folder of its own, with the same names."""
    sides = []
    for name in ("course", "ours"):
        folder = root / agent / name
        folder.mkdir(parents=True)
        shutil.copy(DATA / "course_agents" / f"{agent}.py", folder / f"{agent}.py")
        shutil.copy(DATA / "course-suite.json", folder / "course-suite.json")
        common = ["--agent", f"{agent}.py", "--tasks", "course-suite.json", "--model", "local/chat",
                  "--out", "results.json", "--labbook", "lb.jsonl", *flags]  # fmt: skip
        if name == "course":
            command = [sys.executable, str(course_harness()), *common]
        else:
            # the test agents call no model: nothing to check before the first attempt
            command = [sys.executable, "-m", "agent_eval", "run", *common, "--isolation",
                       "worker", "--allow-empty-workspace", "--lab", LAB,
                       "--no-preflight"]  # fmt: skip
        sides.append(_run(folder, command))
    return Pair(*sides)


@pytest.fixture(scope="module", params=sorted(CASES))
def pair(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Pair:
    course_harness()
    agent = str(request.param)
    return _both(tmp_path_factory.mktemp("differential"), agent, CASES[agent])


def restricted(course: Any, ours: Any, skip: frozenset[str] = frozenset()) -> Any:
    """``ours`` cut down to the keys ``course`` has, at every depth; a key missing from
    ours shows as '<missing>', so that it fails the comparison."""
    if isinstance(course, dict) and isinstance(ours, dict):
        return {key: restricted(course[key], ours[key]) if key in ours else "<missing>"
                for key in course if key not in skip}  # fmt: skip
    if isinstance(course, list) and isinstance(ours, list) and len(course) == len(ours):
        return [restricted(c, o) for c, o in zip(course, ours, strict=True)]
    return ours


def without(record: dict[str, Any], skip: set[str]) -> dict[str, Any]:
    return {key: value for key, value in record.items() if key not in skip}


def test_both_harnesses_exit_alike(pair: Pair) -> None:
    assert pair.ours.returncode == pair.course.returncode == 2


def test_verdicts_per_task_and_attempt(pair: Pair) -> None:
    def verdicts(side: Side) -> list[tuple[str, int, bool]]:
        return [(r["id"], r["attempt"], r["checks"]["passed"]) for r in side.results["results"]]

    assert verdicts(pair.ours) == verdicts(pair.course)  # same order too: attempt-major
    assert len(verdicts(pair.course)) == 12


def test_the_results_file_has_the_course_keys_in_the_course_order(pair: Pair) -> None:
    course, ours = pair.course.results, pair.ours.results
    assert [key for key in ours if key in course] == list(course)
    assert list(ours["run"])[: len(course["run"])] == list(course["run"])
    summary = ours["run"]["summary"]
    assert list(summary)[: len(course["run"]["summary"])] == list(course["run"]["summary"])
    for mine, theirs in zip(ours["per_task"], course["per_task"], strict=True):
        assert list(mine)[: len(theirs)] == list(theirs)
    for mine, theirs in zip(ours["results"], course["results"], strict=True):
        assert list(mine)[: len(theirs)] == list(theirs)
        assert list(mine["checks"])[: len(theirs["checks"])] == list(theirs["checks"])


def test_the_summary_has_the_course_figures(pair: Pair) -> None:
    course = pair.course.results["run"]["summary"]
    ours = pair.ours.results["run"]["summary"]
    assert without(restricted(course, ours), TIMING) == without(course, TIMING)


def test_every_per_task_course_key_matches(pair: Pair) -> None:
    course, ours = pair.course.results["per_task"], pair.ours.results["per_task"]
    assert restricted(course, ours) == course
    failures = [task["first_failure"] for task in course]
    assert any(f is not None for f in failures)  # the checks objects were compared


def test_every_row_matches_but_timing_and_paths(pair: Pair) -> None:
    course, ours = pair.course.results["results"], pair.ours.results["results"]
    skip = TIMING | PATHS
    assert [without(r, skip) for r in restricted(course, ours)] == [
        without(r, skip) for r in course
    ]


def test_the_run_object_and_labbook_line_match_but_timing_paths_and_dates(pair: Pair) -> None:
    skip = TIMING | DATES
    course, ours = pair.course.results["run"], pair.ours.results["run"]
    assert without(restricted(course, ours), skip | {"summary"}) == without(
        course, skip | {"summary"}
    )
    [course_line], [our_line] = pair.course.labbook, pair.ours.labbook
    assert course_line == course  # the labbook line is the run object, in both
    assert without(restricted(course_line, our_line), skip | {"summary"}) == without(
        course_line, skip | {"summary"}
    )
    assert without(restricted(course_line["summary"], our_line["summary"]), TIMING) == without(
        course_line["summary"], TIMING
    )


def _seconds_masked(stdout: str) -> list[str]:
    """The console without its seconds: the per-attempt column and the mean."""
    lines = []
    for line in stdout.splitlines():
        line = re.sub(r"(tok  )[ \d.]{6}s$", r"\1<sec>s", line)
        lines.append(re.sub(r"^(mean seconds  ).*$", r"\1<sec>", line))
    return lines


def test_the_console_is_the_courses_but_seconds(pair: Pair) -> None:
    course = _seconds_masked(pair.course.stdout)
    assert sum("<sec>" in line for line in course) == 13  # 12 attempts and the mean
    assert _seconds_masked(pair.ours.stdout) == course


def test_the_raising_agent_is_recorded_as_the_course_records_it(pair: Pair) -> None:
    rows = pair.ours.results["results"]
    if pair.ours.results["run"]["scaffold"] != "raises":
        assert any(len(set(r["checks"]["tools_used"])) < len(r["checks"]["tools_used"])
                   for r in rows)  # repeats kept  # fmt: skip
        return
    stopped = {r["stopped"] for r in rows}
    assert stopped == {
        "entry point raised ValueError: no answer for 'which' questions",
        "entry point raised ValueError: no answer for 'on' questions",
        "entry point raised ValueError: no answer for 'how' questions",
        "entry point raised ValueError: no answer for 'when' questions",
    }
    assert {r["failure_class"] for r in rows} == {"agent_error"}


@pytest.fixture(scope="module")
def course_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A course-harness results file with its trajectories beside it."""
    return _both(tmp_path_factory.mktemp("viewed"), "steady", ["--repeats", "2"]).course.folder


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as reply:
        return json.loads(reply.read())


@pytest.fixture
def viewer(course_run: Path) -> Iterator[str]:
    from agent_eval.viewer import open_viewer

    server = open_viewer([course_run / "results.json"]).start()
    try:
        yield server.root_url
    finally:
        server.stop()


def test_the_viewer_opens_a_course_results_file(viewer: str, course_run: Path) -> None:
    course = json.loads((course_run / "results.json").read_text())
    [run] = _get(viewer + "/api/runs")["runs"]
    grid = _get(f"{viewer}/api/grid/{run['id']}")
    tasks = grid["tasks"]
    assert [t["id"] for t in tasks] == [t["id"] for t in course["per_task"]]
    for mine, theirs in zip(tasks, course["per_task"], strict=True):
        assert list(mine)[:10] == list(theirs)
        assert restricted(theirs, mine) == theirs
    attempt = _get(f"{viewer}/api/attempt/{run['id']}/3")
    assert (attempt["task_id"], attempt["attempt"], attempt["passed"]) == ("review-date", 1, True)
    steps = _get(f"{viewer}/api/steps/{run['id']}/3")
    tools = [r.get("tool") for r in steps["records"] if r.get("type") == "tool"]
    assert tools == ["search_documents", "search_documents", "read_file", "", "search_documents"]


def test_report_and_compare_open_course_results_files(course_run: Path, tmp_path: Path) -> None:
    other = _both(tmp_path, "raises", ["--repeats", "1"]).course.folder / "results.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    for command in (["report", str(course_run / "results.json")],
                    ["compare", str(course_run / "results.json"), str(other)]):  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-m", "agent_eval", *command, "--format", "json"],
            capture_output=True, text=True, timeout=120, env=env, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)


def test_a_course_files_price_is_its_runs_price(tmp_path: Path) -> None:
    """The course writes its price only in the summary: report, compare and rescore take
    it as the run's price, so the cost is shown and kept, never "not priced"."""
    pair = _both(tmp_path, "steady", ["--repeats", "1", "--cost-per-million", "0.7"])
    course = pair.course.folder / "results.json"
    summary = pair.course.results["run"]["summary"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}

    def agent_eval(*args: str) -> Any:
        done = subprocess.run([sys.executable, "-m", "agent_eval", *args], capture_output=True,
                              text=True, timeout=120, env=env, check=False)  # fmt: skip
        assert done.returncode in (0, 2), done.stderr  # 2: rescore found a failed attempt
        return json.loads(done.stdout) if "--format" in args else None

    cost = agent_eval("report", str(course), "--format", "json")["summary"]["cost"]
    assert cost["prices"] == {"per_million": 0.7}
    assert round(cost["cost_total"], 6) == summary["cost_total"]  # the course keeps 6 decimals
    figures = agent_eval("compare", str(course), str(pair.ours.folder / "results.json"),
                         "--format", "json")["figures"]  # fmt: skip
    assert round(figures["cost"]["a"], 6) == summary["cost_per_task"]
    assert figures["cost"]["a"] == figures["cost"]["b"]
    agent_eval("rescore", str(course), "--tasks", str(DATA / "course-suite.json"),
               "--out", str(tmp_path / "rescored.json"))  # fmt: skip
    kept = json.loads((tmp_path / "rescored.json").read_text())["run"]["summary"]
    assert {k: kept[k] for k in ("cost_per_million_tokens", "cost_total", "cost_per_task")} == {
        k: summary[k] for k in ("cost_per_million_tokens", "cost_total", "cost_per_task")
    }
