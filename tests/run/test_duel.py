"""`agent-eval duel` end to end with deterministic agents: each way it stops, its files,
its input errors, and Ctrl-C then --resume losing nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from agent_eval.results import load_results

AGENT = """
import time
from pathlib import Path
SCAFFOLD_NAME = "styled"
def run_task(task, options):
    with Path(__file__).with_name("calls.log").open("a") as log:
        log.write(f"{options['style']} {options['task_id']} {options['attempt']}\\n")
    gate = options.get("gate")
    if gate and options["attempt"] == 2 and options["task_id"] == "t1":
        Path(gate + ".started").touch()
        deadline = time.monotonic() + 60
        while not Path(gate).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    good = options["style"] == "good" or int(options["task_id"][1:]) < 2
    return {"answer": "yes" if good else "no", "steps": 1, "tokens": 10}
"""
A_BAD, B_GOOD = "styled.py --option style=bad", "styled.py --option style=good"
SUMMARY_KEYS = ["decision", "rounds", "attempts", "difference", "interval", "alpha", "margin",
                "fixed_design_attempts", "projected_rounds", "stopped", "results"]  # fmt: skip


def tasks(count: int) -> list[dict[str, object]]:
    return [{"id": f"t{i}", "task": "Ready?", "expect_in_answer": ["yes"]} for i in range(count)]


def duel_args(a: str, b: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "agent_eval", "duel", "--tasks", "suite.json", "--a", a,
            "--b", b, *extra]  # fmt: skip


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=300,
                          env=env)  # fmt: skip


def test_a_clearly_better_b_wins_in_few_rounds_and_each_side_is_an_ordinary_run(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    write_suite(tasks(15))
    write_agent(AGENT, "styled.py")
    done = cli(tmp_path, *duel_args(A_BAD, B_GOOD, "--format", "json", "--labbook", "lab.jsonl"))
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert list(summary) == SUMMARY_KEYS
    # A passes 2 of 15 and B all 15. At 15 attempts the stake is 0.842, and against
    # d = 0 each of the 13 wins multiplies the wealth by 1.421: ln-wealth 13 x 0.351 =
    # 4.57 > ln 40 = 3.69, so 0 is out of the interval after one round.
    assert summary["decision"] == "b_better"
    assert summary["rounds"] == 1 and summary["attempts"] == 30
    assert summary["difference"] == 13 / 15
    assert 0 < summary["interval"][0] < 13 / 15 < summary["interval"][1] <= 1
    assert summary["stopped"] == "decided"
    assert summary["fixed_design_attempts"] is None  # no attempt varied: nothing to plan from
    assert "round  1  A 2/15  B 15/15  difference +0.867" in done.stderr
    for side, passed in (("a", 2), ("b", 15)):
        run = load_results(tmp_path / f"duel-{side}.json")
        assert run.run.repeats == 1 and len(run.rows) == 15
        assert sum(row.passed for row in run.rows) == passed
        assert all((tmp_path / row.trajectory_file).exists() for row in run.rows)
    book = [json.loads(line) for line in (tmp_path / "lab.jsonl").read_text().splitlines()]
    assert [(entry["options"]["style"], entry["repeats"]) for entry in book] == [
        ("bad", 1), ("good", 1)]  # fmt: skip
    compared = cli(tmp_path, sys.executable, "-m", "agent_eval", "compare", "duel-a.json",
                   "duel-b.json", "--format", "json")  # fmt: skip
    assert json.loads(compared.stdout)["difference"] == summary["difference"]
    again = cli(tmp_path, *duel_args(A_BAD, B_GOOD))
    assert again.returncode == 1
    assert again.stderr == (
        "Error: --out duel.json: duel.json is there from an earlier duel; continue it with "
        "--resume duel.json, or choose another --out\n"
    )


def test_identical_sides_settle_on_no_difference_within_the_margin(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    write_suite(tasks(15))
    write_agent(AGENT, "styled.py")
    done = cli(tmp_path, *duel_args(A_BAD, A_BAD, "--margin", "0.3"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "decision      no difference larger than the margin" in lines
    assert "rounds        2 (60 attempts)" in lines
    assert "difference    +0.000  (B - A, mean over 15 tasks)" in lines
    assert json.loads((tmp_path / "duel.json").read_text())["decision"] == "no_difference"


def test_max_repeats_or_a_token_budget_leave_it_undecided_and_resume_extends_it(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    write_suite(tasks(4))
    write_agent(AGENT, "styled.py")
    first = cli(tmp_path, *duel_args(A_BAD, B_GOOD, "--max-repeats", "2", "--format", "json"))
    assert first.returncode == 2, first.stderr
    summary = json.loads(first.stdout)
    assert (summary["decision"], summary["stopped"], summary["rounds"]) == (
        "undecided", "max_repeats", 2)  # fmt: skip
    assert summary["interval"][0] < 0 < summary["interval"][1]
    # d = (0, 0, 1, 1) each round rejects 0 at round 5 (tests/score/test_sequential.py).
    assert summary["projected_rounds"] is not None and summary["projected_rounds"] > 2
    more = cli(tmp_path, sys.executable, "-m", "agent_eval", "duel", "--resume", "duel.json",
               "--max-repeats", "4", "--max-total-tokens", "300")  # fmt: skip
    assert more.returncode == 2, more.stderr
    assert "decision      undecided (token budget spent)" in more.stdout.splitlines()
    # 80 tokens a round: a third round (240) fits the budget of 300, a fourth would not.
    assert json.loads((tmp_path / "duel.json").read_text())["rounds"] == 3
    assert load_results(tmp_path / "duel-b.json").run.repeats == 3
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert len(calls) == len(set(calls)) == 2 * 4 * 3  # no attempt ran twice
    moved = cli(tmp_path, sys.executable, "-m", "agent_eval", "duel", "--resume", "duel.json",
                "--alpha", "0.1")  # fmt: skip
    assert (moved.returncode, moved.stderr) == (1, "Error: --alpha 0.1: this duel began with "
                                                   "0.05; changing it midway would void the "
                                                   "guarantee\n")  # fmt: skip


def test_bad_side_strings_get_one_line_errors_and_run_nothing(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    write_suite(tasks(2))
    write_agent(AGENT, "styled.py")
    cases = [
        (("styled.py --modle x", B_GOOD), "Error: --a 'styled.py --modle x': No such option"),
        (("--model x", B_GOOD), "Error: --a '--model x': start with the agent, e.g. --a "
         "'builtin:minimal --model local/answer'\n"),
        ((A_BAD, "styled.py --tasks other.json"), "Error: --b 'styled.py --tasks other.json': "
         "--tasks is not a side's flag: both sides share it; give it outside\n"),
        ((A_BAD, "styled.py --repeats 3"), "Error: --b 'styled.py --repeats 3': --repeats is "
         "not a side's flag: the duel sets it (--max-repeats)\n"),
        ((A_BAD, "missing.py"), "Error: side B: agent missing.py: no such file; check the path\n"),
    ]  # fmt: skip
    for (a, b), error in cases:
        done = cli(tmp_path, *duel_args(a, b))
        assert done.returncode == 1
        assert done.stderr.startswith(error) and done.stderr.count("\n") == 1, done.stderr
    assert not (tmp_path / "calls.log").exists()
    assert not (tmp_path / "duel.json").exists()


def test_ctrl_c_then_resume_loses_nothing_and_decides_as_an_uninterrupted_duel(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    write_suite(tasks(4))
    write_agent(AGENT, "styled.py")
    gate = tmp_path / "gate"
    slow_b = f"{B_GOOD} --option gate={gate}"
    whole = cli(tmp_path, *duel_args(A_BAD, B_GOOD, "--out", "whole.json", "--margin", "0"))
    assert whole.returncode == 0, whole.stderr
    (tmp_path / "calls.log").unlink()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    process = subprocess.Popen(
        duel_args(A_BAD, slow_b, "--margin", "0"), cwd=tmp_path, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    started = Path(f"{gate}.started")  # B's round 2 is under way
    deadline = time.monotonic() + 120
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.exists(), process.communicate(timeout=5)
    process.send_signal(signal.SIGINT)
    gate.write_text("go")  # the running attempt may finish; no new one starts
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "Error: interrupted; the attempts that finished were written. Continue with " \
        "agent-eval duel --resume duel.json" in stderr  # fmt: skip
    halted = json.loads((tmp_path / "duel.json").read_text())
    assert (halted["stopped"], halted["rounds"]) == ("interrupted", 1)
    assert (tmp_path / "duel-b.json.journal.jsonl").exists()
    resumed = cli(tmp_path, sys.executable, "-m", "agent_eval", "duel", "--resume", "duel.json")
    assert resumed.returncode == 0, resumed.stderr
    final, reference = (json.loads((tmp_path / name).read_text()) for name in
                        ("duel.json", "whole.json"))  # fmt: skip
    for key in ("decision", "rounds", "attempts", "difference", "interval", "passed"):
        assert final[key] == reference[key], key
    assert final["decision"] == "b_better" and final["rounds"] == 5
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert len(calls) == len(set(calls)) == 2 * 4 * 5, "an attempt that finished ran again"
    assert not (tmp_path / "duel-b.json.journal.jsonl").exists()
