"""The runner on a deterministic agent: every figure checked against hand computation."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_eval.errors import AgentLoadError, ConfigError
from agent_eval.results import AttemptResult
from agent_eval.run.observers import EachAttempt
from agent_eval.run.runner import execute, prepare
from agent_eval.run.settings import Prices, RunConfig

AGENT = """
SCAFFOLD_NAME = "scripted"
PLAN = {
    ("a", 1): ("yes", 2, 100), ("a", 2): ("no", 4, 300), ("a", 3): ("yes", 3, 200),
    ("b", 1): ("x", 5, 50), ("b", 2): ("x", 1, 10),
}
calls = []

def build(options):
    calls.append("build")

def run_task(task, options):
    key = (options["task_id"], options["attempt"])
    if key not in PLAN:
        raise RuntimeError("no plan for " + repr(key))
    answer, steps, tokens = PLAN[key]
    return {"answer": answer, "steps": steps, "tokens": tokens,
            "trajectory": [{"type": "tool", "tool": "read_file", "args": {"path": "f"}}]}

def close():
    calls.append("close")
"""

TASKS = [
    {"id": "a", "task": "Say yes.", "category": "one", "expect_in_answer": ["yes"]},
    {"id": "b", "task": "Say x.", "category": "two", "expect_in_answer": ["x"], "max_steps": 3},
]


@pytest.fixture
def config(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[[str], Path]
) -> RunConfig:
    return RunConfig(
        agent=str(write_agent(AGENT)),
        tasks=str(write_suite(TASKS)),
        repeats=3,
        out=tmp_path / "r.json",
        trajectory_dir=tmp_path / "traj",
        labbook=tmp_path / "lb.jsonl",
        prices=Prices(per_million=2.0),
        model="m/1",
    )


def test_figures_match_hand_computation(config: RunConfig) -> None:
    report = execute(prepare(config))
    doc = json.loads(config.out.read_text())  # type: ignore[union-attr]
    summary = doc["run"]["summary"]
    assert {
        k: summary[k]
        for k in (
            "runs",
            "passed",
            "success_rate",
            "mean_steps",
            "stdev_steps",
            "mean_tokens",
            "stdev_tokens",
            "total_tokens",
        )
    } == {
        "runs": 6,
        "passed": 3,
        "success_rate": 0.5,
        "mean_steps": 2.5,
        "stdev_steps": 1.71,
        "mean_tokens": 110.0,
        "stdev_tokens": 108.0,
        "total_tokens": 660,
    }
    assert summary["exact"]["stdev_steps"] == pytest.approx((17.5 / 6) ** 0.5)
    assert summary["cost_total"] == pytest.approx(660 * 2.0 / 1e6)
    assert summary["cost_per_task"] == pytest.approx(660 * 2.0 / 1e6 / 6)
    assert summary["failure_classes"] == {
        "agent_error": 1,
        "over_budget": 1,
        "passed": 3,
        "wrong_answer": 1,
    }
    a, b = doc["per_task"]
    assert {
        k: a[k]
        for k in (
            "attempts",
            "successes",
            "success_rate",
            "steps_min",
            "steps_max",
            "tokens_min",
            "tokens_max",
            "first_failure_reason",
        )
    } == {
        "attempts": 3,
        "successes": 2,
        "success_rate": 0.667,
        "steps_min": 2,
        "steps_max": 4,
        "tokens_min": 100,
        "tokens_max": 300,
        "first_failure_reason": "r2: missing 'yes'",
    }
    # As the course: the checks object of the first failed attempt.
    assert a["first_failure"] == doc["results"][2]["checks"]
    assert a["pass_hat_k"] == pytest.approx({"1": 2 / 3, "2": 1 / 3, "3": 0.0})
    assert (b["successes"], b["steps_min"], b["steps_max"]) == (1, 0, 5)
    assert b["first_failure_reason"] == "r1: 5 steps over the limit"
    assert b["first_failure"]["within_steps"] is False
    classes = [(r["id"], r["attempt"], r["failure_class"]) for r in doc["results"]]
    assert classes == [  # attempt-major, as the course writes rows
        ("a", 1, "passed"),
        ("b", 1, "over_budget"),
        ("a", 2, "wrong_answer"),
        ("b", 2, "passed"),
        ("a", 3, "passed"),
        ("b", 3, "agent_error"),
    ]
    crashed = doc["results"][5]
    assert crashed["error"] == "run_task raised RuntimeError: no plan for ('b', 3)"
    assert not report.all_passed


def test_run_record_and_labbook(config: RunConfig) -> None:
    from dataclasses import replace

    execute(prepare(config))
    execute(prepare(replace(config, overwrite=True)))
    lines = config.labbook.read_text().splitlines()  # type: ignore[union-attr]
    assert len(lines) == 2
    run = json.loads(lines[0])
    for key in (
        "lab",
        "run_id",
        "scaffold",
        "agent_entry_point",
        "task_set",
        "task_set_version",
        "model",
        "router_model",
        "quant",
        "engine",
        "engine_version",
        "base_url",
        "repeats",
        "host",
        "date",
        "wall_seconds",
        "notes",
        "summary",
        "suite_hash",
        "harness_version",
        "concurrency",
        "limits",
    ):
        assert key in run
    assert (run["scaffold"], run["task_set"], run["repeats"]) == ("scripted", "tiny", 3)


def test_trajectory_files(config: RunConfig) -> None:
    execute(prepare(config))
    files = sorted(config.trajectory_dir.iterdir())
    assert len(files) == 6
    assert all("-scripted-m_1-" in f.name for f in files)
    assert files[0].name.endswith("-a-r1.jsonl")
    lines = [json.loads(line) for line in files[0].read_text().splitlines()]
    meta = lines[0]["meta"]
    assert (meta["task_id"], meta["attempt"], meta["suite"]) == ("a", 1, "tiny")
    assert meta["suite_hash"].startswith("sha256:")
    assert lines[1] == {"type": "tool", "tool": "read_file", "args": {"path": "f"}}
    assert lines[-1]["type"] == "score"
    assert lines[-1]["passed"] is True
    assert lines[-1]["checks"]["tools_used"] == ["read_file"]


def test_workspace_is_fresh_for_every_attempt(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[[str], Path]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "note.md").write_text("original")
    agent = write_agent("""
        import os, pathlib
        def run_task(task, options):
            ws = pathlib.Path(options["workspace"])
            seen = sorted(p.name for p in ws.iterdir())
            text = (ws / "note.md").read_text()
            (ws / "note.md").unlink()
            (ws / "junk.txt").write_text("x")
            return {"answer": f"{seen} {text}", "steps": 1, "tokens": 1}
    """)
    suite = write_suite(
        [{"id": "t", "task": "look", "expect_in_answer": ["['note.md'] original"]}],
        workspace="docs",
    )
    config = RunConfig(
        agent=str(agent), tasks=str(suite), repeats=3, trajectory_dir=tmp_path / "traj"
    )
    report = execute(prepare(config))
    assert [row.passed for row in report.rows] == [True, True, True]
    assert sorted(p.name for p in docs.iterdir()) == ["note.md"]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("return 'text'", "run_task returned str, not a dict"),
        ("return {'answer': 'a', 'steps': 1}", "run_task's dict lacks tokens"),
        ("return {'answer': 5, 'steps': 1, 'tokens': 1}", "answer is int, not a string"),
        ("return {'answer': 'a', 'steps': 'many', 'tokens': 1}", "steps is 'many', not a whole"),
        ("return {'answer': 'a', 'steps': -1, 'tokens': 1}", "steps: Input should be greater"),
        ("return {'answer': 'a' * 200001, 'steps': 1, 'tokens': 1}", "answer has 200001 char"),
        (
            "return {'answer': 'a', 'steps': 1, 'tokens': 1, 'trajectory': [object()]}",
            "trajectory must be a list of JSON objects",
        ),
        (
            "return {'answer': 'a', 'steps': 1, 'tokens': 1, 'trajectory': [{'x': {1, 2}}]}",
            "trajectory is not JSON-serialisable",
        ),
        (
            "return {'answer': 'a', 'steps': 1, 'tokens': 1, 'trajectory': "
            "[{'type': 'model'}, {'type': 'score', 'passed': True}]}",
            "trajectory record 2 is a score record, which only the harness writes",
        ),
        ("import sys; sys.exit(3)", "run_task raised SystemExit: 3"),
        ("raise ValueError('bad')", "run_task raised ValueError: bad"),
    ],
)
def test_misbehaving_agent_is_an_agent_error_and_the_run_goes_on(
    tmp_path: Path,
    write_suite: Callable[..., Path],
    write_agent: Callable[[str], Path],
    body: str,
    reason: str,
) -> None:
    agent = write_agent(f"""
        def run_task(task, options):
            if options["task_id"] == "ok":
                return {{"answer": "fine", "steps": 1.0, "tokens": "7"}}
            {body}
    """)
    suite = write_suite([{"id": "bad", "task": "q"}, {"id": "ok", "task": "q"}])
    config = RunConfig(agent=str(agent), tasks=str(suite), trajectory_dir=tmp_path / "t")
    bad, ok = execute(prepare(config)).rows
    assert bad.failure_class == "agent_error"
    # The course's words for an entry point that raised; any other misbehaviour is ours.
    raised = reason.startswith("run_task raised ")
    course_stop = "entry point raised " + reason.removeprefix("run_task raised ")
    assert bad.stopped == (course_stop if raised else "agent_error")
    assert bad.error is not None and reason in bad.error
    assert (ok.passed, ok.steps, ok.tokens) == (True, 1, 7)


def test_an_agents_own_records_near_a_score_are_kept_and_the_score_stays_the_harnesss(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[[str], Path]
) -> None:
    """Records that only look like a verdict (a stop, a model reply with a score key, a
    type named like one) are the agent's own and are kept; the one score record in the
    file is the harness's, last."""
    records = [{"type": "model", "score": 0.9}, {"type": "score_note", "passed": True},
               {"type": "stop", "reason": "done"}]  # fmt: skip
    agent = write_agent(f"""
        def run_task(task, options):
            return {{"answer": "fine", "steps": 1, "tokens": 1, "trajectory": {records!r}}}
    """)
    suite = write_suite([{"id": "t", "task": "q", "expect_in_answer": ["fine"]}])
    config = RunConfig(agent=str(agent), tasks=str(suite), trajectory_dir=tmp_path / "traj")
    (row,) = execute(prepare(config)).rows
    assert row.passed
    (file,) = (tmp_path / "traj").glob("*-r1.jsonl")
    lines = [json.loads(line) for line in file.read_text().splitlines()]
    assert lines[1:-1] == records
    assert [r.get("type") for r in lines].count("score") == 1
    assert lines[-1]["type"] == "score"


