"""What each page shows, as JSON-ready dicts: the runs, one run's summary and grid, one
attempt, and the comparison of two runs. Figures come from ``report``, so the viewer
and ``agent-eval report`` / ``compare`` never disagree.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from agent_eval.errors import AgentEvalError, ResultsError
from agent_eval.interop import ForeignRun
from agent_eval.report import compare_runs, summarise_run
from agent_eval.results import COURSE_TASK_KEYS, Attempt, RunHead, RunResults
from agent_eval.score import is_copied_pass
from agent_eval.viewer.align import align, step_numbers, went_wrong
from agent_eval.viewer.source import DIFF_LIMIT, Library, RunSource

PAGE = 100
"""Tasks per grid page."""
STEPS_PAGE = 200
"""Trajectory records per page of the attempt timeline."""
TEXT_LIMIT = 20_000
"""Characters kept of any one string in a trajectory record sent to the page."""
NEST_LIMIT = 32
"""Levels of a trajectory record shown; deeper parts are replaced by a note."""
CACHE_ENTRIES = 16
"""Trajectories kept in memory at most..."""
CACHE_BYTES = 64 * 1024 * 1024
"""...and at most this many bytes of their records, so a few large ones push the rest out."""

Shown = tuple[dict[str, Any], list[dict[str, Any]], str | None]
"""An attempt's trajectory as a page shows it: the meta line's object, the records after
it (each string and nesting cut), and what was left out."""


class Views:
    """The viewer's pages over one Library; summaries and trajectories are cached."""

    def __init__(self, library: Library) -> None:
        self.library = library
        self._lock = threading.Lock()
        self._reports: dict[str, tuple[RunResults, dict[str, Any]]] = {}
        self._making: dict[str, threading.Lock] = {}
        # The last trajectories read, by path: (mtime, meta, records, problem, size in bytes).
        self._trajectories: OrderedDict[Path, tuple[float, Shown, int]] = OrderedDict()

    def preload(self) -> None:
        """Read every results file and summarise it now, so that a run opens at once."""
        for source in self.library.runs():
            if source.kind == "results" and source.problem is None:
                with contextlib.suppress(AgentEvalError):  # the run's page names the problem
                    self._report(source.id)

    # -- runs ------------------------------------------------------------------------

    def runs(self) -> dict[str, Any]:
        """Every run with its four numbers and cost, as the runner summarised it."""
        return {"runs": [self._run_card(source) for source in self.library.runs()]}

    def _run_card(self, source: RunSource) -> dict[str, Any]:
        run = source.run
        raw = run.get("summary")
        summary: dict[str, Any] = raw if isinstance(raw, dict) else {}
        root = next((r for r in self.library.roots if source.path.is_relative_to(r)), None)
        shown = source.path.relative_to(root) if root else source.path.name
        return {
            "id": source.id,
            "kind": source.kind,
            "file": str(shown),
            "problem": source.problem,
            "problems": source.problems,
            "in_progress": bool(run.get("in_progress")),
            "run_id": run.get("run_id"),
            "scaffold": run.get("scaffold"),
            "model": run.get("model"),
            "quant": run.get("quant"),
            "suite": run.get("task_set"),
            "suite_version": run.get("task_set_version"),
            "suite_hash": run.get("suite_hash"),
            "date": run.get("date"),
            "attempts": summary.get("runs"),
            "passed": summary.get("passed"),
            "success_rate": summary.get("success_rate"),
            "mean_steps": summary.get("mean_steps"),
            "mean_tokens": summary.get("mean_tokens"),
            "mean_seconds": summary.get("mean_seconds"),
            "cost_per_task": summary.get("cost_per_task"),
        }

    # -- one run ---------------------------------------------------------------------

    def _report(self, run_id: str) -> tuple[RunResults, dict[str, Any]]:
        """The run's rows and ``summarise_run`` of them, worked out once per file version."""
        results = self.library.results(run_id)
        with self._lock:
            making = self._making.setdefault(run_id, threading.Lock())
        with making:
            cached = self._reports.get(run_id)
            if cached is None or cached[0] is not results:
                cached = (results, summarise_run(results))
                self._reports[run_id] = cached
            return cached

    def run(self, run_id: str) -> dict[str, Any]:
        """The run's summary with its uncertainty, as ``report --format json`` gives it."""
        source = self.library.source(run_id)
        results, report = self._report(run_id)
        categories = sorted({task.category for task in results.tasks})
        return {
            "card": self._run_card(source),
            "summary": report["summary"],
            "categories": categories,
            "classes": sorted(report["summary"]["failure_classes"]),
            "repeats": max((task.attempts for task in results.tasks), default=0),
        }

    def grid(
        self,
        run_id: str,
        offset: int = 0,
        limit: int = PAGE,
        failed: bool = False,
        failure_class: str = "",
        category: str = "",
        text: str = "",
        answers: bool = False,
    ) -> dict[str, Any]:
        """A page of the task x attempt grid, after the filters; each cell says whether it
        matches them, so that a task shows all its attempts with the matches marked.
        ``answers`` adds each answer, for a static export that filters in the page."""
        results, report = self._report(run_id)
        needle = text.casefold()

        def matches(row: Attempt) -> bool:
            return (
                (not failed or not row.passed)
                and (not failure_class or _failure_class(row) == failure_class)
                and (not needle or needle in row.answer.casefold())
            )

        filtering = failed or failure_class or needle
        chosen = [
            index
            for index, task in enumerate(results.tasks)
            if (not category or task.category == category)
            and (not filtering or any(matches(row) for row in task.rows))
        ]
        positions = _row_positions(results)
        tasks = []
        for index in chosen[offset : offset + limit]:
            task, figures = results.tasks[index], report["per_task"][index]
            tasks.append(
                {
                    **{key: figures[key] for key in COURSE_TASK_KEYS},
                    "task_id": task.task_id,
                    "pass_hat_k": figures["pass_hat_k"].get(str(task.attempts)),
                    "unstable": figures["unstable"],
                    "min_steps": figures["min_steps"],
                    "max_steps": figures["max_steps"],
                    "min_tokens": min(row.tokens for row in task.rows),
                    "max_tokens": max(row.tokens for row in task.rows),
                    "cells": [
                        {
                            "index": positions[id(row)],
                            "attempt": row.attempt,
                            "failure_class": _failure_class(row),
                            "steps": row.steps,
                            "tokens": row.tokens,
                            "failure": row.failure,
                            "match": bool(filtering) and matches(row),
                            **({"answer": row.answer} if answers else {}),
                        }
                        for row in task.rows
                    ],
                }
            )
        return {"total": len(results.tasks), "matched": len(chosen), "offset": offset,
                "limit": limit, "tasks": tasks}  # fmt: skip

    # -- one attempt -----------------------------------------------------------------

    def attempt(self, run_id: str, index: int) -> dict[str, Any]:
        """The attempt's row, every check's outcome, its diff, task text and the step
        where it went wrong; the records themselves come page by page from ``steps``."""
        results = self.library.results(run_id)
        row = _row(results, index)
        meta, body, problem = self._records(results, row)
        diff, diff_problem = "", None
        try:
            path = self.library.sibling(results, row, ".diff")
            if path is not None and os.path.lexists(path):
                diff, cut = self.library.read_text(path, DIFF_LIMIT)
                if cut:
                    diff += f"\n[... cut: the first {DIFF_LIMIT} bytes of {path.name} are shown]"
        except ResultsError as exc:
            diff_problem = str(exc)
        task = _suite_task(results.run, row.id)
        return {
            "card": self._run_card(self.library.source(run_id)),
            "index": index,
            "task_id": row.id,
            "category": row.category,
            "attempt": row.attempt,
            "passed": row.passed,
            "failure_class": _failure_class(row),
            "failure": row.failure,
            "answer": row.answer,
            "steps": row.steps,
            "tokens": row.tokens,
            "prompt_tokens": row.prompt_tokens,
            "completion_tokens": row.completion_tokens,
            "seconds": row.seconds,
            "stopped": row.stopped,
            # not "error": the page reads that key of any reply as the request's failure
            "attempt_error": row.error,
            "traceback": [f.model_dump() for f in row.traceback or ()],
            "copied_share": row.copied_share,
            "copied": is_copied_pass(row.passed, row.answer, row.copied_share),
            "roles": row.roles,
            "checks": checks_view(row),
            "changed_files": list(row.changed_files or ()),
            "task": meta.get("task") or (task or {}).get("task"),
            "notes": (task or {}).get("notes"),
            "records": len(body),
            "went_wrong": None if row.passed else went_wrong(body, _failure_class(row)),
            "trajectory_problem": problem,
            "diff": diff,
            "diff_problem": diff_problem,
            "recording": bool(row.recording_file),
            "others": [
                {"index": position, "attempt": other.attempt, "passed": other.passed}
                for position, other in _task_rows(results, row.id)
            ],
        }

    def steps(
        self, run_id: str, index: int, offset: int = 0, limit: int = STEPS_PAGE
    ) -> dict[str, Any]:
        """A page of the attempt's trajectory records (the meta line left out)."""
        results = self.library.results(run_id)
        row = _row(results, index)
        _, body, problem = self._records(results, row)
        if row.recording_file:
            body = _with_calls(body, self._calls(results, row)[0])
        return {"total": len(body), "offset": offset, "problem": problem,
                "records": body[offset : offset + limit],
                "numbers": step_numbers(body)[offset : offset + limit]}  # fmt: skip

    def calls(self, run_id: str, index: int) -> dict[str, Any]:
        """The attempt's recorded model calls (run --record), each request and response
        exactly as recorded, strings cut as in the trajectory."""
        results = self.library.results(run_id)
        found, problem = self._calls(results, _row(results, index))
        return {"total": len(found), "problem": problem, "calls": found}

    def _calls(self, results: RunResults, row: Attempt) -> tuple[list[dict[str, Any]], str | None]:
        if not row.recording_file:
            return [], "this attempt was not recorded (run --record records it)"
        candidate = Path(row.recording_file)
        if not candidate.is_absolute():
            candidate = results.path.parent / candidate
        try:  # a recording is JSON lines like a trajectory: read with the same caps
            recording = self.library.read_json_lines(self.library.confined(candidate))
        except ResultsError as exc:
            return [], str(exc)
        calls = [_clip(call) for _, call in recording.values[1:] if isinstance(call, dict)]
        return calls, "; ".join(recording.problems) or None

    def _records(self, results: RunResults, row: Attempt) -> Shown:
        """The attempt's meta line, its records cut for the page, and what was left out."""
        if isinstance(results, ForeignRun):  # another harness's log: records held in memory
            lines = results.records(row)
            meta = lines[0]["meta"] if lines and "meta" in lines[0] else {}
            return meta, [_clip(r) for r in lines if "meta" not in r], None
        try:
            path = self.library.sibling(results, row, ".jsonl")
        except ResultsError as exc:
            return {}, [], str(exc)
        if path is None:
            return {}, [], "this attempt has no trajectory file"
        try:
            mtime = path.stat().st_mtime
        except OSError:
            return {}, [], f"{path.name}: not found (moved or deleted?)"
        with self._lock:
            cached = self._trajectories.get(path)
            if cached is not None and cached[0] == mtime:
                self._trajectories.move_to_end(path)
                return cached[1]
        try:
            read = self.library.read_trajectory(path)
        except ResultsError as exc:
            return {}, [], str(exc)
        shown: Shown = (dict(read.meta or {}), [_clip(r) for r in read.records], read.problem)
        with self._lock:
            self._trajectories[path] = (mtime, shown, read.size + 256 * len(read.records))
            while len(self._trajectories) > CACHE_ENTRIES or (
                len(self._trajectories) > 1
                and sum(entry[2] for entry in self._trajectories.values()) > CACHE_BYTES
            ):
                self._trajectories.popitem(last=False)
        return shown

    # -- two runs --------------------------------------------------------------------

    def compare(self, a: str, b: str, allow_suite_change: bool = False) -> dict[str, Any]:
        """``compare --format json`` for the two runs, each task marked with its flip."""
        result = compare_runs(
            self.library.results(a), self.library.results(b), allow_suite_change=allow_suite_change
        )
        for task in result["per_task"]:
            task["flip"] = flip(task)
        result["cards"] = [self._run_card(self.library.source(x)) for x in (a, b)]
        return result

    def pair(self, a: str, b: str, task_id: str) -> dict[str, Any]:
        """A passing and a failing attempt of one task, from either run, aligned step by
        step with the first divergence marked; ResultsError when the task has no such pair."""
        runs = {a: self.library.results(a), b: self.library.results(b)}
        passing = [
            (rid, i, r) for rid in (a, b) for i, r in _task_rows(runs[rid], task_id) if r.passed
        ]
        failing = [
            (rid, i, r) for rid in (b, a) for i, r in _task_rows(runs[rid], task_id) if not r.passed
        ]
        if not passing or not failing:
            raise ResultsError(
                f"task {task_id}: {'no attempt passed' if not passing else 'no attempt failed'} "
                "in either run, so there is no passing and failing pair to align"
            )
        # Prefer a pair that crosses the runs: A's pass beside B's failure, or the reverse.
        left, right = passing[0], failing[0]
        crossing = [(p, f) for p in passing for f in failing if p[0] != f[0]]
        if crossing:
            left, right = crossing[0]
        sides = []
        for rid, index, row in (left, right):
            _, records, problem = self._records(runs[rid], row)
            sides.append((rid, index, row, records, problem))
        rows, first = align(sides[0][3], sides[1][3])
        return {
            "task_id": task_id,
            "sides": [
                {
                    "run": rid,
                    "label": runs[rid].label,
                    "index": index,
                    "attempt": row.attempt,
                    "passed": row.passed,
                    "failure": row.failure,
                    "answer": row.answer,
                    "problem": problem,
                }
                for rid, index, row, _, problem in sides
            ],
            "rows": rows,
            "first_divergence": first,
        }


