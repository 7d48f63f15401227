"""The run's own edges: a full disk, a damaged journal line, a finished --out, a huge
diff and a suite whose checks are programs, each told in one clear line."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_eval.run.runner import execute, prepare
from agent_eval.run.settings import RunConfig
from agent_eval.score.snapshot import DIFF_CUT_MARK, MAX_WORKSPACE_DIFF_BYTES, workspace_diff

AGENT_EVAL = Path(sys.executable).with_name("agent-eval")

# Attempts of task "big" write a trajectory of about 300 kB; the others under 1 kB.
AGENT = """
def run_task(task, options):
    size = 300_000 if options["task_id"] == "big" else 10
    return {"answer": "ok", "steps": 1, "tokens": 1,
            "trajectory": [{"type": "model", "content": "x" * size}]}
"""
TASKS = [
    {"id": "small", "task": "q", "expect_in_answer": ["ok"]},
    {"id": "big", "task": "q", "expect_in_answer": ["ok"]},
]


def _run(args: list[str], cwd: Path, wrap: list[str] | None = None, **kw: Any) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    return subprocess.run([*(wrap or []), str(AGENT_EVAL), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=180, **kw)  # fmt: skip


def _resume_recovers(folder: Path, cwd: Path) -> None:
    """The journal kept every attempt that finished; --resume runs the rest, and the
    results hold all four attempts once each."""
    journal = folder / "r.json.journal.jsonl"
    kept = len(journal.read_text().splitlines()) - 1
    assert kept >= 1  # rows are attempt-major: the small task's first attempt at least
    again = _run(["run", "--agent", "agent.py", "--tasks", "suite.json", "--repeats", "2",
                  "--resume", str(folder / "r.json"), "--trajectory-dir", str(folder / "t")],
                 cwd)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert f"resumed: {kept} finished attempt(s) kept" in again.stderr
    rows = json.loads((folder / "r.json").read_text())["results"]
    assert sorted((r["id"], r["attempt"]) for r in rows) == [
        ("big", 1),
        ("big", 2),
        ("small", 1),
        ("small", 2),
    ]


@pytest.fixture
def edge_run(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> Path:
    write_suite(TASKS)
    write_agent(AGENT)
    return tmp_path


def _full_disk_error(stderr: str, folder: Path) -> None:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert "Traceback" not in stderr
    assert lines[-1].startswith("Error: "), stderr
    assert f"the journal {folder / 'r.json.journal.jsonl'} keeps every attempt" in lines[-1]
    assert f"--resume {folder / 'r.json'}" in lines[-1]


def test_a_file_size_limit_is_one_error_line_and_resume_recovers(edge_run: Path) -> None:
    """RLIMIT_FSIZE makes a write past the limit fail with EFBIG, as a full disk fails
    with ENOSPC: the same path through the harness, on any machine, without privileges."""
    out = edge_run / "out"
    out.mkdir()
    limit = 64 * 1024

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    run = _run(["run", "--agent", "agent.py", "--tasks", "suite.json", "--repeats", "2",
                "--out", str(out / "r.json"), "--trajectory-dir", str(out / "t")],
               edge_run, preexec_fn=small_files)  # fmt: skip
    assert run.returncode == 1, run.stderr
    _full_disk_error(run.stderr, out)
    assert "largest size this system allows (File too large)" in run.stderr
    _resume_recovers(out, edge_run)


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux unshare")
def test_a_full_disk_is_one_error_line_and_resume_recovers(edge_run: Path) -> None:
    """A real full disk: a 64 kB tmpfs, mounted in a user and mount namespace of the run's
    own (no privileges needed where the kernel allows unprivileged namespaces)."""
    out = edge_run / "out"
    out.mkdir()
    probe = subprocess.run(["unshare", "-rm", "mount", "-t", "tmpfs", "none", str(out)],
                           capture_output=True)  # fmt: skip
    if probe.returncode != 0:
        pytest.skip(f"no unprivileged tmpfs here: {probe.stderr.decode().strip()}")
    # the run, then a copy of what it left out of the namespace (the tmpfs goes with it)
    kept = edge_run / "kept"
    script = (
        f'mount -t tmpfs -o size=64k none {out} && "$@"; code=$?; cp -r {out} {kept}; exit $code'
    )
    run = _run(["run", "--agent", "agent.py", "--tasks", "suite.json", "--repeats", "2",
                "--out", str(out / "r.json"), "--trajectory-dir", str(out / "t")],
               edge_run, wrap=["unshare", "-rm", "sh", "-c", script, "sh"])  # fmt: skip
    assert run.returncode == 1, run.stderr
    _full_disk_error(run.stderr, out)
    assert "the disk is full (No space left on device)" in run.stderr
    shutil.rmtree(out)
    kept.rename(out)
    _resume_recovers(out, edge_run)


def test_a_damaged_journal_line_is_named_and_its_attempt_runs_again(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    config = RunConfig(agent=str(write_agent(AGENT)), tasks=str(write_suite(TASKS)),
                       repeats=2, trajectory_dir=tmp_path / "t", out=None)  # fmt: skip
    execute(prepare(config))  # no --out: the journal is what the run leaves
    journal = next((tmp_path / "t").glob("*.journal.jsonl"))
    lines = journal.read_text().splitlines(keepends=True)
    assert len(lines) == 5
    lines[2] = lines[2].replace('"passed":true', '"passed":"yes, really"')
    journal.write_text("".join(lines))
    run = _run(["run", "--agent", config.agent, "--tasks", config.tasks, "--repeats", "2",
                "--resume", str(journal), "--trajectory-dir", "t"], tmp_path)  # fmt: skip
    assert run.returncode == 0, run.stderr
    warning = (
        f"Warning: journal {journal}, line 3: damaged, not an attempt row; "
        f"the attempt it held is run again"
    )
    assert warning in run.stderr.splitlines()
    assert "resumed: 3 finished attempt(s) kept" in run.stderr
    assert run.stdout.count("  ok ") == 1  # the damaged line's attempt, run again


def test_a_finished_out_is_not_replaced_by_a_new_run(edge_run: Path) -> None:
    args = ["run", "--agent", "agent.py", "--tasks", "suite.json", "--out", "r.json"]
    assert _run(args, edge_run).returncode == 0
    before = (edge_run / "r.json").read_bytes()
    trajectories = sorted((edge_run / "trajectories").iterdir())
    again = _run(args, edge_run)
    assert again.returncode == 1
    assert again.stderr.splitlines() == [
        "Error: --out r.json: a finished run's results are there; add repeats to it with "
        "--resume r.json --repeats N, write elsewhere with another --out, or replace it "
        "with --overwrite"
    ]
    assert again.stdout == ""  # refused before any attempt ran
    assert (edge_run / "r.json").read_bytes() == before
    assert sorted((edge_run / "trajectories").iterdir()) == trajectories
    replaced = _run([*args, "--overwrite"], edge_run)
    assert replaced.returncode == 0, replaced.stderr
    assert (
        json.loads((edge_run / "r.json").read_text())["run"]["run_id"]
        != json.loads(before)["run"]["run_id"]
    )


def test_a_huge_workspace_diff_is_cut_with_a_marker(tmp_path: Path) -> None:
    source, workspace = tmp_path / "source", tmp_path / "workspace"
    source.mkdir()
    workspace.mkdir()
    line = "a line of text the agent wrote, long enough to add up quickly\n"
    for n in range(60):  # 60 files of about 100 kB: a 6 MB diff uncut
        (workspace / f"f{n:02}.txt").write_text(line * 1600)
    diff = workspace_diff(source, workspace)
    assert len(diff.encode()) <= MAX_WORKSPACE_DIFF_BYTES + 200
    last = diff.splitlines()[-1]
    shown = diff.count("+++ b/")
    assert 0 < shown < 60
    assert last == (
        f"{DIFF_CUT_MARK} at 2 MiB: {60 - shown} more changed file(s) not shown, "
        f"from f{shown:02}.txt"
    )
    small = tmp_path / "small"
    small.mkdir()
    (small / "x.txt").write_text("x\n")
    assert DIFF_CUT_MARK not in workspace_diff(source, small)


def test_a_suite_with_command_checks_says_it_runs_programs(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    check = ["python", "-c", "print('checked')"]
    write_suite([{"id": "t", "task": "q", "expect_state": [{"command": check}]},
                 {"id": "u", "task": "q", "expect_in_answer": ["ok"]}])  # fmt: skip
    write_agent(AGENT)
    note = (
        "Note: suite suite.json runs commands from its folder: 1 state "
        "check(s) are programs run after the agent; run only suites you trust "
        "(agent-eval validate lists them)"
    )
    validate = _run(["validate", "suite.json"], tmp_path)
    assert validate.returncode == 0, validate.stderr
    assert note in validate.stderr.splitlines()
    assert "  command  t: python -c 'print('\"'\"'checked'\"'\"')'" in validate.stdout
    run = _run(["run", "--agent", "agent.py", "--tasks", "suite.json"], tmp_path)
    assert run.stderr.splitlines().count(note) == 1
    only_u = _run(["run", "--agent", "agent.py", "--tasks", "suite.json", "--task-id", "u"],
                  tmp_path)  # fmt: skip
    assert "Note: suite" not in only_u.stderr  # no selected task runs a command
    audit = _run(["audit", "suite.json"], tmp_path)
    assert note in audit.stderr.splitlines()
    plain = write_suite([{"id": "u", "task": "q"}], name="plain.json")
    assert "runs commands" not in _run(["validate", str(plain)], tmp_path).stderr
