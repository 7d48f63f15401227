"""`agent-eval report` black-box: every format, exact lines, the JSON contract, exit codes."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_eval.score import stats

Invoke = Callable[..., tuple[int, str, str]]

OUTCOMES = {
    "t1": [True, True, False],
    "t2": [False, "infra_error", False],
    "t3": [True, True, True],
}


@pytest.fixture
def results(make_results: Callable[..., Path]) -> Path:
    return make_results(
        OUTCOMES,
        categories={"t3": "tools"},
        row_extra={"t1": {"roles": {"router": 10, "answerer": 90}}},
    )


def test_json_contract(agent_eval: Invoke, results: Path) -> None:
    code, out, err = agent_eval("report", results, "--format", "json")
    assert (code, err) == (0, "")
    report = json.loads(out)
    s = report["summary"]
    assert s["success_rate"] == pytest.approx(5 / 9)
    assert s["wilson95"] == pytest.approx(list(stats.wilson_interval(5, 9)))
    assert s["task_mean"] == pytest.approx(5 / 9)
    means = [2 / 3, 0.0, 1.0]
    se = math.sqrt(sum((m - 5 / 9) ** 2 for m in means) / 2 / 3)
    assert s["task_se"] == pytest.approx(se)
    assert s["task_ci95"] == [0.0, 1.0]  # t on 2 df reaches past both ends; clipped
    assert s["pass_at_k"] == pytest.approx({"1": 5 / 9, "2": 2 / 3, "3": 2 / 3})
    assert s["pass_hat_k"] == pytest.approx({"1": 5 / 9, "2": 4 / 9, "3": 1 / 3})
    assert s["within_task_var"] == pytest.approx(1 / 9)
    assert s["between_task_var"] == pytest.approx(21 / 81 - 1 / 27)
    assert s["failure_classes"] == {"infra_error": 1, "passed": 5, "wrong_answer": 3}
    assert s["usable_success"] == {"rate": pytest.approx(5 / 9), "passed": 5, "attempts": 9}
    assert s["model_success"] == {"rate": pytest.approx(5 / 8), "passed": 5, "attempts": 8}
    assert s["unstable_tasks"] == ["t1"]
    assert s["tokens_by_role"] == {"answerer": 270, "router": 30}
    assert s["cost"] is None
    assert sorted(s["categories"]) == ["retrieval", "tools"]
    first = report["per_task"][0]
    assert first["task_id"] == "t1" and first["pass_at_k"] == pytest.approx(
        {"1": 2 / 3, "2": 1.0, "3": 1.0}
    )
    assert first["pass_hat_k"] == pytest.approx({"1": 2 / 3, "2": 1 / 3, "3": 0.0})


def test_between_task_var_is_null_with_one_attempt(
    agent_eval: Invoke, make_results: Callable[..., Path]
) -> None:
    code, out, _ = agent_eval(
        "report", make_results({"a": [True], "b": [False]}), "--format", "json"
    )
    s = json.loads(out)["summary"]
    assert code == 0 and s["within_task_var"] is None and s["between_task_var"] is None
    assert list(s["pass_at_k"]) == ["1"]


def test_text(agent_eval: Invoke, results: Path) -> None:
    code, out, err = agent_eval("report", results)
    lines = out.splitlines()
    assert (code, err) == (0, "")
    assert lines[:2] == [
        "builtin:minimal x local/chat: 3 task(s), 3 attempt(s) each",
        f"suite part26 1.0 (hash {'a' * 12}), run run-local/chat",
    ]
    for expected in [
        "│ success rate     │ 0.556  │ [0.267, 0.811] │ Wilson, 5 of 9 attempts        │",
        "│ pass^2           │ 0.444  │                │ SE 0.294                       │",
        "│ between-task var │ 0.2222 │                │ true differences between tasks │",
        "unstable tasks: t1",
        "│ tools     │ 1     │ 3/3    │ 1.000 │ [0.439, 1.000]        │",
        "usable success  0.556  (5 of 9 attempts, all counted)",
        "model success   0.625  (5 of 8 attempts, infra errors excluded)",
        "│ router   │     30 │",
        "tokens        10800 total, 1200.0 per attempt",
        "cost          not computed: no price was given (run with --cost-per-million, or "
        "input and output prices)",
        "infra errors are counted after up to 2 retries",
    ]:
        assert expected in lines


def test_text_with_price(agent_eval: Invoke, make_results: Callable[..., Path]) -> None:
    path = make_results({"a": [True, False]}, prices={"per_million": 2.0})
    code, out, _ = agent_eval("report", path)
    assert code == 0
    assert "cost          0.00460 total, 0.00230 per attempt (per_million=2.0)" in out.splitlines()


def test_markdown(agent_eval: Invoke, results: Path) -> None:
    code, out, _ = agent_eval("report", results, "--format", "markdown")
    lines = out.splitlines()
    assert code == 0
    assert lines[:3] == [
        "## builtin:minimal x local/chat",
        "",
        "Suite `part26` 1.0 · 3 task(s) · 3 attempt(s) each · run `run-local/chat`",
    ]
    assert "| success rate | 0.556 | [0.267, 0.811] | Wilson, 5 of 9 attempts |" in lines
    assert "| `t1` | retrieval | 2/3 | 0.67 | 5.0 | 1200 | r3: missing '4000' |" in lines
    assert "- unstable tasks: `t1`" in lines


def test_junit(agent_eval: Invoke, results: Path) -> None:
    code, out, _ = agent_eval("report", results, "--format", "junit")
    assert code == 0
    suite = ET.fromstring(out.split("\n", 1)[1])
    assert (suite.get("tests"), suite.get("failures")) == ("3", "2")
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert list(cases) == ["t1", "t2", "t3"]
    assert cases["t3"].find("failure") is None and cases["t3"].get("classname") == "tools"
    failure = cases["t1"].find("failure")
    assert failure is not None
    assert failure.get("message") == "1 of 3 attempt(s) failed: r3: missing '4000'"
    assert failure.text == (
        "r3: missing '4000' [wrong_answer] checks: missing=['4000'], "
        "tools_used=['search_documents'], passed=False"
    )
    t2 = cases["t2"].find("failure")
    assert t2 is not None and t2.get("type") == "infra_error,wrong_answer"


def test_junit_holds_what_an_agent_wrote_as_well_formed_xml(
    agent_eval: Invoke, make_results: Callable[..., Path]
) -> None:
    """An agent's error and a category with ESC, NUL and backspace in them: XML 1.0
    forbids those, so each is shown as U+FFFD and a dashboard can still parse the file."""
    results = make_results(
        {"t1": ["agent_error"]},
        categories={"t1": "cat\x00egory"},
        row_extra={"t1": {"error": "run_task raised RuntimeError: bad \x1b[2J \x08 end"}},
    )
    code, out, _ = agent_eval("report", results, "--format", "junit")
    assert code == 0
    case = ET.fromstring(out.split("\n", 1)[1]).find("testcase")
    assert case is not None and case.get("classname") == "cat\ufffdegory"
    failure = case.find("failure")
    assert failure is not None
    assert failure.get("message", "").endswith("RuntimeError: bad \ufffd[2J \ufffd end")


def test_out_writes_the_file(agent_eval: Invoke, results: Path, tmp_path: Path) -> None:
    target = tmp_path / "report.md"
    code, out, err = agent_eval("report", results, "--format", "markdown", "--out", target)
    assert (code, out, err) == (0, "", f"markdown report written to {target}\n")
    assert target.read_text().startswith("## builtin:minimal x local/chat\n")


def test_input_errors_exit_1(agent_eval: Invoke, results: Path, tmp_path: Path) -> None:
    missing = tmp_path / "none.json"
    assert agent_eval("report", missing) == (
        1,
        "",
        f"Error: results file {missing}: not found (give the --out file of 'agent-eval run')\n",
    )
    bad_out = tmp_path / "no-such-dir" / "r.html"
    code, out, err = agent_eval("report", results, "--out", bad_out)
    assert (code, out) == (1, "")
    assert err.startswith(f"Error: --out {bad_out}: cannot write the report (")
    code, _, err = agent_eval("report", results, "--format", "pdf")
    assert code == 1 and err.startswith("Error: Invalid value for '--format'")


def test_every_format_copes_with_no_attempt(
    agent_eval: Invoke, make_results: Callable[..., Path]
) -> None:
    path = make_results({})
    for fmt in ("text", "markdown", "junit", "html", "json"):
        code, out, err = agent_eval("report", path, "--format", fmt)
        assert (code, err) == (0, "") and out
    summary = json.loads(agent_eval("report", path, "--format", "json")[1])["summary"]
    assert summary["success_rate"] is None and summary["task_mean"] is None


def test_a_long_task_table_is_plain_aligned_text() -> None:
    from agent_eval.report.text import PLAIN_ABOVE, _tasks

    rows = [
        {"task_id": f"t{i:04d}", "category": "c", "successes": i % 3, "attempts": 2,
         "success_rate": (i % 3) / 2, "unstable": i % 3 == 1, "mean_steps": 2.0,
         "mean_tokens": 10.0 * i, "failures": ["r1: missing 'x'"] if i % 3 < 2 else []}
        for i in range(PLAIN_ABOVE + 1)
    ]  # fmt: skip
    text = _tasks(rows)
    assert isinstance(text, str)
    lines = text.splitlines()
    assert lines[0] == "Tasks"
    assert lines[1].split() == ["task", "category", "passed", "rate", "steps", "tokens",
                                "first", "failure"]  # fmt: skip
    assert lines[3] == "t0000  c         0/2     0.00               2.0       0  r1: missing 'x'"
    assert lines[4] == "t0001  c         1/2     0.50 (unstable)    2.0      10  r1: missing 'x'"
    assert len(lines) == 3 + PLAIN_ABOVE + 1


def test_many_changed_files_are_plain_aligned_text(
    agent_eval: Invoke, make_results: Callable[..., Path]
) -> None:
    from agent_eval.report.text import PLAIN_ABOVE

    ids = range(PLAIN_ABOVE + 1)
    outcomes = {f"t{i:03d}": [True] for i in ids}
    extra = {f"t{i:03d}": {"changed_files": ["M notes.md", f"A new-{i}.md"]} for i in ids}
    code, out, _ = agent_eval("report", make_results(outcomes, row_extra=extra))
    lines = out.splitlines()
    start = lines.index("Files changed")
    assert code == 0
    assert lines[start + 1 : start + 5] == [
        "attempt  files (A added, M modified, D deleted)",
        "-------  --------------------------------------",
        "t000 r1  M notes.md, A new-0.md",
        "t001 r1  M notes.md, A new-1.md",
    ]
    assert lines[start + 3 + PLAIN_ABOVE] == "t200 r1  M notes.md, A new-200.md"


def test_many_repeats_list_a_selection_of_k(
    agent_eval: Invoke, make_results: Callable[..., Path]
) -> None:
    path = make_results({"t1": [True, False] * 30, "t2": [True] * 60})
    note = (
        "pass@k and pass^k are shown for k = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 50, 60; "
        "the JSON report (--format json) has every k."
    )
    text = agent_eval("report", path)[1].splitlines()
    assert [line.split()[1] for line in text if line.startswith(("│ pass@", "│ pass^"))] == [
        *(f"pass@{k}" for k in [*range(1, 11), 20, 50, 60]),
        *(f"pass^{k}" for k in [*range(1, 11), 20, 50, 60]),
    ]
    assert note in text
    markdown = agent_eval("report", path, "--format", "markdown")[1].splitlines()
    assert [line.split()[1] for line in markdown if line.startswith("| pass")] == [
        *(f"pass@{k}" for k in [*range(1, 11), 20, 50, 60]),
        *(f"pass^{k}" for k in [*range(1, 11), 20, 50, 60]),
    ]
    assert note in markdown
    summary = json.loads(agent_eval("report", path, "--format", "json")[1])["summary"]
    assert list(summary["pass_at_k"]) == [str(k) for k in range(1, 61)]
