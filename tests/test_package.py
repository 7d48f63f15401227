"""The package's shape: the public API is pinned and dependencies point one way."""

from __future__ import annotations

import subprocess
import sys

import pytest

import agent_eval

PUBLIC = [
    "AgentEvalError", "AgentLoadError", "AgentReply", "AttemptResult", "Checks", "ConfigError",
    "ExtraMissingError", "LoadedSuite", "ModelEndpointError", "Prices", "ResultsError",
    "RunConfig", "RunReport", "Suite", "SuiteError", "Task", "__version__", "classify",
    "execute", "load_suite", "prepare", "score_attempt", "MockModelServer", "load_script",
    "LocalModelServer", "load_results", "compare_runs", "summarise_run",
]  # fmt: skip


def test_public_api_is_pinned() -> None:
    assert sorted(agent_eval.__all__) == sorted(PUBLIC)
    for name in PUBLIC:
        assert getattr(agent_eval, name) is not None


# package -> the agent_eval packages it must never pull in when imported alone
FORBIDDEN = {
    "records": ["suite", "score", "tools", "models", "agents", "run", "results", "report",
                "trace", "cli"],
    "errors": ["records", "suite", "score", "tools", "models", "agents", "run", "results",
               "report", "cli"],
    "suite": ["score", "tools", "models", "agents", "run", "results", "report", "cli"],
    "score": ["tools", "models", "agents", "run", "results", "report", "cli"],
    "tools": ["suite", "score", "models", "agents", "run", "results", "report", "cli"],
    "models": ["suite", "score", "tools", "agents", "run", "results", "report", "cli"],
    "web": ["records", "suite", "score", "tools", "models", "agents", "run", "results",
            "report", "cli"],
    # The results file's one owner: records, errors and score only.
    "results": ["suite", "tools", "models", "agents", "run", "report", "trace", "cli"],
    "agents": ["run", "report", "cli"],
    "report": ["run", "agents", "tools", "models", "cli"],
    "trace": ["suite", "tools", "models", "agents", "run", "report", "cli"],
    "trace.otel": ["suite", "tools", "models", "agents", "run", "report", "cli"],
    "run": ["cli", "report"],
    "sandbox": ["records", "suite", "score", "tools", "models", "agents", "run", "results",
                "report", "trace", "cli"],
    "viewer": ["agents", "tools", "models", "run", "cli"],
}  # fmt: skip
for _package, _forbidden in FORBIDDEN.items():
    if _package != "viewer":
        _forbidden.append("viewer")  # only the CLI opens the viewer


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_dependencies_point_one_way(package: str) -> None:
    code = (
        f"import sys, agent_eval.{package}\n"
        "print(' '.join(sorted({m.split('.')[1] for m in sys.modules "
        "if m.startswith('agent_eval.')})))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    pulled = set(done.stdout.split())
    assert not pulled & set(FORBIDDEN[package]), f"{package} pulled in {pulled}"


def test_the_agents_process_loads_only_what_it_needs() -> None:
    """A worker process (run.agent_host) imports neither the parent's side of the worker
    nor pydantic: every page it holds is one more for each attempt's copy to share."""
    code = (
        "import sys, agent_eval.run.executors.agent_host\n"
        "print(' '.join(sorted(m for m in sys.modules "
        "if m.startswith(('agent_eval.', 'pydantic')))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == [
        "agent_eval.agents", "agent_eval.agents.entry", "agent_eval.agents.outage",
        "agent_eval.errors", "agent_eval.processes", "agent_eval.run", "agent_eval.run.executors",
        "agent_eval.run.executors.agent_host", "agent_eval.sandbox", "agent_eval.sandbox.reaper",
    ]  # fmt: skip


def test_the_core_never_imports_an_extra() -> None:
    """A run on the local executor works without the ray extra: nothing imports it."""
    code = (
        "import sys, agent_eval.cli, agent_eval.run.runner, agent_eval.run.executors.local\n"
        "print(sorted(m for m in ('ray', 'llama_cpp', 'opentelemetry') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
