"""--executor ray on a local Ray instance: the same verdicts and guarantees as local."""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_eval.errors import AgentLoadError
from agent_eval.models.mock_server import MockModelServer
from agent_eval.run.runner import execute, prepare
from agent_eval.run.settings import RunConfig

pytestmark = pytest.mark.usefixtures("ray_local")

SEARCH_THEN_ANSWER = {
    "replies": [
        {"tool_calls": [{"name": "search_documents", "arguments": {"query": "backup window"}}]},
        {"content": "The backup window runs from 02:00 to 04:00 every Sunday, 30 days."},
    ]
}


def run(tmp_path: Path, name: str, **fields: Any) -> dict[str, Any]:
    out = tmp_path / name / "r.json"
    config = RunConfig(out=out, trajectory_dir=out.parent / "traj", retry_backoff=0.05, **fields)
    execute(prepare(config))
    return json.loads(out.read_text())  # type: ignore[no-any-return]


def verdicts(document: dict[str, Any]) -> list[tuple[Any, ...]]:
    keys = ("id", "attempt", "failure_class", "answer", "steps", "tokens",
            "prompt_tokens", "completion_tokens", "checks", "error")  # fmt: skip
    return [tuple(row[k] for k in keys) for row in document["results"]]


def test_a_deterministic_agent_gets_the_same_verdicts_and_figures_on_both_executors(
    tmp_path: Path, mock_model: Callable[..., MockModelServer]
) -> None:
    server = mock_model(SEARCH_THEN_ANSWER)
    common = dict(agent="builtin:minimal", tasks="part26", repeats=2, concurrency=3,
                  base_url=server.base_url, model="mock",
                  task_ids=("r-backup-window", "r-gateway-port", "r-log-retention"))  # fmt: skip
    local = run(tmp_path, "local", **common)
    ray = run(tmp_path, "ray", executor="ray", **common)
    assert verdicts(ray) == verdicts(local)
    assert {row["failure_class"] for row in ray["results"]} >= {"passed", "wrong_answer"}
    timing = {"mean_seconds", "stdev_seconds", "exact"}
    assert {k: v for k, v in ray["run"]["summary"].items() if k not in timing} == {
        k: v for k, v in local["run"]["summary"].items() if k not in timing
    }
    assert [t["success_rate"] for t in ray["per_task"]] == [
        t["success_rate"] for t in local["per_task"]
    ]
    for row in ray["results"]:  # the driver wrote every trajectory, where rows say
        path = tmp_path / "ray" / row["trajectory_file"]
        meta = json.loads(path.read_text().splitlines()[0])["meta"]
        assert (meta["task_id"], meta["attempt"]) == (row["id"], row["attempt"])
        assert meta["ray_node_id"]


FAULTY_AGENT = """
import os, time, pathlib

def build(options):
    with open(options["builds"], "a") as f:
        f.write(f"{os.getpid()}\\n")

def run_task(task, options):
    if task == "hang":
        time.sleep(3600)
    if task == "exit":
        os._exit(3)
    if task == "leak":
        hoard = []
        while True:
            hoard.append(bytearray(16 * 1024 * 1024))
    if task == "die":
        marker = pathlib.Path(options["builds"]).with_name("died")
        if not marker.exists():
            marker.touch()
            group = os.getppid()  # up the process tree to the slot group's actor
            while b"SlotGroup" not in pathlib.Path(f"/proc/{group}/cmdline").read_bytes():
                stat = pathlib.Path(f"/proc/{group}/stat").read_text()
                group = int(stat.rsplit(")", 1)[1].split()[1])
            os.kill(group, 9)
            time.sleep(30)
    time.sleep(0.2)
    return {"answer": f"fine {task}", "steps": 1, "tokens": 1}
"""


