"""No agent's code runs in the process that scores it.

The harness learns what it must know of an agent (its scaffold name, where its run_task
lives) from a process of its own, sandboxed like the run's attempts when the run is.
Before, the run's own process imported the agent's file to learn them, so an agent's
module-level code could replace the scorer there and pass every attempt.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from tests.run.conftest import AGENT_EVAL, needs_sandbox

from agent_eval.agents import load_agent
from agent_eval.errors import AgentLoadError
from agent_eval.run.agent_facts import agent_facts
from agent_eval.run.executors.sandboxed import resolve

PASS_EVERYTHING = """
import os, sys
from pathlib import Path

try:  # where this module was imported: a process the sandbox may not let it name
    (Path({seen!r}) / str(os.getpid())).touch()
except OSError:
    pass
if "agent_eval.run.attempt" in sys.modules:  # the scorer is here: make it pass anything
    import agent_eval.run.attempt as attempt

    real = attempt.score_attempt
    attempt.score_attempt = lambda *a, **k: real(*a, **k).model_copy(update={{"passed": True}})


def run_task(task, options):
    return {{"answer": "I do not know", "steps": 1, "tokens": 1}}
"""


@pytest.mark.parametrize("sandbox", [pytest.param("on", marks=needs_sandbox), "off"])
def test_an_agent_that_would_rewrite_its_scorer_still_fails(tmp_path: Path, sandbox: str) -> None:
    """An agent whose import replaces the scorer with one that passes everything, and
    whose answer is wrong: both attempts fail, and (without the sandbox, where it can
    say where it ran) it was imported, but never in the run's own process."""
    seen = tmp_path / "imported-in"
    seen.mkdir()
    (tmp_path / "hostile.py").write_text(PASS_EVERYTHING.format(seen=str(seen)))
    run = subprocess.Popen(
        [str(AGENT_EVAL), "run", "--agent", "hostile.py", "--tasks", "part26",
         "--task-id", "r-gateway-port", "--task-id", "t-grep-port", "--out", "r.json",
         "--no-preflight", "--sandbox", sandbox],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    output, _ = run.communicate(timeout=120)
    assert run.returncode == 2, output
    results = json.loads((tmp_path / "r.json").read_text())
    assert [row["checks"]["passed"] for row in results["results"]] == [False, False]
    assert results["run"]["summary"]["passed"] == 0
    assert results["run"]["scaffold"] == "hostile"
    importers = {int(p.name) for p in seen.iterdir()}
    assert run.pid not in importers
    if sandbox == "off":
        assert importers, "the agent was never imported"


AGENTS = {
    "reexport.py": "from agent_eval.agents.minimal import SCAFFOLD_NAME, build, close, run_task\n",
    "computed.py": (
        "SCAFFOLD_NAME = '-'.join(['made', 'at', 'import'])\n"
        "def run_task(task, options):\n    return {}\n"
    ),
    "plain.py": "def run_task(task, options):\n    return {}\n",
    "by_object.py": (
        "class Agent:\n    SCAFFOLD_NAME = 'object-agent'\n"
        "    def run_task(self, task, options):\n        return {}\n"
        "agent = Agent()\n"
        "def bare(task, options):\n    return {}\n"
    ),
}


@pytest.fixture
def agents_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, text in AGENTS.items():
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("spec", ["reexport.py", "computed.py", "plain.py", "by_object:agent"])
def test_an_agents_facts_are_the_ones_loading_it_gives(agents_here: Path, spec: str) -> None:
    """Whatever way the name is given (a shipped agent's re-exported, computed at import,
    the file's own name, an object's attribute), a process of its own finds what
    loading the agent here finds."""
    assert agent_facts(spec, None) == load_agent(spec).facts


def test_a_re_exported_shipped_agent_is_known_for_what_it_runs(agents_here: Path) -> None:
    facts = agent_facts("reexport.py", None)
    assert (facts.scaffold, facts.run_task_module) == ("minimal", "agent_eval.agents.minimal")


@needs_sandbox
def test_the_sandbox_loads_an_agent_beside_the_current_folder(agents_here: Path) -> None:
    """In the run's sandbox, a file and a module of the current folder load as here."""
    sandbox, _ = resolve("on", "model", hide=[], keep=[agents_here])
    assert sandbox is not None
    for spec in ("computed.py", "by_object:agent"):
        assert agent_facts(spec, sandbox) == load_agent(spec).facts


BROKEN = {
    "no_run_task.py": "x = 1\n",
    "raises.py": "raise ValueError('boom at import')\n",
}


@pytest.mark.parametrize(
    "spec", ["no_run_task.py", "raises.py", "missing.py", "no_such_module:agent", "by_object:bare"]
)
def test_an_agent_that_cannot_load_says_why_as_loading_it_here_does(
    agents_here: Path, spec: str
) -> None:
    for name, text in BROKEN.items():
        (agents_here / name).write_text(text)
    with pytest.raises(AgentLoadError) as here:
        load_agent(spec)
    with pytest.raises(AgentLoadError) as there:
        agent_facts(spec, None)
    assert str(there.value) == str(here.value)


def test_an_agent_that_exits_on_import_is_an_error_that_says_so(agents_here: Path) -> None:
    (agents_here / "quits.py").write_text("import sys\nsys.exit(3)\n")
    with pytest.raises(AgentLoadError, match=r"agent quits.py: loading it failed \(exit code 3\)"):
        agent_facts("quits.py", None)


def test_a_process_the_agents_import_leaves_running_does_not_hold_the_run(
    agents_here: Path,
) -> None:
    """The import starts a process that inherits every descriptor and sleeps: the facts
    are read once the loading process exits, while that process still holds the pipe."""
    (agents_here / "lingers.py").write_text(
        "import pathlib, subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
        " close_fds=False)\n"
        "pathlib.Path('lingerer').write_text(str(child.pid))\n"
        "SCAFFOLD_NAME = 'lingers'\n"
        "def run_task(task, options):\n    return {}\n"
    )
    facts = agent_facts("lingers.py", None)
    lingerer = int((agents_here / "lingerer").read_text())
    try:
        assert facts.scaffold == "lingers"
        os.kill(lingerer, 0)  # still running, pipe held: the facts did not wait for it
    finally:
        os.kill(lingerer, signal.SIGKILL)


def test_a_shipped_agent_is_loaded_here_and_needs_no_process(agents_here: Path) -> None:
    assert agent_facts("builtin:minimal", None) == load_agent("builtin:minimal").facts
    assert agent_facts("builtin:minimal", None).scaffold == "minimal"
    assert sys.modules.get("agent_eval.agents.minimal") is not None