def test_failing_build_is_a_load_error(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[[str], Path]
) -> None:
    agent = write_agent("""
        def build(options):
            raise RuntimeError("no model")
        def run_task(task, options):
            return {}
    """)
    config = RunConfig(
        agent=str(agent),
        tasks=str(write_suite([{"id": "t", "task": "q"}])),
        trajectory_dir=tmp_path / "t",
    )
    with pytest.raises(AgentLoadError, match=r"build\(\) failed: RuntimeError\('no model'\)"):
        execute(prepare(config))


def test_secrets_never_reach_a_file(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[[str], Path]
) -> None:
    agent = write_agent("""
        def run_task(task, options):
            leak = options["api_key"] + " " + options["db_password"]
            return {"answer": leak, "steps": 1, "tokens": 1,
                    "trajectory": [{"type": "model", "content": leak}]}
    """)
    config = RunConfig(
        agent=str(agent),
        tasks=str(write_suite([{"id": "t", "task": "q"}])),
        trajectory_dir=tmp_path / "t",
        out=tmp_path / "r.json",
        labbook=tmp_path / "lb.jsonl",
        api_key="sk-live-abcdef",
        options={"db_password": "hunter22", "max_tokens": "512"},
    )
    execute(prepare(config))
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl"):
            text = path.read_text()
            assert "sk-live-abcdef" not in text and "hunter22" not in text, path
    run = json.loads((tmp_path / "r.json").read_text())["run"]
    assert run["options"] == {"db_password": "[redacted]", "max_tokens": "512"}


