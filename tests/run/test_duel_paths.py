"""What `duel` prints as the sides' results files is where it wrote them."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

Cli = Callable[..., subprocess.CompletedProcess[str]]
SUITE = {"name": "d", "version": "1.0.0", "tasks": [
    {"id": "t1", "category": "c", "task": "say 4000", "expect_in_answer": ["4000"]},
    {"id": "t2", "category": "c", "task": "say 4000 too", "expect_in_answer": ["4000"]},
]}  # fmt: skip


def duel(agent_eval: Cli, folder: Path, out: str) -> subprocess.CompletedProcess[str]:
    (folder / "s.json").write_text(json.dumps(SUITE), encoding="utf-8")
    return agent_eval("duel", "--a", "builtin:empty", "--b", "builtin:echo", "--tasks", "s.json",
                      "--allow-empty-workspace", "--max-repeats", "1", "--out", out,
                      cwd=folder)  # fmt: skip


def results_line(done: subprocess.CompletedProcess[str]) -> str:
    return next(line for line in done.stdout.splitlines() if line.startswith("results "))


@pytest.mark.parametrize(
    ("out", "folder", "stem"),
    [("sub/d.json", "sub", "d"), ("box/", "box", "duel"), ("box", "box", "duel")],
)
def test_the_printed_results_are_the_files_written(
    agent_eval: Cli, tmp_path: Path, out: str, folder: str, stem: str
) -> None:
    (tmp_path / folder).mkdir()  # box: an existing folder, with or without the slash
    done = duel(agent_eval, tmp_path, out)
    assert done.returncode == 2, done.stderr  # undecided after one round
    a, b = f"{folder}/{stem}-a.json", f"{folder}/{stem}-b.json"
    assert results_line(done) == f"results       {a} (A), {b} (B)"
    assert (tmp_path / a).is_file() and (tmp_path / b).is_file()
    assert f"duel written to {folder}/{stem}.json" in done.stderr
    assert (tmp_path / folder / f"{stem}.json").is_file()
    assert sorted(p.name for p in (tmp_path / folder).iterdir()) == sorted(
        [f"{stem}.json", f"{stem}-a.json", f"{stem}-b.json"]
    )
