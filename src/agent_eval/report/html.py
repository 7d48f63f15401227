"""The run report as one self-contained HTML page: inline CSS, inline SVG plots, no URL.

Answers, errors and trajectories are model output and may hold markup; every piece of
run content goes through ``html.escape`` so a page cannot run what a model wrote.
"""

from __future__ import annotations

import json
import re
from html import escape
from typing import Any

from agent_eval.report import plots
from agent_eval.report.text import copied_line, figure_rows, fmt, fmt_sig, shown_k_note
from agent_eval.results import NOT_RECORDED, UNKNOWN_CLASS, Attempt, RunResults, TaskOutcome

_NUMBER = re.compile(r"^-?[\d.]+(/\d+)?$")

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 70rem; color: #222; }
table { border-collapse: collapse; margin: 0.5rem 0 1.5rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.6rem; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.fail td:first-child { border-left: 4px solid #e76f51; }
tr.pass td:first-child { border-left: 4px solid #2a9d8f; }
pre { background: #f6f6f6; padding: 0.5rem; overflow-x: auto; white-space: pre-wrap; }
figure { margin: 1rem 0; } figcaption { font-weight: 600; }
svg { max-width: 100%; height: auto; }
"""


def page_head(title: str) -> str:
    """The page's head and its h1, from an already-escaped title."""
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        # Defence in depth behind escaping: the page may load nothing and run no script.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">",
        f"<title>{title}</title><style>{STYLE}</style></head><body>",
        f"<h1>{title}</h1>",
    ])  # fmt: skip


def _table(header: list[str], rows: list[list[str]], classes: list[str] | None = None) -> str:
    """An HTML table from already-escaped cells; numbers get a numeric column class."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = []
    for index, row in enumerate(rows):
        cls = f' class="{classes[index]}"' if classes else ""
        cells = "".join(
            f'<td class="num">{c}</td>' if _NUMBER.match(c) else f"<td>{c}</td>" for c in row
        )
        body.append(f"<tr{cls}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _figures(s: dict[str, Any]) -> str:
    rows = figure_rows(s)
    usable, model = s["usable_success"], s["model_success"]
    rows += [
        [
            "usable success",
            fmt(usable["rate"]),
            "",
            f"{usable['passed']} of {usable['attempts']} attempts, all counted",
        ],
        [
            "model success",
            fmt(model["rate"]),
            "",
            f"{model['passed']} of {model['attempts']} attempts, infra errors excluded",
        ],
    ]
    if s["cost"] is not None:
        per_attempt = fmt_sig(s["cost"]["cost_per_task"])
        rows.append(["cost", fmt_sig(s["cost"]["cost_total"]), "",
                     f"{per_attempt} per attempt, at the price given"])  # fmt: skip
    rows += [
        ["mean steps", fmt_sig(s["mean_steps"]), "", "per attempt"],
        ["mean tokens", fmt_sig(s["mean_tokens"]), "", "per attempt"],
        ["mean seconds", fmt_sig(s["mean_seconds"]), "", "per attempt"],
    ]
    table = _table(
        ["figure", "value", "95% interval", "note"], [[escape(c) for c in row] for row in rows]
    )
    note = shown_k_note(list(s["pass_at_k"]))
    return table + (f"<p>{escape(note)}</p>" if note else "")


EVERY_ATTEMPT_UP_TO = 1_000
"""Up to this many attempts the page shows every one with its trajectory. Past it, a page
of every attempt runs to tens of megabytes, so it shows failing attempts only, the same
number for each task, at most SHOWN_AT_MOST in all, and says what it left out."""
SHOWN_AT_MOST = 1_000
"""Attempts a large run's page shows in detail."""
TRAJECTORY_LIMIT = 20_000
"""Characters of each trajectory a page embeds."""
LARGE_TRAJECTORY_LIMIT = 5_000
"""Characters of each trajectory a large run's page embeds."""


def _attempt(results: RunResults, row: Attempt, trajectory_limit: int) -> str:
    """One attempt's heading, answer, checks, error and trajectory, all escaped."""
    checks = json.dumps(row.check_record().model_dump(), ensure_ascii=False)
    block = [
        f"<h4>r{row.attempt}: {escape(row.failure_class or UNKNOWN_CLASS)}, "
        f"{row.steps} step(s), {row.tokens} tok, {row.seconds:.1f}s, "
        f"stopped: {escape(row.stopped or '-')}</h4>",
        f"<pre>{escape(row.answer)}</pre>",
        f"<p>checks: <code>{escape(checks)}</code></p>",
    ]
    if row.error:
        block.append(f"<p>error: <code>{escape(row.error)}</code></p>")
    trajectory = results.trajectory_text(row, trajectory_limit)
    if trajectory is not None:
        block.append(
            f"<details><summary>trajectory</summary><pre>{escape(trajectory)}</pre></details>"
        )
    return "".join(block)


def _task_details(task: TaskOutcome, body: str) -> str:
    return (
        f"<details><summary>{escape(task.task_id)} ({task.passes}/{task.attempts} passed)"
        f"</summary>{body}</details>"
    )


def _attempts(results: RunResults) -> str:
    """Every attempt of every task or, for a large run, each task's first failing attempts
    as many as fit in SHOWN_AT_MOST, with a count of what was left out; answers, errors and
    trajectories escaped.
    """
    tasks = results.tasks
    if len(results.rows) <= EVERY_ATTEMPT_UP_TO:
        return "".join(
            _task_details(
                task, "".join(_attempt(results, row, TRAJECTORY_LIMIT) for row in task.rows)
            )
            for task in tasks
        )
    failed = [[row for row in task.rows if not row.passed] for task in tasks]
    counts = [len(rows) for rows in failed]
    most, each = max(counts), 0  # each: failing attempts shown per task, alike for all
    while each < most and sum(min(c, each + 1) for c in counts) <= SHOWN_AT_MOST:
        each += 1
    parts, shown = [], 0
    for task, rows in zip(tasks, failed, strict=True):
        # With more failing tasks than SHOWN_AT_MOST, the first ones show one each.
        chosen = rows[:each] if each else rows[: 1 if shown < SHOWN_AT_MOST else 0]
        shown += len(chosen)
        body = "".join(_attempt(results, row, LARGE_TRAJECTORY_LIMIT) for row in chosen)
        failing = len(rows) - len(chosen)
        if failing or task.passes:
            body += (
                f"<p>Not shown: {failing + task.passes} attempt(s) of this task "
                f"({failing} failing, {task.passes} passing).</p>"
            )
        parts.append(_task_details(task, body))
    if each == most:
        which = "every failing attempt of each task"
    elif each == 1:
        which = "the first failing attempt of each task"
    elif each:
        which = f"the first {each} failing attempts of each task"
    else:
        which = f"the first failing attempt of the first {shown:,} tasks with a failure"
    note = (
        f"<p>This run has {len(results.rows):,} attempts, too many to show on one page, so "
        f"this page shows {which}: {shown:,} attempt(s) shown, {len(results.rows) - shown:,} "
        "left out. Every attempt, with its answer, checks and trajectory file, is in the "
        f"results file <code>{escape(str(results.path))}</code>.</p>"
    )
    return note + "".join(parts)


UNSTABLE_NAMED = 50
"""Unstable tasks named by the line above the plots; the task table shows the rest."""


def _unstable(task_ids: list[str], tasks: int) -> str:
    """The unstable tasks, by name up to UNSTABLE_NAMED of them."""
    named = ", ".join(escape(t) for t in task_ids[:UNSTABLE_NAMED]) or "none"
    if len(task_ids) <= UNSTABLE_NAMED:
        return named
    return (
        f"{len(task_ids)} of {tasks} tasks passed in some attempts and failed in others: "
        f"{named} and {len(task_ids) - UNSTABLE_NAMED} more (the task table has them all)"
    )


def render_html(results: RunResults, report: dict[str, Any]) -> str:
    """One self-contained HTML page for a run, from the results and ``summarise_run``."""
    s, run = report["summary"], report["summary"]["run"]
    title = escape(
        f"{run['scaffold']} x {run['model']}: {run['task_set']} {run['task_set_version']}"
    )
    per_task = report["per_task"]
    tasks = _table(
        ["task", "category", "passed", "rate", "steps", "tokens", "first failure"],
        [
            [
                escape(r["task_id"]),
                escape(r["category"]),
                f"{r['successes']}/{r['attempts']}",
                fmt(r["success_rate"], 2),
                f"{r['mean_steps']:.1f}",
                f"{r['mean_tokens']:.0f}",
                escape(r["failures"][0]) if r["failures"] else "",
            ]
            for r in per_task
        ],
        ["pass" if r["successes"] == r["attempts"] else "fail" for r in per_task],
    )
    classes = _table(
        ["failure class", "attempts"],
        [[escape(k), str(v)] for k, v in s["failure_classes"].items()],
    )
    unstable = _unstable(s["unstable_tasks"], s["tasks"])
    return "\n".join(
        [
            page_head(title),
            f"<p>{s['tasks']} task(s), {escape(str(run['repeats']))} attempt(s) each · run "
            f"<code>{escape(str(run['run_id']))}</code> · {escape(str(run['date']))} · suite hash "
            f"<code>{escape(str(run['suite_hash'] or NOT_RECORDED))}</code></p>",
            f"<p><strong>{escape(s['headline'])}</strong></p>",
            "<h2>Figures</h2>",
            _figures(s),
            f"<p>Unstable tasks: {unstable}</p>",
            f'<p class="warn" id="copied">{escape(copied_line(s))}</p>'
            if s["copied_passes"]
            else "",
            "<h2>Failure classes</h2>",
            classes,
            "<h2>Plots</h2>",
            f"<figure><figcaption>Success per category</figcaption>"
            f"{plots.success_by_category(s)}</figure>"
            if s["categories"]
            else "",
            f"<figure><figcaption>Steps per task</figcaption>{plots.steps_per_task(per_task)}"
            f"</figure>"
            if per_task
            else "",
            f"<figure><figcaption>Tokens against success</figcaption>"
            f"{plots.tokens_against_success(per_task)}</figure>"
            if per_task
            else "",
            "<h2>Tasks</h2>",
            tasks,
            "<h2>Attempts</h2>",
            _attempts(results),
            "</body></html>",
            "",
        ]
    )