def test_selection_errors_suggest(config: RunConfig) -> None:
    from dataclasses import replace

    with pytest.raises(ConfigError, match=r"--task-id aa: not in this suite \(did you mean 'a'"):
        prepare(replace(config, task_ids=("aa",)))
    with pytest.raises(ConfigError, match=r"--only tw: not in this suite \(did you mean 'two'"):
        prepare(replace(config, only=("tw",)))
    assert [t.id for t in prepare(replace(config, only=("two",))).tasks] == ["b"]


def test_unknown_agents(tmp_path: Path) -> None:
    from agent_eval.agents.entry import load_agent

    with pytest.raises(AgentLoadError, match="no such file"):
        load_agent(str(tmp_path / "missing.py"))
    with pytest.raises(AgentLoadError, match=r"no such shipped agent \(shipped: .*builtin:echo"):
        load_agent("builtin:nope")
    with pytest.raises(AgentLoadError, match="cannot import no_such_module_x"):
        load_agent("no_such_module_x:agent")
    with pytest.raises(AgentLoadError, match="has no callable run_task"):
        load_agent("json")


def test_each_attempt_is_kept_before_the_caller_hears_of_it(config: RunConfig) -> None:
    prepared = prepare(config)
    journal = prepared.journal_path
    assert journal is not None
    seen: list[tuple[str, int]] = []

    def on_attempt(row: AttemptResult) -> None:
        assert (config.out.parent / str(row.trajectory_file)).is_file()  # type: ignore[union-attr]
        journaled = [json.loads(line) for line in journal.read_text().splitlines()[1:]]
        assert {"id": row.id, "attempt": row.attempt}.items() <= journaled[-1].items()
        seen.append((row.id, row.attempt))

    execute(prepared, EachAttempt(on_attempt))
    assert seen == [("a", 1), ("b", 1), ("a", 2), ("b", 2), ("a", 3), ("b", 3)]


def test_the_workspace_copy_keeps_folders_and_links(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[[str], Path]
) -> None:
    docs = tmp_path / "docs"
    (docs / "sub" / "deeper").mkdir(parents=True)
    (docs / "sub" / "deeper" / "a.md").write_text("nested")
    (docs / "note.md").write_text("original")
    (docs / "alias.md").symlink_to("note.md")
    agent = write_agent("""
        import os, pathlib
        def run_task(task, options):
            ws = pathlib.Path(options["workspace"])
            link = ws / "alias.md"
            answer = f"{(ws / 'sub/deeper/a.md').read_text()} {link.is_symlink()} "
            answer += f"{os.readlink(link)} {link.read_text()}"
            return {"answer": answer, "steps": 1, "tokens": 1}
    """)
    suite = write_suite(
        [{"id": "t", "task": "look", "expect_in_answer": ["nested True note.md original"]}],
        workspace="docs",
    )
    config = RunConfig(agent=str(agent), tasks=str(suite), trajectory_dir=tmp_path / "traj")
    assert [row.passed for row in execute(prepare(config)).rows] == [True]
