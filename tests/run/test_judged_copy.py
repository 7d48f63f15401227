"""An attempt is judged on a still copy of its workspace.

An agent may leave a thread or a process running once its attempt has returned: in
``--isolation worker``, or when build() started a thread (so attempts run in the built
worker itself). Here one keeps swapping the file a check reads between a plain file and
a link to the suite, which holds the strings the checks look for. Judged in place, a
check could look at the file and then read the suite through the link, and a file that
went between the listing and the read stopped the whole run. Judged on a copy made
through descriptors, no link is followed and every attempt is scored.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from tests.run.conftest import AGENT_EVAL

SWAPPER = """
import os, threading
import agent_eval

SUITE = os.path.join(os.path.dirname(agent_eval.__file__), "suites", "ops-state", "ops-state.json")
_state = {{}}


def _swap():
    while True:
        target = os.path.join(_state["ws"], "requests", "gateway-port.md")
        try:
            with open(target + ".f", "w") as f:
                f.write("nothing to see\\n")
            os.rename(target + ".f", target)
            if os.path.lexists(target + ".l"):
                os.unlink(target + ".l")
            os.symlink(SUITE, target + ".l")
            os.rename(target + ".l", target)
        except OSError:
            pass


def build(options):
    if {thread_in_build}:  # a worker with a thread cannot be copied: attempts run in it
        threading.Thread(target=threading.Event().wait, daemon=True).start()


def run_task(task, options):
    _state["ws"] = options["workspace"]
    os.makedirs(os.path.join(_state["ws"], "requests"), exist_ok=True)
    if "thread" not in _state:
        _state["thread"] = threading.Thread(target=_swap, daemon=True)
        _state["thread"].start()
    return {{"answer": "filed", "steps": 1, "tokens": 1}}
"""


@pytest.mark.parametrize("isolation", ["worker", "attempt"])
def test_what_an_agent_leaves_running_cannot_change_how_it_is_judged(
    tmp_path: Path, isolation: str
) -> None:
    (tmp_path / "swapper.py").write_text(SWAPPER.format(thread_in_build=isolation == "attempt"))
    repeats = 20
    run = subprocess.run(
        [str(AGENT_EVAL), "run", "--agent", "swapper.py", "--tasks", "ops-state",
         "--task-id", "gateway-port-request", "--repeats", str(repeats), "--out", "r.json",
         "--isolation", isolation, "--no-preflight"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 2, run.stderr[-2000:]
    rows = json.loads((tmp_path / "r.json").read_text())["results"]
    assert len(rows) == repeats
    for row in rows:
        assert not row["checks"]["passed"]
        read = {s["name"]: s for s in row["checks"]["state"] if " contains " in s["name"]}
        assert len(read) == 2
        for outcome in read.values():
            assert not outcome["ok"], outcome
