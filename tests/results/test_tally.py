"""The run summary is counted a column at a time: whether rows come all at once, one by
one (as the runner adds them) or in any chunks, in task order or interleaved, the summary
and per-task view are the same, and a loaded run's compact rows count as their full rows."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from agent_eval.records import BadCitation, Checks, StateOutcome
from agent_eval.results import AttemptResult, Tally, compact, iter_rows, load_results, tally

DATA = Path(__file__).with_name("data")
BAD = BadCitation(file="a.md", quote="q", reason="no such file")
PRICES: list[dict[str, float | None] | None] = [
    None,
    {"per_million": 2.0},
    {"input_per_million": 0.5, "output_per_million": 1.5},
]


def _rows(count: int, seed: int) -> list[AttemptResult]:
    """Rows of every failure class, with and without a token split, retries, copied
    shares and unknown classes, several tasks interleaved."""
    rng = random.Random(seed)
    rows = []
    for index in range(count):
        passed = rng.random() < 0.5
        failure = "passed" if passed else rng.choice(["wrong_answer", "infra_error", None])
        state = [StateOutcome(name="file x holds y", ok=passed or rng.random() < 0.5)]
        bad = [] if passed or rng.random() < 0.7 else [BAD]
        checks = Checks(missing=[] if passed else ["4000"], forbidden=[], regex_ok=True,
                        tool_ok=True, within_steps=True, tools_used=["search_documents"],
                        passed=passed, state=state, bad_citations=bad)  # fmt: skip
        split = rng.random() < 0.8
        prompt = rng.randint(1, 900)
        rows.append(
            AttemptResult(
                id=f"task-{rng.randint(1, 7)}",
                category="c",
                attempt=index + 1,
                answer=" ".join(["word"] * rng.randint(0, 40)),
                steps=rng.randint(0, 12),
                tokens=prompt + 10,
                prompt_tokens=prompt if split else None,
                completion_tokens=10 if split else None,
                seconds=round(rng.uniform(0, 9), 3),
                checks=checks,
                failure_class=failure,  # type: ignore[arg-type]
                infra_retries=rng.choice([0, 0, 1, 2]),
                copied_share=rng.choice([None, 0.2, 0.95, 1.0]),
            )
        )
    return rows


def _counted(counted: Tally) -> tuple[Any, ...]:
    return (
        counted.summary().model_dump(mode="json"),
        [task.model_dump(mode="json") for task in counted.per_task()],
        counted.cost(),
    )


@pytest.mark.parametrize("prices", PRICES)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rows_counted_in_any_chunks_give_one_summary(
    seed: int, prices: dict[str, float | None] | None
) -> None:
    rows = _rows(60, seed)
    whole = _counted(tally(rows, prices))
    one_by_one = Tally(prices)
    for row in rows:
        one_by_one.add(row)
    assert _counted(one_by_one) == whole
    chunked, rng, start = Tally(prices), random.Random(seed), 0
    while start < len(rows):
        stop = start + rng.randint(0, 9)
        chunked.add_rows(rows[start:stop])
        start = stop
    assert _counted(chunked) == whole


def test_the_first_failure_is_the_first_failed_row_given() -> None:
    rows = _rows(60, 4)
    counted = tally(rows)
    for task in counted.per_task():
        first = next(r for r in rows if r.id == task.id and not r.passed)
        assert task.first_failure == first.checks.model_dump(mode="json")
        assert task.first_failure_reason == first.failure


@pytest.mark.parametrize("name", ["course-results.json", "schema1-results.json"])
def test_a_loaded_run_counts_as_its_full_rows(name: str) -> None:
    full = list(iter_rows(DATA / name))
    assert _counted(tally(load_results(DATA / name).rows)) == _counted(tally(full))
    assert _counted(tally(compact(row) for row in full)) == _counted(tally(full))


@pytest.mark.parametrize("missing", ["none", "prompt", "completion", "both"])
def test_split_prices_count_only_attempts_with_both_token_counts(missing: str) -> None:
    rows = _rows(60, seed=7)
    for row in rows:
        row.prompt_tokens, row.completion_tokens = 100, 10
    for row in rows[5:12]:
        if missing in ("prompt", "both"):
            row.prompt_tokens = None
        if missing in ("completion", "both"):
            row.completion_tokens = None
    cost = tally(rows, {"input_per_million": 0.5, "output_per_million": 1.5}).cost()
    priced = 60 if missing == "none" else 53
    assert cost["cost_unpriced_attempts"] == 60 - priced
    assert cost["cost_total"] == (priced * 100 * 0.5 + priced * 10 * 1.5) / 1e6