def test_budgets_isolation_and_a_dead_slot_group_behave_as_on_one_machine(
    capfd: pytest.CaptureFixture[str],
    tmp_path: Path,
    write_suite: Callable[..., Path],
    write_agent: Callable[[str], Path],
) -> None:
    agent = write_agent(FAULTY_AGENT)
    builds = tmp_path / "builds.log"
    tasks = ["ok", "hang", "ok", "exit", "die", "ok", "leak", "ok"]
    # only the hanging task has a time budget: a leak on a busy machine must reach the
    # memory limit, however long that takes
    suite = write_suite([{"id": f"t{i}-{t}", "task": t, "expect_in_answer": ["fine"]}
                         | ({"max_seconds": 1} if t == "hang" else {})
                         for i, t in enumerate(tasks)])  # fmt: skip
    document = run(tmp_path, "run", agent=str(agent), tasks=str(suite), executor="ray",
                   max_memory_mb=400,
                   options={"builds": str(builds)})  # fmt: skip
    got = [(r["id"], r["failure_class"], r["error"], r["infra_retries"])
           for r in document["results"]]  # fmt: skip
    assert got == [
        ("t0-ok", "passed", None, 0),
        ("t1-hang", "over_budget", "no reply within 1.1s; stopped", 0),
        ("t2-ok", "passed", None, 0),
        ("t3-exit", "agent_error",
         "agent process exited with code 3 (sys.exit or os._exit in the agent?)", 0),
        ("t4-die", "passed", None, 1),
        ("t5-ok", "passed", None, 0),
        ("t6-leak", "over_budget", "memory over --max-memory-mb 400", 0),
        ("t7-ok", "passed", None, 0),
    ]  # fmt: skip
    assert "worker died" not in capfd.readouterr().out  # Ray's notice stays off stdout
    tried = tmp_path / "run" / document["results"][4]["trajectory_file"]
    first = tried.with_name(tried.name.removesuffix(".jsonl") + ".try1.jsonl")
    score = json.loads(first.read_text().splitlines()[-1])
    assert score["failure_class"] == "infra_error"
    assert score["error"].startswith("ray slot group died")
    # the slot built once (each attempt ran in a copy of it, so a fault cost only the
    # copy), and once more in the group started again after the first one died
    assert len(builds.read_text().split()) == 1 + 1


def test_build_runs_once_per_slot_not_per_attempt(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[[str], Path]
) -> None:
    agent = write_agent(FAULTY_AGENT)
    builds = tmp_path / "builds.log"
    suite = write_suite([{"id": f"t{i}", "task": "ok"} for i in range(4)])
    document = run(tmp_path, "run", agent=str(agent), tasks=str(suite), executor="ray",
                   repeats=3, concurrency=3, options={"builds": str(builds)})  # fmt: skip
    assert document["run"]["summary"]["runs"] == 12
    assert len(builds.read_text().split()) == 3


def test_a_failing_build_is_a_clean_error_and_leaves_no_journal(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[[str], Path]
) -> None:
    agent = write_agent("def build(options):\n    raise RuntimeError('no GPU')\n"
                        "def run_task(task, options):\n    return {}\n")  # fmt: skip
    out = tmp_path / "r.json"
    config = RunConfig(agent=str(agent), tasks=str(write_suite([{"id": "a", "task": "x"}])),
                       executor="ray", out=out, trajectory_dir=tmp_path / "traj")  # fmt: skip
    with pytest.raises(AgentLoadError, match=r"build\(\) failed: RuntimeError\('no GPU'\)"):
        execute(prepare(config))
    assert not out.exists()
    assert not list(tmp_path.glob("*.journal.jsonl"))


STATE_AGENT = """
import pathlib

def run_task(task, options):
    page = pathlib.Path(options["workspace"]) / "runbook.md"
    page.write_text(page.read_text().replace("28 days", "30 days"))
    return {"answer": f"{options['api_key']} and {options['db_password']}", "steps": 1,
            "tokens": 1}
"""


def test_workspace_hidden_checks_and_secrets_travel_and_secrets_stay_out_of_files(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[[str], Path]
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "runbook.md").write_text("Logs are kept 28 days.\n")
    (tmp_path / "hidden").mkdir()
    (tmp_path / "hidden" / "check.py").write_text(
        "import pathlib, sys\nsys.exit('30 days' not in pathlib.Path('runbook.md').read_text())\n"
    )
    hidden_check = {"command": ["python", "-I", "check.py"], "exit_code": 0, "with_files": "hidden"}
    state = [{"file": "runbook.md", "contains": "30 days"}, hidden_check]
    suite = write_suite([{"id": "edit", "task": "fix it", "expect_state": state}],
                        workspace="docs", tools=["write_file"])  # fmt: skip
    key, password = "sk-live-0123456789", "hunter2hunter2"
    document = run(tmp_path, "run", agent=str(write_agent(STATE_AGENT)), tasks=str(suite),
                   executor="ray", api_key=key, options={"db_password": password})  # fmt: skip
    (row,) = document["results"]
    assert (row["checks"]["passed"], row["failure_class"]) == (True, "passed")  # both state checks
    assert row["answer"] == "[redacted] and [redacted]"  # they reached the agent
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            text = path.read_text()
            assert key not in text and password not in text, path
    assert (tmp_path / "docs" / "runbook.md").read_text() == "Logs are kept 28 days.\n"


