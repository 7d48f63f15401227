"""The shipped `cited` suite: its documents state every fact its tasks check, in the file
each task must cite, and no degenerate baseline passes it."""

from __future__ import annotations

import re

from agent_eval.score.citations import normalise
from agent_eval.suite import load_suite
from agent_eval.workflows.audit import audit


def test_every_checked_fact_is_in_a_file_the_task_must_cite() -> None:
    loaded = load_suite("cited")
    assert (loaded.suite.name, loaded.suite.version) == ("Cited answers example suite", "1.0.0")
    assert loaded.documents is not None
    for task in loaded.suite.tasks:
        assert task.expect_citations, task.id
        texts = [normalise((loaded.documents / f).read_text()) for f in task.expect_citations]
        for fact in task.expect_in_answer:
            assert any(fact.lower() in text for text in texts), (task.id, fact)
        if task.expect_regex:
            assert any(re.search(task.expect_regex, t, re.IGNORECASE) for t in texts), task.id
        for wrong in task.expect_not_in_answer:
            assert not any(wrong.lower() in text for text in texts), (task.id, wrong)


def test_no_baseline_passes_a_task_that_asks_for_citations() -> None:
    found = audit("cited", None)
    assert not found.gameable
