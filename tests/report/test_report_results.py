"""Loading results files: one clear error per kind of damage, per-task figures from rows."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_eval.errors import ResultsError
from agent_eval.report import load_results, summarise_run


def _write(tmp_path: Path, document: Any) -> Path:
    path = tmp_path / "r.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.json"
    with pytest.raises(ResultsError) as info:
        load_results(path)
    assert str(info.value) == (
        f"results file {path}: not found (give the --out file of 'agent-eval run')"
    )


def test_garbled_file(tmp_path: Path) -> None:
    path = _write(tmp_path, '{"schema": 1, "run": {')
    with pytest.raises(
        ResultsError,
        match=r"not valid JSON at line 1 column 23 \(the file is "
        r"damaged or truncated; re-run or restore it\)",
    ):
        load_results(path)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: [1, 2], "expected a JSON object with 'run' and 'results'"),
        (lambda d: {**d, "schema": 7}, "schema 7 is newer than this agent-eval reads"),
        (lambda d: {**d, "run": None}, "'run' must be an object"),
        (lambda d: {**d, "run": {**d["run"], "run_id": None}}, "run.run_id: Input should be"),
        (
            lambda d: {**d, "run": {**d["run"], "repeats": "three"}},
            "run.repeats: Input should be a valid integer",
        ),
        (
            lambda d: {**d, "run": {**d["run"], "sweet_hash": "a"}},
            "run.sweet_hash: Extra inputs are not permitted",
        ),
        (lambda d: {**d, "results": {}}, "'results' must be a list"),
        (lambda d: {**d, "results": [{**d["results"][0], "pased": True}]}, r"results\[0\]\.pased"),
        (
            lambda d: {**d, "results": [{**d["results"][0], "failure_class": "oops"}]},
            r"results\[0\]\.failure_class: .* \(fix or remove that row\)",
        ),
    ],
)
def test_invalid_documents(
    tmp_path: Path,
    make_results: Callable[..., Path],
    mutate: Callable[[dict[str, Any]], Any],
    message: str,
) -> None:
    document = json.loads(make_results({"t1": [True]}).read_text())
    path = _write(tmp_path, mutate(document))
    with pytest.raises(ResultsError, match=message) as info:
        load_results(path)
    assert str(info.value).startswith(f"results file {path}: ")
    assert "\n" not in str(info.value)


def test_per_task_is_recomputed_from_rows(make_results: Callable[..., Path]) -> None:
    # The fixture stores attempts=99 in per_task; the report must ignore that.
    results = load_results(make_results({"b": [True, False], "a": [False, False, True]}))
    tasks = results.tasks
    assert [(t.task_id, t.attempts, t.passes) for t in tasks] == [("b", 2, 1), ("a", 3, 1)]
    rows = summarise_run(results)["per_task"]
    assert [(r["task_id"], r["attempts"], r["successes"]) for r in rows] == [
        ("b", 2, 1),
        ("a", 3, 1),
    ]


def test_trajectory_is_read_relative_to_the_results_file(
    tmp_path: Path, make_results: Callable[..., Path]
) -> None:
    (tmp_path / "traj").mkdir()
    (tmp_path / "traj" / "t1.jsonl").write_text('{"meta": {}}\n' + "x" * 50)
    path = make_results(
        {"t1": [True], "t2": [True]},
        row_extra={
            "t1": {"trajectory_file": "traj/t1.jsonl"},
            "t2": {"trajectory_file": "traj/gone.jsonl"},
        },
    )
    results = load_results(path)
    first, second = (task.rows[0] for task in results.tasks)
    assert results.trajectory_text(first) == '{"meta": {}}\n' + "x" * 50
    assert results.trajectory_text(first, limit=5) == '{"met\n[... truncated]'
    assert results.trajectory_text(second) is None


def _runner_layout(tmp_path: Path, document: dict[str, Any], name: str = "runner.json") -> Path:
    """The document as the runner writes it: the header indented, then one row per line."""
    from agent_eval.results import ResultsHead, write_results

    path = tmp_path / name
    head = ResultsHead.model_validate({k: v for k, v in document.items() if k != "results"})
    rows = [json.dumps(row, ensure_ascii=False).encode() for row in document["results"]]
    write_results(path, head, rows)
    return path


def test_every_layout_loads_the_same(tmp_path: Path, make_results: Callable[..., Path]) -> None:
    one_line = make_results(
        {"t1": [True, "infra_error"], "t2": [False, True, True]},
        row_extra={"t2": {"answer": "réponse <b>4000</b>\u2028", "changed_files": ["M a.md"]}},
    )
    document = json.loads(one_line.read_text())
    runner = _runner_layout(tmp_path, document)
    indented = _write(tmp_path, json.dumps(document, indent=2))
    assert runner.read_bytes().count(b'\n    {"id"') == 5
    loaded = [load_results(path) for path in (one_line, runner, indented)]
    assert loaded[0].rows == loaded[1].rows == loaded[2].rows
    assert loaded[0].run == loaded[1].run == loaded[2].run
    assert loaded[1].rows[2].answer == "réponse <b>4000</b>\u2028"


def test_runner_layout_problems_are_named_like_any_other(
    tmp_path: Path, make_results: Callable[..., Path]
) -> None:
    document = json.loads(make_results({"t1": [True, False]}).read_text())
    document["results"][1]["failure_class"] = "oops"
    path = _runner_layout(tmp_path, document)
    with pytest.raises(ResultsError, match=r"results\[1\]\.failure_class: .* \(fix or remove "):
        load_results(path)
    document["results"][1]["failure_class"] = "wrong_answer"
    path = _runner_layout(tmp_path, document)
    path.write_bytes(path.read_bytes().replace(b"answer to t1", b"answer \xff t1", 1))
    with pytest.raises(ResultsError, match=r"cannot be read \('utf-8' codec can't decode"):
        load_results(path)
