"""Every attempt's workspace shows the suite's documents with their own modification
times, so what an agent lists (`ls -l`) is the same in every attempt and in a replay."""

from __future__ import annotations

import os
from pathlib import Path

from agent_eval.run.workspace import fresh_workspace


def test_each_copy_keeps_the_documents_times(tmp_path: Path) -> None:
    source = tmp_path / "documents"
    (source / "notes").mkdir(parents=True)
    (source / "runbook.md").write_text("port 4000\n")
    (source / "notes" / "plan.md").write_text("backups on Sunday\n")
    for number, relative in enumerate(["runbook.md", "notes/plan.md", "notes"]):
        stamp = 1_700_000_000 + 3600 * number
        os.utime(source / relative, (stamp, stamp))
    with fresh_workspace(source) as first, fresh_workspace(source) as second:
        for relative in ["runbook.md", "notes/plan.md", "notes", "."]:
            wanted = (source / relative).stat().st_mtime_ns
            assert (first / relative).stat().st_mtime_ns == wanted
            assert (second / relative).stat().st_mtime_ns == wanted