def flip(task: dict[str, Any]) -> str:
    """How a task's verdict moved from A to B: pass→fail, fail→pass, unstable or same."""
    a, b = task["rate_a"], task["rate_b"]
    if a == 1 and b == 0:
        return "pass→fail"
    if a == 0 and b == 1:
        return "fail→pass"
    if 0 < a < 1 or 0 < b < 1:
        return "unstable"
    return "same"


def _check(name: str, ok: bool | None, why: str) -> dict[str, Any]:
    return {"name": name, "ok": ok, "detail": why if ok is False else None}


def checks_view(row: Attempt) -> list[dict[str, Any]]:
    """Every check's outcome by name, ok True or False (a check the task does not have
    holds, as in the course harness); a failed one says why."""
    checks = row.check_record()
    missing, forbidden = checks.missing, checks.forbidden
    used = ", ".join(checks.tools_used) or "none"
    view = [
        _check("expect_in_answer", not missing, "missing " + ", ".join(map(repr, missing))),
        _check("expect_not_in_answer", not forbidden, "found " + ", ".join(map(repr, forbidden))),
        _check("expect_regex", checks.regex_ok, "the pattern did not match the answer"),
        _check("expect_tool", checks.tool_ok, f"the expected tool was not used (used: {used})"),
        _check("max_steps", checks.within_steps, f"{row.steps} steps, over the limit"),
        _check("max_tokens", checks.within_tokens, f"{row.tokens} tokens, over the limit"),
        _check("max_seconds", checks.within_seconds, "over the time limit"),
    ]
    for state in checks.state:
        view.append(_check(f"state: {state.name}", state.ok, state.detail or ""))
    view.append({"name": "tools_used", "ok": None, "detail": used})
    return view


