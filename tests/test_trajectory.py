"""The trajectory file's one owner: every record kind round-trips byte for byte, a damaged
line is named by file and line, a file cut mid-write still reads, and the name pattern
knows the runner's names from near misses.

The files read here are written by the programs that write them: `agent-eval run` with
the reference agents against the scripted model server, and the course harness.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_eval.models.mock_script import parse_script
from agent_eval.models.mock_server import MockModelServer
from agent_eval.trajectory import (
    Meta,
    ScoreRecord,
    TrajectoryError,
    is_trajectory_name,
    read_trajectory,
    trajectory_name,
    trajectory_text,
    write_new_file,
)

ROOT = Path(__file__).resolve().parents[1]
COURSE = ROOT.parent / "shared" / "course" / "agent-eval.py"
COURSE_DATA = ROOT / "tests" / "results" / "data"
Cli = Callable[..., subprocess.CompletedProcess[str]]

SCRIPT = {  # the four roles of builtin:multi-agent, one search on the way
    "rules": [
        {"model": "router", "reply": {"json": {"route": "search", "reason": "a fact"}}},
        {"system": "^You are the answerer", "reply": {"content": "It is lit at 19:00."}},
        {
            "system": "^You are the verifier",
            "reply": {"json": {"supported": True, "answer": "It is lit at 19:00."}},
        },
    ],
    "replies": [
        {"tool_calls": [{"name": "search_documents", "arguments": {"query": "lamp"}}]},
        {"content": "notes.md: the lamp is lit at 19:00."},
    ],
}
RAISES = """
def run_task(task, options):
    raise ValueError("no answer today")
"""


@pytest.fixture(scope="module")
def multi_agent_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of builtin:multi-agent, once for the module: every kind but a traceback."""
    folder = tmp_path_factory.mktemp("multi-agent")
    (folder / "docs").mkdir()
    (folder / "docs" / "notes.md").write_text("The lamp is lit at 19:00.\n", encoding="utf-8")
    task = {"id": "lamp", "task": "When is the lamp lit?", "expect_in_answer": ["19:00"]}
    suite = {"name": "tiny", "version": "1.0.0", "workspace": "docs", "tasks": [task]}
    (folder / "suite.json").write_text(json.dumps(suite), encoding="utf-8")
    server = MockModelServer(parse_script(SCRIPT)).start()
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        done = subprocess.run(
            [str(Path(sys.executable).with_name("agent-eval")), "run", "--agent",
             "builtin:multi-agent", "--tasks", "suite.json", "--model", "mock",
             "--router-model", "router", "--base-url", server.base_url, "--no-preflight",
             "--out", "r.json"],
            cwd=folder, capture_output=True, text=True, timeout=300, env=env, check=False,
        )  # fmt: skip
    finally:
        server.stop()
    assert done.returncode == 0, done.stdout + done.stderr
    return folder


@pytest.fixture
def multi_agent_run(tmp_path: Path, multi_agent_folder: Path) -> dict[str, Any]:
    """That run's files copied into this test's folder, to read or damage; its results."""
    shutil.copytree(multi_agent_folder, tmp_path, dirs_exist_ok=True)
    return json.loads((tmp_path / "r.json").read_text())


def _files(folder: Path, results: dict[str, Any]) -> list[Path]:
    return [folder / row["trajectory_file"] for row in results["results"]]


def _rewritten(path: Path) -> str:
    """The file written again from what the owner read of it."""
    read = read_trajectory(path)
    assert read.meta is not None and read.score is not None and read.problems == ()
    meta: Meta = {k: v for k, v in read.meta.items() if k != "schema"}  # type: ignore[assignment]
    return trajectory_text(meta, read.records[:-1], read.score)


def test_every_record_kind_round_trips_byte_for_byte(
    tmp_path: Path, multi_agent_run: dict[str, Any]
) -> None:
    [path] = _files(tmp_path, multi_agent_run)
    read = read_trajectory(path)
    assert read.meta is not None
    assert (read.meta["schema"], read.meta["task_id"], read.meta["attempt"]) == (3, "lamp", 1)
    assert read.meta["run_id"] == multi_agent_run["run"]["run_id"]
    kinds = [record.get("type") for record in read.records]
    assert kinds[:2] == ["model", "route"] and kinds[-2:] == ["stop", "score"]  # router first
    assert {"model", "tool"} <= set(kinds)
    roles = {r.get("role") for r in read.records if r.get("type") == "model"}
    assert roles == {"router", "researcher", "answerer", "verifier"}
    assert read.score is not None and read.score.get("passed") is True
    assert _rewritten(path) == path.read_text(encoding="utf-8")
    first = {}  # each kind's keys on disk, in order: the shape schema 3 files have
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        record = json.loads(line)
        first.setdefault(record["type"], list(record))
    assert first == SHAPES
    assert list(json.loads(path.read_text().splitlines()[0])["meta"]) == META_KEYS


