"""Inspect AI logs in and out, against a log Inspect itself wrote and Inspect's own reader."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from inspect_ai.log import read_eval_log
from tests.interop.conftest import InspectRun

from agent_eval.interop import ForeignRun, load_run, load_runs

Cli = Callable[..., subprocess.CompletedProcess[str]]


def test_report_gives_the_accuracy_inspect_reports(inspect_run: InspectRun, cli: Cli) -> None:
    header = read_eval_log(str(inspect_run.log), header_only=True)
    assert header.results is not None
    accuracy = header.results.scores[0].metrics["accuracy"].value
    printed = re.search(r"accuracy\s+([0-9.]+)", inspect_run.console)
    assert printed is not None and float(printed.group(1)) == round(accuracy, 3)
    done = cli("report", str(inspect_run.log), "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    summary = report["summary"]
    assert (summary["attempts"], summary["passed"], summary["tasks"]) == (8, 4, 4)
    assert summary["success_rate"] == pytest.approx(accuracy)
    text = cli("report", str(inspect_run.log))
    assert "success rate     │ 0.500" in text.stdout


def test_each_sample_and_epoch_is_an_attempt_with_its_trajectory(inspect_run: InspectRun) -> None:
    run = load_run(inspect_run.log)
    assert isinstance(run, ForeignRun)
    assert [(r.id, r.attempt) for r in run.rows] == [
        ("sum", 1), ("capital", 1), ("eight", 1), ("loop", 1),
        ("sum", 2), ("capital", 2), ("eight", 2), ("loop", 2),
    ]  # fmt: skip
    head = read_eval_log(str(inspect_run.log), header_only=True)
    assert (run.run.task_set, run.run.model, run.run.repeats) == ("arith", head.eval.model, 2)
    assert run.run.task_set_version == str(head.eval.task_version)
    verdicts = {(r.id, r.attempt): (r.passed, r.failure_class) for r in run.rows}
    assert verdicts[("eight", 1)] == (False, "wrong_answer")
    assert verdicts[("sum", 2)] == (True, "passed")
    samples = {(s.id, s.epoch): s for s in read_eval_log(str(inspect_run.log)).samples or []}
    for row in run.rows:
        sample = samples[(row.id, row.attempt)]
        usage = next(iter(sample.model_usage.values()))
        assert (row.prompt_tokens, row.completion_tokens, row.tokens) == (
            usage.input_tokens, usage.output_tokens, usage.total_tokens,
        )  # fmt: skip
        assert row.seconds == sample.working_time
    sum_records = run.records(run.rows[0])
    assert sum_records[0]["meta"]["task"] == "What is 2 plus 3?"
    kinds = [r.get("type") for r in sum_records[1:]]
    assert kinds == ["model", "tool", "model", "stop", "score"]
    tool = sum_records[2]
    assert (tool["tool"], tool["args"], tool["result"], tool["error"]) == (
        "add", {"x": 2, "y": 3}, "5", False,
    )  # fmt: skip
    assert "tool" not in sum_records[1] and sum_records[1]["tool_calls"] == ["add"]
    assert run.rows[0].steps == 3  # two replies and one tool result
    score = sum_records[-1]
    assert (score["scorer"], score["value"], score["verdict"]) == ("includes", "C", "passed")
    wrong = run.rows[2]
    assert wrong.error == "scorer includes gave 'I'" and wrong.answer == "I think it is 9."
    # Inspect stopped the loop at its message limit: over budget, not a wrong answer.
    looped = run.rows[3]
    limit = samples[("loop", 1)].limit
    assert limit is not None and limit.type == "message"
    assert (looped.passed, looped.failure_class, looped.stopped) == (
        False, "over_budget", "turn_limit",
    )  # fmt: skip
    assert looped.error == "message limit 8 exceeded"
    stop = run.records(looped)[-2]
    assert stop == {"type": "stop", "reason": "turn_limit", "detail": "message limit 8 exceeded"}


def test_compare_pairs_an_inspect_log_with_an_agent_eval_run(
    inspect_run: InspectRun, our_run: Path, cli: Cli
) -> None:
    done = cli("compare", str(inspect_run.log), str(our_run), "--format", "json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    changes = {t["task_id"]: (t["a"], t["b"], t["change"]) for t in result["per_task"]}
    assert changes == {
        "sum": ("2/2", "2/2", "same"),
        "capital": ("2/2", "0/2", "worse"),
        "eight": ("0/2", "2/2", "better"),
        "loop": ("0/2", "0/2", "same"),
    }
    assert result["suite_changed"] is False
    assert result["verdict"]
    text = cli("compare", str(our_run), str(inspect_run.log))
    assert text.returncode == 0 and re.search(r"tasks paired\s+│ 4 ", text.stdout), text.stdout


def test_compare_refuses_different_tasks_and_names_them(
    inspect_run: InspectRun, our_run: Path, cli: Cli, tmp_path: Path
) -> None:
    document = json.loads(our_run.read_text())
    document["results"] = [r for r in document["results"] if r["id"] != "eight"]
    for row in document["results"]:
        if row["id"] == "sum":
            row["id"] = "sum-2"
    fewer = tmp_path / "fewer.json"
    fewer.write_text(json.dumps(document))
    done = cli("compare", str(inspect_run.log), str(fewer))
    assert done.returncode == 1
    assert done.stderr.startswith("Error: compare ") and done.stderr.count("\n") == 1
    assert "only in A: sum, eight" in done.stderr and "only in B: sum-2" in done.stderr
    assert "--allow-suite-change" in done.stderr
    allowed = cli("compare", str(inspect_run.log), str(fewer), "--allow-suite-change",
                  "--format", "json")  # fmt: skip
    assert allowed.returncode == 0, allowed.stderr
    paired = json.loads(allowed.stdout)
    assert paired["suite_changed"] is True
    assert [t["task_id"] for t in paired["per_task"]] == ["capital", "loop"]


def test_multi_run_report_mixes_harnesses(inspect_run: InspectRun, our_run: Path, cli: Cli) -> None:
    done = cli("report", str(our_run), str(inspect_run.log), "--format", "json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert [c["attempts"] for c in document["configurations"]] == [8, 8]
    assert len(document["verdicts"]) == 1


def test_export_to_inspect_loads_in_inspects_reader(
    our_run: Path, cli: Cli, tmp_path: Path
) -> None:
    out = tmp_path / "ours.eval"
    done = cli("export", str(our_run), "--format", "inspect", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"8 attempts written to {out} (Inspect AI log)\n"
    log = read_eval_log(str(out))  # validates every sample against Inspect's models
    ours = load_run(our_run)
    samples = {(s.id, s.epoch): s for s in log.samples or []}
    assert len(samples) == len(ours.rows) == 8
    for row in ours.rows:
        sample = samples[(row.id, row.attempt)]
        score = sample.scores["agent_eval"] if sample.scores else None
        assert score is not None and score.value == ("C" if row.passed else "I")
        usage = sample.model_usage[log.eval.model]
        assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (
            row.prompt_tokens, row.completion_tokens, row.tokens,
        )  # fmt: skip
        assert sample.messages[0].text == sample.input
    accuracy = log.results.scores[0].metrics["accuracy"].value if log.results else None
    assert accuracy == pytest.approx(sum(r.passed for r in ours.rows) / 8)
    back = load_run(out)
    assert sorted((r.id, r.attempt, r.passed, r.tokens, r.steps) for r in back.rows) == sorted(
        (r.id, r.attempt, r.passed, r.tokens, r.steps) for r in ours.rows
    )
    as_json = tmp_path / "ours.json"
    assert cli("export", str(our_run), "--format", "inspect", "--out", str(as_json)).returncode == 0
    assert read_eval_log(str(as_json)).eval.model == log.eval.model
    assert len(load_runs(as_json)[0].rows) == 8


def test_inspect_log_round_trips_through_export(
    inspect_run: InspectRun, cli: Cli, tmp_path: Path
) -> None:
    out = tmp_path / "again.eval"
    assert (
        cli("export", str(inspect_run.log), "--format", "inspect", "--out", str(out)).returncode
        == 0
    )
    first, again = load_run(inspect_run.log), load_run(out)

    def fields(row: Any) -> tuple[Any, ...]:
        return (row.id, row.attempt, row.passed, row.tokens, row.steps)

    assert [fields(r) for r in again.rows] == [fields(r) for r in first.rows]


def test_bad_inputs_get_one_error_line(cli: Cli, tmp_path: Path) -> None:
    fake = tmp_path / "broken.eval"
    fake.write_bytes(b"not a zip file")
    done = cli("report", str(fake))
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"Error: Inspect AI log {fake}: cannot be read by Inspect AI")
    folder = tmp_path / "empty"
    folder.mkdir()
    done = cli("report", str(folder))
    assert done.returncode == 1
    assert done.stderr.startswith(f"Error: {folder}: a folder holding no run")
    done = cli("export", str(fake), "--format", "inspect", "--out", str(tmp_path / "x.txt"))
    assert done.returncode == 1 and done.stderr.startswith("Error: ")


@pytest.mark.parametrize(("module", "path", "extra"), [
    ("inspect_ai", "run.eval", "inspect"),
    ("atif", "atif-folder", "harbor"),
])  # fmt: skip
def test_without_the_extra_the_error_says_how_to_install_it(
    module: str, path: str, extra: str, inspect_run: InspectRun, tmp_path: Path, cli: Cli
) -> None:
    target = tmp_path / path
    if path.endswith(".eval"):
        target.write_bytes(inspect_run.log.read_bytes())
    else:
        assert (
            cli("export", str(inspect_run.log), "--format", "atif", "--out", str(target)).returncode
            == 0
        )
    # A Python where the package cannot be imported, as on a machine without the extra.
    program = (
        f"import sys; sys.modules[{module!r}] = None; sys.argv = ['agent-eval', 'report', "
        f"{str(target)!r}]; from agent_eval.cli import main; sys.exit(main())"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert (
        done.stderr.startswith(f"Error: {target}: ")
        and f"pip install -e '.[{extra}]'" in done.stderr
    )


def test_history_lists_runs_of_every_harness(
    inspect_run: InspectRun, our_run: Path, cli: Cli, tmp_path: Path
) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "arith.eval").write_bytes(inspect_run.log.read_bytes())
    (folder / "report.json").write_text('{"summary": {}}')  # not a run: left out
    assert (
        cli("export", str(our_run), "--format", "atif", "--out", str(folder / "atif")).returncode
        == 0
    )
    done = cli("history", str(folder), str(our_run), "--format", "json")
    assert done.returncode == 0, done.stderr
    history = json.loads(done.stdout)
    listed = sorted((r["scaffold"], r["attempts"], r["passed"]) for r in history["runs"])
    assert listed == [("minimal", 8, 4), ("minimal", 8, 4), ("use_tools+generate", 8, 4)]
    assert history["problems"] == []
    both = cli("report", str(folder), "--format", "json")
    assert both.returncode == 0, both.stderr
    assert len(json.loads(both.stdout)["configurations"]) == 2
    text = cli("history", str(inspect_run.log))
    assert (
        text.returncode == 0 and text.stdout.startswith("1 run(s) in ") and "(4/8)" in text.stdout
    )
    neither = cli("history")
    assert neither.returncode == 1 and neither.stderr.startswith("Error: history: give either")


def test_inspect_view_serves_an_exported_run(our_run: Path, cli: Cli, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    out = logs / "2026-01-02T03-04-05+00-00_arith_ours.eval"
    assert cli("export", str(our_run), "--format", "inspect", "--out", str(out)).returncode == 0
    with socket.socket() as probe:  # Inspect's viewer takes no port 0: find a free one
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    inspect = str(Path(sys.executable).parent / "inspect")
    viewer = subprocess.Popen(
        [inspect, "view", "start", "--log-dir", str(logs), "--host", "127.0.0.1",
         "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            try:
                listed = httpx.get(f"{base}/api/logs", timeout=10).json()
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "inspect view did not start"
                time.sleep(0.5)
        uri = f"file://{out.resolve()}"  # as Inspect names it: a '+' left as it is
        assert [f["name"] for f in listed["files"]] == [uri]
        log = httpx.get(f"{base}/api/logs/{quote(uri, safe='')}", timeout=60).json()
        assert log["status"] == "success" and len(log["samples"]) == 8
        assert log["results"]["scores"][0]["metrics"]["accuracy"]["value"] == 0.5
    finally:
        viewer.terminate()
        viewer.wait(timeout=30)


CRASHING_TASK = '''
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import tool


@tool
def add():
    async def execute(x: int, y: int) -> int:
        """Add two numbers.

        Args:
            x: The first number.
            y: The second number.
        """
        raise RuntimeError("the adding machine broke")

    return execute


@task
def crash():
    return Task(
        dataset=[Sample(id="sum", input="What is 2 plus 3?", target="5"),
                 Sample(id="capital", input="What is the capital of France?", target="Paris")],
        solver=[use_tools(add()), generate()],
        scorer=includes(),
    )
'''


def test_a_sample_error_is_an_agent_error(mock_model: Any, tmp_path: Path, cli: Cli) -> None:
    from tests.interop.conftest import INSPECT_SCRIPT

    (tmp_path / "task.py").write_text(CRASHING_TASK, encoding="utf-8")
    server = mock_model(INSPECT_SCRIPT)
    env = {**os.environ, "MOCK_API_KEY": "not-a-key", "MOCK_BASE_URL": server.base_url}
    inspect = str(Path(sys.executable).parent / "inspect")
    done = subprocess.run(
        [inspect, "eval", "task.py", "--model", "openai-api/mock/mock", "--log-dir", "logs",
         "--display", "plain", "--no-fail-on-error"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    log = next((tmp_path / "logs").glob("*.eval"))
    samples = {s.id: s for s in read_eval_log(str(log)).samples or []}
    assert samples["sum"].error is not None and samples["capital"].error is None
    run = load_run(log)
    rows = {row.id: row for row in run.rows}
    crashed = rows["sum"]
    assert (crashed.passed, crashed.failure_class, crashed.stopped) == (
        False, "agent_error", "agent_error",
    )  # fmt: skip
    assert crashed.error is not None and "the adding machine broke" in crashed.error
    assert rows["capital"].failure_class == "passed"
    report = cli("report", str(log), "--format", "json")
    assert json.loads(report.stdout)["summary"]["failure_classes"] == {
        "passed": 1, "agent_error": 1,
    }  # fmt: skip
