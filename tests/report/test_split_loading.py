"""A results file loaded in two parts, the back by another process: the same run, and
the same errors, as loaded whole; and `report` gives the same text either way."""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_eval.errors import ResultsError
from agent_eval.report import load_results, render_report
from agent_eval.results import ResultsHead, load_back_rows, write_results

Invoke = Callable[..., tuple[int, str, str]]


def _runner_layout(tmp_path: Path, document: dict[str, Any]) -> Path:
    """The document as the runner writes it: the header indented, then one row per line."""
    path = tmp_path / "runner.json"
    head = ResultsHead.model_validate({k: v for k, v in document.items() if k != "results"})
    rows = [json.dumps(row, ensure_ascii=False).encode() for row in document["results"]]
    write_results(path, head, rows)
    return path


@pytest.fixture
def document(make_results: Callable[..., Path]) -> dict[str, Any]:
    outcomes = {f"t{i}": [True, False, "infra_error", True][: 1 + i % 4] for i in range(9)}
    extra = {"t2": {"answer": "réponse <b>4000</b>\u2028", "changed_files": ["M a.md"]}}
    loaded: dict[str, Any] = json.loads(make_results(outcomes, row_extra=extra).read_text())
    return loaded


def test_the_back_rows_and_the_front_make_the_whole_run(
    tmp_path: Path, document: dict[str, Any]
) -> None:
    path = _runner_layout(tmp_path, document)
    whole = load_results(path)
    back = load_back_rows(path)
    assert back is not None and 0 < len(back) < len(whole.rows)
    # As it crosses from the child: pickled, and rebuilt as the same named tuples.
    crossed = pickle.loads(pickle.dumps(back, pickle.HIGHEST_PROTOCOL))
    assert [type(row) for row in crossed] == [type(row) for row in back]
    split = load_results(path, lambda: crossed)
    assert split.rows == whole.rows and split.run == whole.run
    assert load_results(path, lambda: None).rows == whole.rows  # the child could not


def test_another_layout_has_no_back_rows(tmp_path: Path, document: dict[str, Any]) -> None:
    one_line = tmp_path / "one-line.json"
    one_line.write_text(json.dumps(document))
    assert load_back_rows(one_line) is None
    assert load_back_rows(tmp_path / "absent.json") is None


@pytest.mark.parametrize("row", [1, -1])
def test_an_invalid_row_in_either_part_is_named_as_before(
    tmp_path: Path, document: dict[str, Any], row: int
) -> None:
    document["results"][row]["failure_class"] = "oops"
    path = _runner_layout(tmp_path, document)
    with pytest.raises(ResultsError) as whole:
        load_results(path)
    with pytest.raises(ResultsError) as split:
        load_results(path, lambda: load_back_rows(path))
    assert str(split.value) == str(whole.value)
    index = row % len(document["results"])
    assert f"results[{index}].failure_class" in str(whole.value)


@pytest.mark.parametrize("fmt", ["text", "markdown", "junit", "html", "json"])
def test_report_prints_the_run_loaded_whole(
    agent_eval: Invoke, tmp_path: Path, document: dict[str, Any], fmt: str
) -> None:
    path = _runner_layout(tmp_path, document)
    code, out, err = agent_eval("report", path, "--format", fmt)
    assert (code, out, err) == (0, render_report(load_results(path), fmt), "")


def test_report_names_an_invalid_back_row(
    agent_eval: Invoke, tmp_path: Path, document: dict[str, Any]
) -> None:
    document["results"][-1]["steps"] = "many"
    path = _runner_layout(tmp_path, document)
    code, out, err = agent_eval("report", path)
    index = len(document["results"]) - 1
    assert (code, out) == (1, "")
    assert err.startswith(f"Error: results file {path}: results[{index}].steps: ")
