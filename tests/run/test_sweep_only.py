"""A sweep's `only` takes one category, as the course's `--only` does, or a list."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

Cli = Callable[..., subprocess.CompletedProcess[str]]
TASKS = [
    {"id": "r1", "category": "retrieval", "task": "Port?", "expect_in_answer": ["4000"]},
    {"id": "r2", "category": "retrieval", "task": "Port again?", "expect_in_answer": ["4000"]},
    {"id": "x1", "category": "refusal", "task": "Secret?", "expect_in_answer": ["4000"]},
]


def matrix(only: str) -> str:
    return f"""
[run]
tasks = "suite.json"
out_dir = "out"
only = {only}

[matrix]
agents = ["builtin:echo"]
models = ["m"]
"""


@pytest.mark.parametrize("only", ['"retrieval"', '["retrieval"]'])
def test_only_names_one_category_or_a_list(
    agent_eval: Cli, tmp_path: Path, write_suite: Callable[..., Path], only: str
) -> None:
    write_suite(TASKS)
    (tmp_path / "m.toml").write_text(matrix(only), encoding="utf-8")
    done = agent_eval("sweep", "m.toml", cwd=tmp_path)
    assert done.returncode in (0, 2), done.stderr
    (results,) = (tmp_path / "out").glob("*.json")
    rows = json.loads(results.read_text(encoding="utf-8"))["results"]
    assert sorted(row["id"] for row in rows) == ["r1", "r2"]


def test_only_of_another_type_is_refused_with_its_name(
    agent_eval: Cli, tmp_path: Path, write_suite: Callable[..., Path]
) -> None:
    write_suite(TASKS)
    (tmp_path / "m.toml").write_text(matrix("3"), encoding="utf-8")
    done = agent_eval("sweep", "m.toml", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith("Error: sweep m.toml: run.only")
