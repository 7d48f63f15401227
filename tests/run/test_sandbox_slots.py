"""Slots that share one sandbox stay apart: two attempts running at the same time, each
probing for the other, find no way to see, signal, trace or reach it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.run.conftest import needs_sandbox

from agent_eval.sandbox import slot

PROBING_AGENT = r"""
import json, os, signal, socket, time

PORT = 47123

def run_task(task, options):
    me, worker = os.getpid(), os.getppid()
    workspace = options["workspace"]
    slot_folder = workspace
    while not os.path.basename(slot_folder).startswith("slot-"):
        slot_folder = os.path.dirname(slot_folder)
    scratch, name = os.path.split(slot_folder)
    for place in (workspace, "/tmp", "/dev/shm", os.environ["HOME"]):
        with open(os.path.join(place, f"mark-{me}"), "w") as handle:
            handle.write("x")
    listener = socket.socket()
    try:
        listener.bind(("127.0.0.1", PORT))
        listener.listen(1)
        bound = "ok"
    except OSError as exc:
        bound = exc.strerror
    started = time.time()
    # the other attempt runs meanwhile: long enough for the other slot's worker to start
    # on a slow machine (each slot starts its own sandbox where Landlock cannot scope)
    time.sleep(4)
    seen = [int(e) for e in os.listdir("/proc") if e.isdigit() and int(e) != me]
    readable, signalled, rooted = [], [], []
    for pid in seen:
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                handle.read()
            readable.append(pid)
        except OSError:
            pass
        try:
            os.listdir(f"/proc/{pid}/root/")
            rooted.append(pid)
        except OSError:
            pass
        try:
            os.kill(pid, 0)
            signalled.append(pid)
        except OSError:
            pass
    others = sorted(n for n in os.listdir(scratch) if n != name) if os.path.isdir(scratch) else []
    try:
        with open(f"/proc/{worker}/task/{worker}/children") as handle:
            family = [int(p) for p in handle.read().split()]
    except OSError:
        family = []
    marks = {place: sorted(n for n in os.listdir(place) if n.startswith("mark-"))
             for place in ("/tmp", "/dev/shm", os.environ["HOME"])}
    found = {"pid": me, "worker": worker, "family": family, "started": started,
             "ended": time.time(), "seen": seen, "readable": readable, "rooted": rooted,
             "signalled": signalled, "others_in_scratch": others, "marks": marks,
             "bound": bound}
    listener.close()
    return {"answer": json.dumps(found), "steps": 1, "tokens": 0}
"""


@needs_sandbox
@pytest.mark.parametrize("network", ["none", "model"])
def test_two_attempts_at_once_cannot_reach_each_other(
    tmp_path: Path,
    write_suite: Callable[..., Path],
    write_agent: Callable[..., Path],
    network: str,
) -> None:
    """Two attempts side by side (--concurrency 2, one sandbox where Landlock allows it),
    each of which lingers while probing: each finds its own marks only in /tmp, /dev/shm
    and HOME, no other slot's folder, a loopback port of its own, and not one process
    of the other slot that it can read, enter through /proc or signal, though where
    the slots share a sandbox it sees them listed."""
    from agent_eval.run.runner import execute, prepare
    from agent_eval.run.settings import RunConfig

    suite = write_suite([{"id": f"t{n}", "category": "c", "task": "probe",
                          "expect_in_answer": ["pid"]} for n in (1, 2)])  # fmt: skip
    config = RunConfig(agent=str(write_agent(PROBING_AGENT)), tasks=str(suite), repeats=1,
                       concurrency=2, sandbox="on", sandbox_network=network,  # type: ignore[arg-type]
                       base_url="http://127.0.0.1:9/v1",
                       out=tmp_path / "r.json", trajectory_dir=tmp_path / "traj")  # fmt: skip
    report = execute(prepare(config))
    first, second = (json.loads(row.answer) for row in report.rows)
    assert first["started"] < second["ended"] and second["started"] < first["ended"]
    if slot.scopes_slots():  # one sandbox: the other slot is there, only out of reach
        assert first["pid"] in second["seen"] or second["pid"] in first["seen"]
    for mine, theirs in ((first, second), (second, first)):
        own = {mine["worker"], *mine["family"]}
        assert set(mine["readable"]) <= own, mine
        assert set(mine["rooted"]) <= own, mine
        assert set(mine["signalled"]) <= own, mine
        for pid in (theirs["pid"], theirs["worker"]):
            assert pid not in mine["readable"] and pid not in mine["signalled"]
        assert mine["others_in_scratch"] == []
        assert mine["bound"] == "ok"
        for place, marks in mine["marks"].items():
            assert marks == [f"mark-{mine['pid']}"], (place, mine)
