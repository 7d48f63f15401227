"""compare says why "beyond attempt noise" and an interval that includes 0 both hold."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

Invoke = Callable[..., tuple[int, str, str]]
MakeResults = Callable[..., Path]
RECONCILED = "The two claims do not conflict: the permutation test is conditional on these"


def test_a_sure_suite_and_an_unsure_population_are_reconciled(
    agent_eval: Invoke, make_results: MakeResults
) -> None:
    # B loses two of five tasks on every attempt and ties the rest: sure on these tasks,
    # not on tasks like them.
    a = {f"t{i}": [True] * 6 for i in range(5)}
    b = {f"t{i}": [i >= 2] * 6 for i in range(5)}
    pa, pb = make_results(a, name="a.json"), make_results(b, name="b.json")
    result = json.loads(agent_eval("compare", pa, pb, "--format", "json")[1])
    assert result["p_fixed_suite"] < 0.05 and result["ci95"][0] < 0 < result["ci95"][1]
    assert f"{RECONCILED} 5 tasks" in result["verdict"]
    assert "the 95% interval generalises over tasks, and it includes 0" in result["verdict"]
    text = agent_eval("compare", pa, pb)[1]
    assert RECONCILED in " ".join(text.split())


def test_no_reconciling_sentence_when_the_claims_agree(
    agent_eval: Invoke, make_results: MakeResults
) -> None:
    a = {f"t{i}": [True] * 4 for i in range(8)}
    b = {f"t{i}": [False] * 3 + [i % 3 == 0] for i in range(8)}  # worse on every task
    pa, pb = make_results(a, name="a.json"), make_results(b, name="b.json")
    result = json.loads(agent_eval("compare", pa, pb, "--format", "json")[1])
    assert result["p_population"] < 0.05 and result["p_fixed_suite"] < 0.05
    assert RECONCILED not in result["verdict"]
