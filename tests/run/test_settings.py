"""A run's settings are built by one function, whatever gives them: `run`'s flags, a
sweep's `[run]` table, a duel side, the demo or the audit. The same settings given each
way build the same run, and a name that is no setting is refused by that name."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agent_eval.cli.duel import _side_flags, duel
from agent_eval.cli.runs import run, run_settings
from agent_eval.errors import ConfigError
from agent_eval.run.settings import RunConfig, build_settings
from agent_eval.workflows.sweep import load_sweep

SHARED = ["--tasks", "part26", "--only", "retrieval", "--cost-per-million", "0.5",
          "--max-cost-per-task", "1", "--no-preflight"]  # fmt: skip
SIDE = ["--model", "m", "--option", "tool_mode=json", "--option", "k=1", "--seed", "7",
        "--shuffle", "--timeout-per-task", "30", "--max-infra-retries", "1",
        "--concurrency", "2", "--notes", "hi"]  # fmt: skip
TABLE = """
[run]
tasks = "part26"
only = "retrieval"
cost_per_million = 0.5
max_cost_per_task = 1.0
repeats = 3
options = { tool_mode = "json", k = 1 }
seed = 7
shuffle = true
timeout_per_task = 30
max_infra_retries = 1
concurrency = 2
notes = "hi"
out_dir = "sweep-out"

[matrix]
agents = ["builtin:echo"]
models = ["m"]
"""


@pytest.fixture(autouse=True)
def _no_endpoint_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "AGENT_EVAL_SANDBOX"):
        monkeypatch.delenv(name, raising=False)


def from_flags(*argv: str) -> RunConfig:
    return build_settings(run_settings(run.make_context("run", list(argv)).params))


def from_duel_side(side: list[str], shared: list[str]) -> RunConfig:
    import shlex

    spec = shlex.join(["builtin:echo", *side])
    flags = duel.make_context("duel", [*shared, "--a", spec, "--b", spec]).params
    return build_settings(
        run_settings(_side_flags("a", spec, {**flags, "repeats": 1, "out": None, "resume": None}))
    )


def from_sweep(tmp_path: Path, table: str) -> RunConfig:
    (tmp_path / "m.toml").write_text(table, encoding="utf-8")
    (cell,) = load_sweep(tmp_path / "m.toml", None, None)
    return cell.config


def test_flags_a_sweep_table_and_a_duel_side_build_the_same_run(tmp_path: Path) -> None:
    flags = from_flags("--agent", "builtin:echo", "--repeats", "3", *SHARED, *SIDE)
    assert flags.options == {"tool_mode": "json", "k": "1"}
    assert flags.prices.per_million == 0.5 and flags.only == ("retrieval",)
    swept = from_sweep(tmp_path, TABLE)
    # what a sweep sets for each configuration itself: its files, and running again
    assert swept.out == Path("sweep-out/echo-m.json")
    assert replace(swept, out=None, trajectory_dir=flags.trajectory_dir, overwrite=False,
                   results_dir=flags.results_dir) == flags  # fmt: skip
    # a duel sets its sides' repeats: one a round
    assert from_duel_side(SIDE, SHARED) == replace(flags, repeats=1)


def test_a_duel_side_overrides_the_shared_flags_and_adds_its_options() -> None:
    side = from_duel_side(["--model", "other", "--option", "k=2"], [*SHARED, "--option", "k=1",
                          "--option", "shared=yes"])  # fmt: skip
    assert side.model == "other"
    assert side.options == {"k": "2", "shared": "yes"}


def test_a_sweep_table_and_the_flags_agree_on_option_text(tmp_path: Path) -> None:
    table = TABLE.replace("k = 1 }", "k = 1, on = true, ratio = 0.5 }")
    assert from_sweep(tmp_path, table).options == {"tool_mode": "json", "k": "1",
                                                   "on": "true", "ratio": "0.5"}  # fmt: skip


@pytest.mark.parametrize("name", ["bogus", "max_retries", "prices", "verbose"])
def test_a_name_that_is_no_setting_is_refused_by_its_name(name: str) -> None:
    with pytest.raises(ConfigError, match=rf"^audit: {name}: not a run setting"):
        build_settings({"agent": "builtin:echo", "tasks": "part26", name: 1}, "audit: ")


def test_an_unknown_sweep_key_names_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^sweep .*m\.toml: run\.repeets: not a run setting"):
        from_sweep(tmp_path, TABLE.replace("repeats = 3", "repeets = 3"))


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('agent = "builtin:minimal"', r"run\.agent: .*the sweep sets it \(\[matrix\] agents\)"),
        ('model = "m"', r"run\.model: .*\[matrix\] models"),
        ('out = "x.json"', r"run\.out: .*out_dir"),
        ('api_key = "sk-1"', r"run\.api_key: .*OPENAI_API_KEY"),
        ('repeats = "three"', r"run\.repeats: "),
        ("repeats = 0", r"run: --repeats 0: give 1 or more"),
        ('split = "train"', r"run: --split train: choose dev or test"),
        ("options = 3", r"run\.options: give a table"),
    ],
)
def test_a_sweep_key_it_cannot_take_names_the_key(tmp_path: Path, line: str, says: str) -> None:
    key = line.split(" = ")[0]
    kept = [old for old in TABLE.splitlines() if not old.startswith(f"{key} = ")]
    table = "\n".join(kept).replace("[run]", f"[run]\n{line}")
    with pytest.raises(ConfigError, match=says) as caught:
        from_sweep(tmp_path, table)
    assert "sk-1" not in str(caught.value)


def test_an_unknown_flag_in_a_duel_side_names_it() -> None:
    with pytest.raises(ConfigError, match=r"^--a 'builtin:echo --repeets 3': .*--repeets"):
        from_duel_side(["--repeets", "3"], SHARED)


def test_a_resumed_run_writes_where_it_resumes_from(tmp_path: Path) -> None:
    results = tmp_path / "r.json"
    results.write_text("{}", encoding="utf-8")
    config = from_flags("--agent", "builtin:echo", "--resume", str(results))
    assert config.out == results


def test_values_of_either_shape_build_the_same_run(tmp_path: Path) -> None:
    given: dict[str, Any] = {"agent": "a.py", "tasks": "part26", "workspace": str(tmp_path),
                             "task_ids": ["t1"], "options": ["k=v"]}  # fmt: skip
    same = {**given, "workspace": tmp_path, "task_ids": ("t1",), "options": {"k": "v"}}
    assert build_settings(given) == build_settings(same)