def _failure_class(row: Attempt) -> str:
    """The row's failure class; a course-harness row has none, only its verdict."""
    return row.failure_class or ("passed" if row.passed else "failed")


_positions: dict[int, tuple[RunResults, dict[int, int]]] = {}


def _row_positions(results: RunResults) -> dict[int, int]:
    """Each row's index in the file, by identity (rows are tuples and may be equal)."""
    cached = _positions.get(id(results))
    if cached is None or cached[0] is not results:
        if len(_positions) > 8:
            _positions.clear()
        cached = (results, {id(row): index for index, row in enumerate(results.rows)})
        _positions[id(results)] = cached
    return cached[1]


def _task_rows(results: RunResults, task_id: str) -> list[tuple[int, Attempt]]:
    positions = _row_positions(results)
    for task in results.tasks:
        if task.task_id == task_id:
            return [(positions[id(row)], row) for row in task.rows]
    return []


def _row(results: RunResults, index: int) -> Attempt:
    if not 0 <= index < len(results.rows):
        raise ResultsError(f"attempt {index}: the run has {len(results.rows)} attempt(s)")
    return results.rows[index]


def _with_calls(body: list[dict[str, Any]], calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records with each model reply given the number of the recorded call that
    produced it: the n-th model reply came from the n-th completion request."""
    made = iter([c.get("call") for c in calls
                 if c.get("method") == "POST" and "completions" in str(c.get("path"))])  # fmt: skip
    return [{**r, "call": next(made, None)} if r.get("type") == "model" else r for r in body]


def _clip(value: Any, depth: int = 0) -> Any:
    """A record with every string cut to TEXT_LIMIT characters and nesting cut at
    NEST_LIMIT levels, for the page."""
    if isinstance(value, str):
        return value if len(value) <= TEXT_LIMIT else value[:TEXT_LIMIT] + " [... cut for display]"
    if isinstance(value, dict | list) and depth >= NEST_LIMIT:
        return f"[... nested deeper than {NEST_LIMIT} levels; cut for display]"
    if isinstance(value, dict):
        return {str(k): _clip(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_clip(v, depth + 1) for v in value]
    return value


_suites: dict[str, dict[str, dict[str, Any]]] = {}


def _suite_task(run: RunHead, task_id: str) -> dict[str, Any] | None:
    """The task's text and notes from the shipped suite the run used, when its content
    hash matches; None otherwise (a run of a user's own suite shows the trajectory's text)."""
    name, wanted = run.task_set, run.suite_hash
    if wanted is None:
        return None
    if wanted not in _suites:
        from agent_eval.suite import load_suite, shipped_suites

        _suites[wanted] = {}
        for shipped in shipped_suites():
            try:
                loaded = load_suite(shipped)
            except AgentEvalError:
                continue
            if loaded.hash == wanted and loaded.suite.name == name:
                _suites[wanted] = {t.id: t.model_dump() for t in loaded.suite.tasks}
    return _suites[wanted].get(task_id)