def test_for_nodes_on_other_machines_the_files_go_through_the_cluster_store(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[[str], Path]
) -> None:
    import ray

    from agent_eval.run.executors.ray import ship
    from agent_eval.run.executors.travel import gather

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("alpha")
    agent = write_agent("def run_task(task, options):\n    return {}\n")
    (tmp_path / "helper.py").write_text("X = 1\n")
    config = RunConfig(agent=str(agent), tasks=str(write_suite([{"id": "a", "task": "x"}],
                       workspace="docs")), trajectory_dir=tmp_path / "traj")  # fmt: skip
    for skipped in ("traj", ".git"):  # this run's own outputs, version control
        (tmp_path / skipped).mkdir()
        (tmp_path / skipped / "old.txt").write_text("not needed")
    travel = gather(prepare(config), Path(tempfile.mkdtemp()) / "files")
    uri = ship(travel, here=False)
    assert uri.startswith("gcs://")

    @ray.remote(runtime_env={"working_dir": uri})
    def listing() -> list[str]:
        root = Path.cwd()
        return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())

    files = ray.get(listing.remote())
    assert {"workspace/a.md", "agent/agent.py", "agent/helper.py"} <= set(files)
    assert not [f for f in files if f.startswith(("agent/traj", "agent/.git"))]


CMD_AGENT = """
import json, sys
from helper import ANSWER

for line in sys.stdin:
    request = json.loads(line)
    print(json.dumps({"answer": ANSWER + request["task"], "steps": 1, "tokens": 2}), flush=True)
"""


def test_a_cmd_agent_finds_its_script_and_its_neighbours_where_it_named_them(
    tmp_path: Path, write_suite: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "bots").mkdir()
    (tmp_path / "bots" / "talker.py").write_text(CMD_AGENT)
    (tmp_path / "bots" / "helper.py").write_text("ANSWER = 'said '\n")
    monkeypatch.chdir(tmp_path)  # the command's paths are relative to the driver's folder
    suite = write_suite([{"id": "a", "task": "hi", "expect_in_answer": ["said hi"]}])
    document = run(tmp_path, "run", agent=f"cmd:{sys.executable} bots/talker.py",
                   tasks=str(suite), executor="ray")  # fmt: skip
    assert [r["failure_class"] for r in document["results"]] == ["passed"]


def test_the_sandbox_holds_on_a_ray_node(
    tmp_path: Path,
    write_suite: Callable[..., Path],
    write_agent: Callable[..., Path],
    mock_model: Callable[..., MockModelServer],
) -> None:
    """A slot on a Ray node runs in the kernel sandbox as on one machine: the model
    endpoint answers through the relay, another loopback port does not, and the
    workspace fills only to --max-workspace-mb."""
    from agent_eval.sandbox.bwrap import unavailable

    if unavailable() is not None:
        pytest.skip(f"the sandbox cannot start here: {unavailable()}")
    import os

    from agent_eval.run.workspace import scratch_root

    if scratch_root() is None and not os.environ.get("CI"):
        pytest.skip("no writable /dev/shm: the workspace is not capped")
    import socket

    other = socket.create_server(("127.0.0.1", 0))
    port = other.getsockname()[1]
    agent = write_agent(
        "import json, socket, urllib.parse\n"
        "def reach(host, port):\n"
        "    try:\n"
        "        socket.create_connection((host, port), timeout=3).close()\n"
        "        return 'connected'\n"
        "    except OSError:\n"
        "        return 'refused'\n"
        "def fill(folder):\n"
        "    try:\n"
        "        with open(folder + '/fill.bin', 'wb') as out:\n"
        "            for _ in range(64):\n"
        "                out.write(b'x' * (1 << 20))\n"
        "                out.flush()\n"
        "    except OSError as exc:\n"
        "        return exc.strerror\n"
        "    return 'filled'\n"
        "def run_task(task, options):\n"
        "    url = urllib.parse.urlsplit(options['base_url'])\n"
        f"    found = [reach(url.hostname, url.port), reach('127.0.0.1', {port}),\n"
        "             fill(options['workspace'])]\n"
        "    return {'answer': json.dumps(found), 'steps': 1, 'tokens': 0}\n"
    )
    server = mock_model({"replies": [{"content": "hi"}]})
    config = RunConfig(agent=str(agent), tasks=str(write_suite([{"id": "a", "task": "x"}])),
                       executor="ray", base_url=server.base_url, out=tmp_path / "r.json",
                       trajectory_dir=tmp_path / "traj", sandbox="on",
                       max_workspace_mb=8)  # fmt: skip
    try:
        report = execute(prepare(config))
    finally:
        other.close()
    (row,) = report.rows
    assert json.loads(row.answer) == ["connected", "refused", "No space left on device"]
    assert report.head.run.sandbox is not None and report.head.run.sandbox.applied == "bwrap"
