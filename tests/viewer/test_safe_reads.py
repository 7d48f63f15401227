"""The viewer reads a folder an agent may have written to, so it reads it as an attacker
would fill it: a diff swapped for a link to a secret while it is served, FIFOs named like
its files, a trajectory of millions of tiny records, and a results file nested 100,000
deep beside a good one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_eval.viewer import open_viewer
from agent_eval.viewer.source import TRAJECTORY_RECORDS
from agent_eval.web import AppServer

SECRET = "TOP-SECRET-5f1c"


def _ids(base: str) -> dict[str, str]:
    runs = httpx.get(f"{base}/api/runs", timeout=30).json()["runs"]
    return {Path(r["file"]).name: r["id"] for r in runs}


def _row_file(results: Path, index: int, suffix: str) -> Path:
    """The file beside row ``index``'s trajectory with ``suffix`` (.jsonl or .diff)."""
    row = json.loads(results.read_text())["results"][index]
    return (results.parent / row["trajectory_file"]).with_suffix(suffix)


class Viewed:
    """A real run of one attempt per task; ``serve()`` starts a viewer over its folder
    (after the test has planted its files there)."""

    def __init__(self, results: Path) -> None:
        self.results = results
        self.servers: list[AppServer] = []

    def serve(self) -> AppServer:
        self.servers.append(open_viewer([self.results.parent]).start())
        return self.servers[-1]


@pytest.fixture
def viewed(make_run: Any, tmp_path: Path) -> Iterator[Viewed]:
    done = Viewed(make_run(tmp_path / "runs", "a", repeats=1))
    yield done
    for server in done.servers:
        server.stop()


def test_a_diff_swapped_for_a_link_to_a_secret_never_leaks(viewed: Viewed, tmp_path: Path) -> None:
    results, server = viewed.results, viewed.serve()
    secret = tmp_path / "secret.txt"  # outside the folder given to view
    secret.write_text(SECRET + "\n", encoding="utf-8")
    diff = _row_file(results, 0, ".diff")
    plain, link = diff.with_name("swap-plain.tmp"), diff.with_name("swap-link.tmp")
    diff.write_text("--- a/notes.txt\n+++ b/notes.txt\n+harmless\n", encoding="utf-8")
    stop = threading.Event()

    def swap() -> None:  # the diff and a link to the secret take turns under the diff's name
        while not stop.is_set():
            plain.write_text("+harmless\n", encoding="utf-8")
            os.replace(plain, diff)
            link.unlink(missing_ok=True)
            link.symlink_to(secret)
            os.replace(link, diff)

    swapper = threading.Thread(target=swap)
    swapper.start()
    run = _ids(server.root_url)["results-a.json"]
    shown = refused = 0
    try:
        with httpx.Client(timeout=30) as client:
            for _ in range(300):
                reply = client.get(f"{server.root_url}/api/attempt/{run}/0")
                assert SECRET not in reply.text
                shown += "harmless" in reply.json()["diff"]
                refused += reply.json()["diff_problem"] is not None
    finally:
        stop.set()
        swapper.join()
    assert shown + refused > 0  # every reply either showed the diff or said why not


def test_fifos_named_like_its_files_are_refused_without_blocking(
    viewed: Viewed,
) -> None:
    results = viewed.results
    folder = results.parent
    os.mkfifo(folder / "stuck.json")
    os.mkfifo(folder / "stuck.journal.jsonl")
    diff, trajectory = _row_file(results, 0, ".diff"), _row_file(results, 1, ".jsonl")
    diff.unlink(missing_ok=True)
    os.mkfifo(diff)
    trajectory.unlink()
    os.mkfifo(trajectory)
    server = viewed.serve()
    with httpx.Client(timeout=20) as client:  # a blocked read would time out
        runs = client.get(f"{server.root_url}/api/runs").json()["runs"]
        cards = {Path(r["file"]).name: r for r in runs}
        assert cards["results-a.json"]["problem"] is None
        assert "not a regular file" in cards["stuck.json"]["problem"]
        run = cards["results-a.json"]["id"]
        first = client.get(f"{server.root_url}/api/attempt/{run}/0").json()
        assert "not a regular file" in first["diff_problem"]
        second = client.get(f"{server.root_url}/api/attempt/{run}/1").json()
        assert "not a regular file" in second["trajectory_problem"]
        steps = client.get(f"{server.root_url}/api/steps/{run}/1").json()
        assert steps["records"] == [] and "not a regular file" in steps["problem"]
        assert client.get(f"{server.root_url}/api/run/{run}").status_code == 200


