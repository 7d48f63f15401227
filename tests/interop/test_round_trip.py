"""Our run out to another harness's format and back: the same run, figure for figure."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log

from agent_eval.interop import load_run

Cli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.mark.parametrize(("fmt", "out"), [
    ("atif", "atif"),
    ("inspect", "varied.eval"),
    ("inspect", "varied-log.json"),
])  # fmt: skip
def test_an_exported_run_read_back_reports_every_figure_alike(
    fmt: str, out: str, varied_run: Path, cli: Cli, tmp_path: Path
) -> None:
    target = tmp_path / out
    done = cli("export", str(varied_run), "--format", fmt, "--out", str(target))
    assert done.returncode == 0, done.stderr
    original = cli("report", str(varied_run), "--format", "json")
    back = cli("report", str(target), "--format", "json")
    assert original.returncode == back.returncode == 0, back.stderr
    first, again = json.loads(original.stdout), json.loads(back.stdout)
    # The run has a figure of each kind, so that equality below says something.
    assert first["summary"]["failure_classes"] == {"passed": 2, "wrong_answer": 4,
                                                   "infra_error": 2}  # fmt: skip
    reasons = {t["id"]: t["first_failure_reason"] for t in first["per_task"]}
    assert reasons["capital"] == "r1: missing 'Paris'"
    assert reasons["notes"] == "r1: expected tool not used"
    assert "HTTP 503" in reasons["down"]
    assert first["summary"]["budgets"] is not None and first["summary"]["cost"] is not None
    assert again == first
    assert cli("report", str(target)).stdout == cli("report", str(varied_run)).stdout
    ours, read = load_run(varied_run), load_run(target)
    assert read.run.harness_version == ours.run.harness_version
    assert [r.check_record() for r in read.rows] == [r.check_record() for r in ours.rows]


def test_an_infra_error_is_a_sample_error_in_inspect(
    varied_run: Path, cli: Cli, tmp_path: Path
) -> None:
    """Inspect records an attempt its model endpoint stopped as a sample error, not as an
    incorrect answer: a reader of the log that knows nothing of ours tells them apart."""
    out = tmp_path / "varied.eval"
    assert cli("export", str(varied_run), "--format", "inspect", "--out", str(out)).returncode == 0
    samples = read_eval_log(str(out)).samples or []
    errored = {(s.id, s.epoch) for s in samples if s.error is not None}
    assert errored == {("down", 1), ("down", 2)}
    down = next(s for s in samples if s.id == "down")
    assert down.error is not None and "HTTP 503" in down.error.message
    assert not down.error.message.startswith("r1: ")
    wrong = next(s for s in samples if s.id == "capital")
    assert wrong.error is None and wrong.scores is not None
    assert (wrong.scores["agent_eval"].value, wrong.scores["agent_eval"].explanation) == (
        "I", "r1: missing 'Paris'",
    )  # fmt: skip
