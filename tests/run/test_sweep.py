"""`agent-eval sweep MATRIX.toml` end to end: agents x models x options, one results
file per configuration, the closing report, and Ctrl-C resuming the whole sweep."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

AGENT = """
import time
from pathlib import Path
SCAFFOLD_NAME = "styled"
def run_task(task, options):
    if options["style"] == "slow":
        gate = Path(options["gate"])
        Path(str(gate) + ".started").touch()
        deadline = time.monotonic() + 60
        while not gate.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    good = options["style"] != "bad" and options["model"] == "big"
    return {"answer": "4000" if good else "no idea", "steps": 2, "tokens": 100}
"""
TASKS = [{"id": f"t{i}", "task": "Port?", "expect_in_answer": ["4000"]} for i in range(2)]


def matrix_text(styles: list[str], gate: Path) -> str:
    return f"""
[run]
tasks = "suite.json"
out_dir = "out"
concurrency = 1
cost_per_million = 2.0
options = {{ gate = "{gate}" }}

[matrix]
agents = ["styled.py"]
models = ["small", "big"]
options = {{ style = {json.dumps(styles)} }}
"""


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    return subprocess.run([sys.executable, "-m", "agent_eval", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300, env=env)  # fmt: skip


def test_a_sweep_runs_every_configuration_and_reports_across_them(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    write_suite(TASKS)
    write_agent(AGENT, "styled.py")
    (tmp_path / "m.toml").write_text(matrix_text(["good", "bad"], tmp_path / "gate"))
    done = cli("sweep", "m.toml", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    names = ["styled-small-style_good", "styled-small-style_bad", "styled-big-style_good",
             "styled-big-style_bad"]  # fmt: skip
    assert sorted(p.stem for p in (tmp_path / "out").glob("*.json")) == sorted(names)
    report = json.loads(done.stdout[done.stdout.index("{\n") :])
    rows = {row["name"]: row for row in report["configurations"]}
    assert list(rows) == names
    assert rows["styled-big-style_good"]["success"] == 1.0
    assert rows["styled-small-style_good"]["success"] == 0.0
    assert rows["styled-big-style_good"]["mean_cost"] == 100 * 2.0 / 1e6
    assert [v["name"] for v in report["verdicts"]] == names[1:]
    big = json.loads((tmp_path / "out" / "styled-big-style_bad.json").read_text())["run"]
    assert (big["model"], big["options"]["style"]) == ("big", "bad")
    assert "[1/4] styled-small-style_good" in done.stdout
    again = cli("sweep", "m.toml", cwd=tmp_path)
    assert again.returncode == 0
    assert again.stdout.count("finished earlier:") == 4
    bad = tmp_path / "bad.toml"
    bad.write_text(matrix_text(["good"], tmp_path / "gate").replace("models", "modles"))
    done = cli("sweep", "bad.toml", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith("Error: sweep bad.toml: matrix.models: Field required")


def test_ctrl_c_then_the_same_command_resumes_the_whole_sweep(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    write_suite(TASKS)
    write_agent(AGENT, "styled.py")
    gate = tmp_path / "gate"
    (tmp_path / "m.toml").write_text(matrix_text(["good", "slow"], gate))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "agent_eval", "sweep", "m.toml"], cwd=tmp_path, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    out = tmp_path / "out"
    first = out / "styled-small-style_good.json"
    slow_journal = out / "styled-small-style_slow.json.journal.jsonl"
    started = tmp_path / "gate.started"  # the slow configuration's first attempt is running
    deadline = time.monotonic() + 120
    while not (first.exists() and started.exists()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.exists(), process.communicate(timeout=5)
    process.send_signal(signal.SIGINT)
    gate.write_text("go")  # the running attempt may now finish; no new one starts
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "Run `agent-eval sweep m.toml` again to resume the sweep" in stderr
    assert not (out / "styled-big-style_good.json").exists()
    partial = json.loads((out / "styled-small-style_slow.json").read_text())["results"]
    assert len(partial) == 1
    resumed = cli("sweep", "m.toml", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    lines = resumed.stdout.splitlines()
    assert lines[0] == "[1/4] styled-small-style_good"
    assert lines[1].startswith("  finished earlier: ")
    assert "[2/4] styled-small-style_slow (resumed)" in lines
    assert "resumed" not in " ".join(x for x in lines if x.startswith("[3/4]"))
    final = json.loads((out / "styled-small-style_slow.json").read_text())["results"]
    assert [(r["id"], r["attempt"]) for r in final] == [("t0", 1), ("t1", 1)]
    assert not slow_journal.exists()
    every = ["styled-small-style_good", "styled-small-style_slow", "styled-big-style_good",
             "styled-big-style_slow"]  # fmt: skip
    assert sorted(p.stem for p in out.glob("*.json")) == sorted(every)