SHAPES = {
    "model": ["type", "role", "model", "tool_calls", "prompt_tokens", "completion_tokens",
              "seconds", "content", "finish_reason", "input_from", "input"],
    "route": ["type", "route", "reason"],
    "tool": ["type", "tool", "args", "error", "result", "seconds", "call_id"],
    "stop": ["type", "reason", "detail"],
    "score": ["type", "passed", "failure_class", "answer", "checks", "steps", "tokens",
              "seconds", "stopped", "error"],
}  # fmt: skip
META_KEYS = ["schema", "scaffold", "model", "router_model", "suite", "suite_version",
             "suite_hash", "run_id", "task_id", "attempt", "task", "started"]  # fmt: skip


def test_a_stop_the_harness_writes_round_trips_with_its_traceback(
    tmp_path: Path,
    write_suite: Callable[..., Path],
    write_agent: Callable[..., Path],
    agent_eval: Cli,
) -> None:
    write_suite([{"id": "t", "task": "q", "expect_in_answer": ["x"]}])
    write_agent(RAISES)
    done = agent_eval("run", "--agent", "agent.py", "--tasks", "suite.json", "--model", "m",
                      "--no-preflight", "--out", "r.json", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    [path] = _files(tmp_path, json.loads((tmp_path / "r.json").read_text()))
    stop, score = read_trajectory(path).records
    assert stop.get("type") == "stop" and stop.get("reason") == "agent_error"
    assert any(frame["function"] == "run_task" for frame in stop.get("traceback", []))
    assert score.get("failure_class") == "agent_error"
    assert _rewritten(path) == path.read_text(encoding="utf-8")


def test_a_course_trajectory_keeps_its_agents_own_records(tmp_path: Path) -> None:
    if not COURSE.is_file():
        pytest.skip(f"the course harness is not at {COURSE}")
    for name in ("steady.py", "course-suite.json"):
        source = COURSE_DATA / ("course_agents" if name.endswith(".py") else "") / name
        (tmp_path / name).write_bytes(source.read_bytes())
    done = subprocess.run(
        [sys.executable, str(COURSE), "--agent", "steady.py", "--tasks", "course-suite.json",
         "--model", "local/chat", "--out", "results.json", "--labbook", "lb.jsonl"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode in (0, 2), done.stdout + done.stderr
    files = _files(tmp_path, json.loads((tmp_path / "results.json").read_text()))
    assert files and all(is_trajectory_name(path.name) for path in files)
    for path in files:
        read = read_trajectory(path)
        assert read.meta is not None and "schema" not in read.meta and read.score is None
        lines = path.read_text(encoding="utf-8").splitlines()
        assert [json.dumps(line) for line in read.lines] == lines


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("not json", "not JSON (Expecting value at column 1)"),
        ("[1, 2]", "a JSON list, not a record object"),
        ('{"type": "model", "prompt_tokens": "many"}',
         'the model record\'s `prompt_tokens` is "many", not an integer or null'),
        ('{"type": "tool", "args": "lamp"}', 'the tool record\'s `args` is "lamp", not an object'),
        ('{"type": "model", "tool_calls": ["search", 3]}',
         "the model record's `tool_calls` is [\"search\", 3], not a list of texts"),
        ('{"type": "score", "passed": 1}', "the score record's `passed` is 1, not true or false"),
    ],
)  # fmt: skip
def test_a_damaged_line_is_named_by_file_and_line(
    tmp_path: Path, multi_agent_run: dict[str, Any], line: str, why: str
) -> None:
    [path] = _files(tmp_path, multi_agent_run)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join([*lines[:2], line + "\n", *lines[2:]]), encoding="utf-8")
    with pytest.raises(TrajectoryError) as caught:
        read_trajectory(path)
    assert str(caught.value).startswith(f"trajectory {path.name}:3: {why} (the file is damaged")
    shown = read_trajectory(path, tolerant=True)  # a reader that shows what it can
    kept = line.startswith("{")  # a mistyped record is shown as it is; the rest is skipped
    assert len(shown.records) == len(lines) - 1 + kept
    assert shown.problem == f"{path.name}:3: {why}; " + ("kept as it is" if kept else "skipped")


