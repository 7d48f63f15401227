"""The project's benchmarks that drive the runner through its Python API still run end to
end on the smallest work, so an API change that breaks one is caught here, not on the
day someone needs its figures. Only that they finish and print their lines is asserted:
the figures themselves are the machine's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"


@pytest.mark.parametrize(
    ("script", "args", "says"),
    [
        ("sandbox.py", ["--repeats", "4", "--runs", "1"], "the sandbox's cost per attempt"),
        ("overhead.py", ["--repeats", "2", "--runs", "1"], "ms/attempt"),
        ("memory.py", ["--sizes", "20"], "20"),
        ("fork_cost.py", ["--forks", "5", "--pages", "50"], "copy-on-write fault"),
        ("copy_pages.py", ["--attempts", "2"], "pages one copy wrote"),
        ("ray_executor.py", ["--repeats", "4", "--concurrency", "2", "--executors", "local"],
         "local"),
    ],
)  # fmt: skip
def test_a_benchmark_runs_on_the_smallest_work(
    tmp_path: Path, script: str, args: list[str], says: str
) -> None:
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert says in done.stdout, done.stdout