def test_a_trajectory_of_countless_tiny_records_is_cut_with_a_note(
    viewed: Viewed,
) -> None:
    results, server = viewed.results, viewed.serve()
    trajectory = _row_file(results, 0, ".jsonl")
    lines = TRAJECTORY_RECORDS * 3
    with trajectory.open("w", encoding="utf-8") as handle:
        handle.write('{"meta": {"task": "t"}}\n')
        handle.writelines(f'{{"type": "stop", "i": {i}}}\n' for i in range(lines))
    run = _ids(server.root_url)["results-a.json"]
    attempt = httpx.get(f"{server.root_url}/api/attempt/{run}/0", timeout=60).json()
    steps = httpx.get(f"{server.root_url}/api/steps/{run}/0", timeout=60).json()
    assert attempt["records"] == steps["total"] == TRAJECTORY_RECORDS - 1  # the meta line kept
    assert (
        "more than is shown" in steps["problem"]
        and str(lines - TRAJECTORY_RECORDS + 1) in (steps["problem"])
    )


def test_an_over_deep_results_file_is_named_while_the_good_run_loads(
    viewed: Viewed,
) -> None:
    results = viewed.results
    deep = results.parent / "deep-results.json"
    depth = 100_000
    deep.write_text(
        '{"schema": 2, "run": {"run_id": "deep"}, "results": [' + "[" * depth + "]" * depth + "]}",
        encoding="utf-8",
    )
    journal = results.parent / "deep.journal.jsonl"
    journal.write_text('{"journal": 1, "run_id": "j"}\n' + "[" * depth + "]" * depth + "\n")
    server = viewed.serve()
    reply = httpx.get(f"{server.root_url}/api/runs", timeout=30)
    assert reply.status_code == 200
    cards = {Path(r["file"]).name: r for r in reply.json()["runs"]}
    assert cards["results-a.json"]["problem"] is None and cards["results-a.json"]["attempts"]
    assert "nested too deeply" in cards["deep-results.json"]["problem"]
    # The good run's pages still open.
    run = cards["results-a.json"]["id"]
    assert httpx.get(f"{server.root_url}/api/grid/{run}", timeout=30).status_code == 200
    done = subprocess.run(
        [sys.executable, "-m", "agent_eval", "report", str(deep)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.startswith(f"Error: results file {deep}: nested too deeply")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_an_over_deep_trajectory_record_is_skipped_and_named(
    viewed: Viewed,
) -> None:
    results, server = viewed.results, viewed.serve()
    trajectory = _row_file(results, 0, ".jsonl")
    nested = "[" * 900 + "]" * 900  # parses, but no page should render it whole
    deeper = "[" * 100_000 + "]" * 100_000
    trajectory.write_text(
        f'{{"meta": {{}}}}\n{{"type": "tool", "result": {nested}}}\n{deeper}\n'
        '{"type": "stop", "reason": "finished"}\n',
        encoding="utf-8",
    )
    run = _ids(server.root_url)["results-a.json"]
    steps = httpx.get(f"{server.root_url}/api/steps/{run}/0", timeout=30)
    assert steps.status_code == 200
    body = steps.json()
    assert [r.get("type") for r in body["records"]] == ["tool", "stop"]
    assert "nest too deeply" in body["problem"]
    assert "nested deeper than" in json.dumps(body["records"][0])