def test_a_file_whose_first_line_is_no_meta_line_is_named(
    tmp_path: Path, multi_agent_run: dict[str, Any]
) -> None:
    [path] = _files(tmp_path, multi_agent_run)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[1:]), encoding="utf-8")
    with pytest.raises(TrajectoryError, match=rf"^trajectory {path.name}:1: the first line is"):
        read_trajectory(path)
    assert read_trajectory(path, tolerant=True).meta is None


def test_a_file_cut_mid_write_reads_all_but_its_torn_last_line(
    tmp_path: Path, multi_agent_run: dict[str, Any]
) -> None:
    [path] = _files(tmp_path, multi_agent_run)
    whole = read_trajectory(path)
    text = path.read_text(encoding="utf-8")
    last = text.rstrip("\n").rsplit("\n", 1)[1]
    path.write_text(text[: len(text) - len(last) // 2 - 1], encoding="utf-8")
    torn = read_trajectory(path)  # no error: a crash mid-write is not bad input
    assert torn.meta == whole.meta and torn.records == whole.records[:-1]
    number = len(text.splitlines())
    assert torn.problems == (
        f"{path.name}:{number}: the last line is cut short (its writer stopped mid-line); skipped",
    )


def test_a_record_holding_line_ends_of_splitlines_reads_back_whole(tmp_path: Path) -> None:
    """Written as they are (ensure_ascii=False), U+2028 and its kin stay inside the line:
    only "\\n" ends a record."""
    said = "a\u2028b\u2029c\x85d\x0be\x0cf\x1cg\x1dh\x1ei"
    records = [{"type": "note", "said": said}, {"tool": said}]
    score: ScoreRecord = {"type": "score", "passed": True}
    text = trajectory_text(Meta(task_id="t", attempt=1), records, score)
    path = write_new_file(tmp_path, "t-r1.jsonl", text)
    assert "\u2028" in path.read_text(encoding="utf-8")  # the case under test
    read = read_trajectory(path)
    assert read.records[:2] == records and not read.problems


def test_an_agents_own_records_are_kept_as_they_are(tmp_path: Path) -> None:
    path = tmp_path / "x-r1.jsonl"
    path.write_text('{"meta": {}}\n{"step": "think", "tokens": "a few"}\n{"type": "plan"}\n')
    read = read_trajectory(path)
    assert read.records == [{"step": "think", "tokens": "a few"}, {"type": "plan"}]


def test_the_runners_names_match_and_its_other_files_do_not(
    tmp_path: Path, multi_agent_run: dict[str, Any]
) -> None:
    [path] = _files(tmp_path, multi_agent_run)
    assert path.parent == tmp_path / "trajectories" and is_trajectory_name(path.name)
    others = [p.name for p in tmp_path.rglob("*") if p.is_file() and p.parent != path.parent]
    assert "r.json" in others
    assert not any(is_trajectory_name(name) for name in others)


@pytest.mark.parametrize(
    "name",
    [
        "20261202-000000-abc-minimal-local_chat-t1-r1.jsonl",
        "x-r12.jsonl",
        "x-r1.try2.jsonl",  # a try retried after an infra error
        "20261202-000000-steady-local:chat-t1-r3.jsonl",  # the course keeps all but '/'
    ],
)
def test_trajectory_names_match(name: str) -> None:
    assert is_trajectory_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "x-r.jsonl",
        "x-rone.jsonl",
        "x-R1.jsonl",
        "xr1.jsonl",
        "x-r1.json",
        "x-r1.jsonl.bak",
        "x-r1.jsonl\n",
        "x-r1.try.jsonl",
        "x-r1.tryx.jsonl",
        "x-r1.recording.ndjson",
        "20261202-000000-abc.journal.jsonl",
        "labbook.jsonl",
        "r1.jsonl",
    ],
)
def test_near_misses_are_not_trajectory_names(name: str) -> None:
    assert not is_trajectory_name(name)


@given(st.text(max_size=80), st.text(max_size=80), st.text(max_size=80), st.integers(1, 10_000))
def test_every_name_the_runner_makes_is_one_plain_trajectory_name(
    part: str, task_id: str, model: str, attempt: int
) -> None:
    name = trajectory_name(part, "scaffold", model, task_id, attempt)
    assert is_trajectory_name(name) and "/" not in name and not name.startswith(".")
    assert name.endswith(f"-r{attempt}.jsonl")


def test_the_agents_side_of_the_module_loads_no_pydantic() -> None:
    code = "import sys, agent_eval.trajectory\n"
    code += "print(any(m.startswith('pydantic') for m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
