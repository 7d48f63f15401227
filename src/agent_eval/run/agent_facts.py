"""An agent's facts (its scaffold name, where its run_task lives), learned without
importing it in this process.

This process scores the attempts. Importing an agent runs its code, and code run here
could replace a scorer and pass every attempt, so a user's agent is imported only in a
process of its own (agents/facts.py): in the run's sandbox, which hides what the run's
attempts cannot see, or, without one, a plain child process. The shipped agents and a
``cmd:`` agent's adapter are the harness's own code and load here.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile

from agent_eval.agents import AgentFacts, anchored, load_agent
from agent_eval.errors import AgentLoadError
from agent_eval.redaction import Redactor, relay_to_stderr, replace_lone_surrogates
from agent_eval.sandbox import Sandbox

HARNESS_AGENTS = ("builtin:", "cmd:")
"""Specs whose loading imports only the harness's own code."""


def agent_facts(spec: str, sandbox: Sandbox | None) -> AgentFacts:
    """The facts of the agent ``spec`` names; AgentLoadError, with the reason a load in
    this process would have given, when it cannot be loaded."""
    if spec.startswith(HARNESS_AGENTS):
        return load_agent(spec).facts
    with tempfile.TemporaryDirectory(prefix="agent-eval-facts-") as tmp:
        return _facts_from_child(spec, sandbox, tmp)


def _facts_from_child(spec: str, sandbox: Sandbox | None, tmp: str) -> AgentFacts:
    """Load the agent in a child process, sandboxed with ``tmp`` as its /tmp and HOME
    when there is a sandbox, and read what it found."""
    here = os.getcwd()
    shown = sandbox is None or sandbox.shows(here)
    read, write = os.pipe()
    try:
        # a relative path or a module beside us needs this folder; unshown, a path still works
        command = [sys.executable, "-m", "agent_eval.agents.facts", str(write),
                   spec if shown else anchored(spec)]  # fmt: skip
        env = None
        if sandbox is not None:
            # importing needs no network; a host-network sandbox keeps the host's
            network = None if sandbox.network == "host" else "none"
            command = sandbox.argv(command, tmp=tmp, cwd=here if shown else "/", network=network)
            env = sandbox.environment("/tmp")
        child = subprocess.Popen(command, pass_fds=(write,), stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                                 cwd=here)  # fmt: skip
    except OSError as exc:
        os.close(read)
        raise AgentLoadError(f"agent {spec}: cannot start a process to load it: {exc}") from None
    finally:
        os.close(write)
    assert child.stdout is not None
    # what the import prints reaches stderr as a worker's prints do, never the console's layout
    printed = relay_to_stderr(child.stdout, Redactor.for_run(None, {}), "agent-import-output")
    try:
        code = child.wait()
        printed.join(1.0)  # before what the run says next, unless a stray keeps the pipe
    except BaseException:  # Ctrl-C while the agent imports
        child.kill()
        child.wait()
        os.close(read)
        raise
    return _read_facts(spec, read, code)


def _read_facts(spec: str, read: int, code: int) -> AgentFacts:
    """The facts the child wrote to ``read`` (what it wrote by the time it exited: a
    process its import left running may hold the pipe open for good)."""
    os.set_blocking(read, False)
    chunks = []
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(read, 1 << 16):
            chunks.append(chunk)
    os.close(read)
    try:
        # SCAFFOLD_NAME is the agent's text: a lone surrogate in it would crash every write
        found = replace_lone_surrogates(json.loads(b"".join(chunks)))
    except ValueError:
        found = None
    if not isinstance(found, dict):
        raise AgentLoadError(f"agent {spec}: loading it failed (exit code {code}); "
                             "its output is above")  # fmt: skip
    if isinstance(found.get("error"), str):
        raise AgentLoadError(found["error"])
    scaffold, module = found.get("scaffold"), found.get("run_task_module")
    if not isinstance(scaffold, str) or not scaffold or not isinstance(module, str | None):
        raise AgentLoadError(f"agent {spec}: loading it gave no scaffold name; check its "
                             "SCAFFOLD_NAME")  # fmt: skip
    return AgentFacts(spec, scaffold, module)
