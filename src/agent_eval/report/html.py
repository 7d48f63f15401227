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
from agent_eval.report.results import RunResults
from agent_eval.report.text import fmt, fmt_interval

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


def _table(header: list[str], rows: list[list[str]], classes: list[str] | None = None) -> str:
    """An HTML table from already-escaped cells; numbers get a numeric column class."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = []
    for index, row in enumerate(rows):
        cls = f' class="{classes[index]}"' if classes else ""
        cells = "".join(f'<td class="num">{c}</td>' if _NUMBER.match(c) else f"<td>{c}</td>"
                        for c in row)
        body.append(f"<tr{cls}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _figures(s: dict[str, Any]) -> str:
    rows = [["success rate", fmt(s["success_rate"]), fmt_interval(s["wilson95"]),
             f"Wilson, {s['passed']} of {s['attempts']} attempts"],
            ["mean over tasks", fmt(s["task_mean"]), fmt_interval(s["task_ci95"]),
             f"SE {fmt(s['task_se'])}"]]
    rows += [[f"pass@{k}", fmt(v), "", f"SE {fmt(s['pass_at_k_se'][k])}"]
             for k, v in s["pass_at_k"].items()]
    rows += [[f"pass^{k}", fmt(v), "", f"SE {fmt(s['pass_hat_k_se'][k])}"]
             for k, v in s["pass_hat_k"].items()]
    if s["within_task_var"] is not None:
        rows += [["within-task var", fmt(s["within_task_var"], 4), "", "attempt noise"],
                 ["between-task var", fmt(s["between_task_var"], 4), "",
                  "true differences between tasks"]]
    usable, model = s["usable_success"], s["model_success"]
    rows += [["usable success", fmt(usable["rate"]), "",
              f"{usable['passed']} of {usable['attempts']} attempts, all counted"],
             ["model success", fmt(model["rate"]), "",
              f"{model['passed']} of {model['attempts']} attempts, infra errors excluded"]]
    if s["cost"] is not None:
        rows.append(["cost", fmt(s["cost"]["cost_total"], 4), "", "with the price given"])
    return _table(["figure", "value", "95% interval", "note"],
                  [[escape(c) for c in row] for row in rows])


def _attempts(results: RunResults) -> str:
    """Every attempt of every task, with its answer, checks and trajectory, escaped."""
    parts = []
    for task in results.tasks:
        items = []
        for row in task.rows:
            checks = json.dumps(row.check_record().model_dump(), ensure_ascii=False)
            block = [f"<h4>r{row.attempt}: {escape(row.failure_class)}, {row.steps} step(s), "
                     f"{row.tokens} tok, {row.seconds:.1f}s, stopped: {escape(row.stopped)}</h4>",
                     f"<pre>{escape(row.answer)}</pre>",
                     f"<p>checks: <code>{escape(checks)}</code></p>"]
            if row.error:
                block.append(f"<p>error: <code>{escape(row.error)}</code></p>")
            trajectory = results.trajectory_text(row)
            if trajectory is not None:
                block.append(f"<details><summary>trajectory</summary>"
                             f"<pre>{escape(trajectory)}</pre></details>")
            items.append("".join(block))
        parts.append(f"<details><summary>{escape(task.task_id)} "
                     f"({task.passes}/{task.attempts} passed)</summary>{''.join(items)}</details>")
    return "".join(parts)


def render_html(results: RunResults, report: dict[str, Any]) -> str:
    """One self-contained HTML page for a run, from the results and ``summarise_run``."""
    s, run = report["summary"], report["summary"]["run"]
    title = escape(f"{run['scaffold']} x {run['model']}: {run['task_set']} "
                   f"{run['task_set_version']}")
    per_task = report["per_task"]
    tasks = _table(["task", "category", "passed", "rate", "steps", "tokens", "first failure"],
                   [[escape(r["task_id"]), escape(r["category"]),
                     f"{r['successes']}/{r['attempts']}", fmt(r["success_rate"], 2),
                     f"{r['mean_steps']:.1f}", f"{r['mean_tokens']:.0f}",
                     escape(r["failures"][0]) if r["failures"] else ""] for r in per_task],
                   ["pass" if r["successes"] == r["attempts"] else "fail" for r in per_task])
    classes = _table(["failure class", "attempts"],
                     [[escape(k), str(v)] for k, v in s["failure_classes"].items()])
    unstable = ", ".join(escape(t) for t in s["unstable_tasks"]) or "none"
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        # Defence in depth behind escaping: the page may load nothing and run no script.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        'style-src \'unsafe-inline\'">',
        f"<title>{title}</title><style>{STYLE}</style></head><body>",
        f"<h1>{title}</h1>",
        f"<p>{s['tasks']} task(s), {escape(str(run['repeats']))} attempt(s) each · run "
        f"<code>{escape(str(run['run_id']))}</code> · {escape(str(run['date']))} · suite hash "
        f"<code>{escape(str(run['suite_hash']))}</code></p>",
        "<h2>Figures</h2>", _figures(s), f"<p>Unstable tasks: {unstable}</p>",
        "<h2>Failure classes</h2>", classes,
        "<h2>Plots</h2>",
        f"<figure><figcaption>Success per category</figcaption>"
        f"{plots.success_by_category(s)}</figure>" if s["categories"] else "",
        f"<figure><figcaption>Steps per task</figcaption>{plots.steps_per_task(per_task)}"
        f"</figure>" if per_task else "",
        f"<figure><figcaption>Tokens against success</figcaption>"
        f"{plots.tokens_against_success(per_task)}</figure>" if per_task else "",
        "<h2>Tasks</h2>", tasks, "<h2>Attempts</h2>", _attempts(results),
        "</body></html>", ""])
