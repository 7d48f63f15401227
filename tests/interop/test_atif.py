"""ATIF out and back: every exported file passes Harbor's own validator, and the files
read back give the same run."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.interop.conftest import InspectRun

from agent_eval.interop import ForeignRun, load_run

Cli = Callable[..., subprocess.CompletedProcess[str]]
Validator = Callable[[Path], list[str]]


def _verdicts(path: Path) -> list[tuple[str, int, bool, int, int | None, int]]:
    run = load_run(path)
    return sorted((r.id, r.attempt, r.passed, r.tokens, r.prompt_tokens, r.steps) for r in run.rows)


def test_our_run_exports_one_valid_atif_file_per_attempt(
    our_run: Path, cli: Cli, tmp_path: Path, harbor_validator: Validator
) -> None:
    out = tmp_path / "atif"
    done = cli("export", str(our_run), "--format", "atif", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"8 attempts written to {out} (one ATIF file each)\n"
    files = sorted(out.glob("*.json"))
    assert [f.name for f in files] == sorted(
        f"{task}-r{n}.json" for task in ("sum", "capital", "eight", "loop") for n in (1, 2)
    )
    for file in files:
        assert harbor_validator(file) == [], file
    document = json.loads(files[0].read_text())
    assert document["agent"] == {"name": "minimal", "version": document["agent"]["version"],
                                 "model_name": "mock"}  # fmt: skip
    assert document["steps"][0]["source"] == "user"
    assert document["steps"][1]["source"] == "agent"


def test_atif_read_back_is_the_same_run(our_run: Path, cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "atif"
    assert cli("export", str(our_run), "--format", "atif", "--out", str(out)).returncode == 0
    assert _verdicts(out) == _verdicts(our_run)
    back = load_run(out)
    assert isinstance(back, ForeignRun) and back.run.suite_hash == load_run(our_run).run.suite_hash
    report = cli("report", str(out), "--format", "json")
    assert report.returncode == 0, report.stderr
    summary = json.loads(report.stdout)["summary"]
    assert (summary["attempts"], summary["passed"]) == (8, 4)
    # The same suite on both sides: compare pairs them without --allow-suite-change.
    paired = cli("compare", str(our_run), str(out), "--format", "json")
    assert paired.returncode == 0, paired.stderr
    assert json.loads(paired.stdout)["suite_changed"] is False


def test_an_inspect_log_exports_to_valid_atif_with_its_tool_calls(
    inspect_run: InspectRun, cli: Cli, tmp_path: Path, harbor_validator: Validator
) -> None:
    out = tmp_path / "from-inspect"
    assert (
        cli("export", str(inspect_run.log), "--format", "atif", "--out", str(out)).returncode == 0
    )
    for file in out.glob("*.json"):
        assert harbor_validator(file) == [], file
    document = json.loads((out / "sum-r1.json").read_text())
    agent_steps = [s for s in document["steps"] if s["source"] == "agent"]
    call = agent_steps[0]["tool_calls"][0]
    assert (call["function_name"], call["arguments"]) == ("add", {"x": 2, "y": 3})
    result = agent_steps[0]["observation"]["results"][0]
    assert (result["source_call_id"], result["content"]) == (call["tool_call_id"], "5")
    assert _verdicts(out) == _verdicts(inspect_run.log)
    records = load_run(out)
    assert isinstance(records, ForeignRun)
    first_sum = next(r for r in records.rows if (r.id, r.attempt) == ("sum", 1))
    tools = [r for r in records.records(first_sum) if r.get("type") == "tool"]
    assert [(t["tool"], t["args"], t["result"]) for t in tools] == [("add", {"x": 2, "y": 3}, "5")]


def test_harbors_validator_rejects_what_we_refuse(
    cli: Cli, tmp_path: Path, harbor_validator: Validator
) -> None:
    """A near miss: an ATIF file whose step ids skip is invalid for Harbor and for us."""
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({
        "schema_version": "ATIF-v1.6", "agent": {"name": "a", "version": "1"},
        "steps": [{"step_id": 2, "source": "user", "message": "hi"}],
        "extra": {"agent_eval": {"task_id": "t", "passed": True}},
    }))  # fmt: skip
    assert harbor_validator(bad) != []
    done = cli("report", str(bad))
    assert done.returncode == 1 and done.stderr.startswith(f"Error: ATIF file {bad}: ")
    assert done.stderr.count("\n") == 1


def test_an_atif_file_without_a_verdict_is_refused(cli: Cli, tmp_path: Path) -> None:
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({
        "schema_version": "ATIF-v1.6", "agent": {"name": "a", "version": "1"},
        "steps": [{"step_id": 1, "source": "user", "message": "hi"}],
    }))  # fmt: skip
    done = cli("report", str(plain))
    assert done.returncode == 1 and "records no verdict" in done.stderr


def test_a_harbor_job_folder_loads_with_verdicts_from_the_verifier_reward(
    our_run: Path, cli: Cli, tmp_path: Path, harbor_python: str
) -> None:
    atif = tmp_path / "atif"
    assert cli("export", str(our_run), "--format", "atif", "--out", str(atif)).returncode == 0
    job = tmp_path / "job-2026-01-02"
    maker = Path(__file__).with_name("harbor_job.py")
    made = subprocess.run([harbor_python, str(maker), str(atif), str(job)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert "agent_eval" not in (next(job.glob("*/agent/trajectory.json"))).read_text()
    run = load_run(job)
    ours = load_run(our_run)
    assert sorted((r.id, r.attempt, r.passed) for r in run.rows) == sorted(
        (r.id, r.attempt, r.passed) for r in ours.rows
    )
    assert (run.run.scaffold, run.run.model, run.run.task_set) == ("minimal", "mock", job.name)
    assert {r.seconds for r in run.rows} == {12.0}  # the agent's execution, not the trial's
    assert {r.prompt_tokens for r in run.rows} == {r.prompt_tokens for r in ours.rows}
    failed = next(r for r in run.rows if not r.passed)
    assert failed.failure_class == "wrong_answer" and failed.error == "verifier reward 0"
    report = cli("report", str(job), "--format", "json")
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["summary"]["passed"] == 4
    # Harbor's tasks carry no expected outcome here: compare pairs by task id alone.
    paired = cli("compare", str(our_run), str(job), "--format", "json")
    assert paired.returncode == 0, paired.stderr
    assert {t["change"] for t in json.loads(paired.stdout)["per_task"]} == {"same"}


def test_an_unwritable_out_is_one_error_line(our_run: Path, cli: Cli, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    for fmt, out in (("atif", blocker / "atif"), ("inspect", blocker / "r.eval"),
                     ("atif", blocker), ("inspect", tmp_path / "r.txt")):  # fmt: skip
        done = cli("export", str(our_run), "--format", fmt, "--out", str(out))
        assert done.returncode == 1, (fmt, out, done.stdout)
        assert (
            done.stderr.startswith(f"Error: export --out {out}: ") and done.stderr.count("\n") == 1
        )
