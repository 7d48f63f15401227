"""The short lesson several runs of one suite teach: what each scaffold scored, at what
cost, which differences between them are real, and which tasks are unstable.

It is built from results files alone, with the same statistics as ``report`` and
``compare`` (the task is the unit; the fixed-suite claim uses the exact within-task
permutation test, the claim about tasks like these the paired t test), so every figure
in it can be checked against the full reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Any

from agent_eval.report.compare import compare_runs, p_words
from agent_eval.report.run_report import summarise_run
from agent_eval.results import RunResults

ALPHA = 0.05
"""The level at which a difference counts as shown."""


def render_lesson(
    runs: Sequence[RunResults], price_per_million: float, price_is_example: bool = True
) -> str:
    """The lesson of ``runs`` (one suite, several scaffolds) as plain text.

    ``price_per_million`` prices every token alike; when ``price_is_example`` the table
    says it is an example, for the reader to replace with their own.
    """
    if not runs:
        return "No runs to compare."
    reports = [summarise_run(run)["summary"] for run in runs]
    order = sorted(range(len(runs)), key=lambda i: -(reports[i]["success_rate"] or 0.0))
    lines = _table([runs[i] for i in order], [reports[i] for i in order], price_per_million)
    source = "an example price: replace it with yours" if price_is_example else "your price"
    lines.append(f"cost at {price_per_million:g} per million tokens, {source}")
    lines += ["", *_comparisons([runs[i] for i in order])]
    lines += ["", *_unstable([runs[i] for i in order])]
    return "\n".join(lines)


def _name(run: RunResults) -> str:
    return run.run.scaffold or run.label


def _table(
    runs: Sequence[RunResults], reports: Sequence[dict[str, Any]], price: float
) -> list[str]:
    width = max(len("scaffold"), *(len(_name(r)) for r in runs))
    head = (
        f"{'scaffold':<{width}}  {'success (95% interval)':<24}  {'steps':>5}  "
        f"{'tokens':>7}  {'seconds':>7}  {'cost/attempt':>12}"
    )
    lines = [head]
    for run, report in zip(runs, reports, strict=True):
        rate = report["success_rate"]
        ci = report["task_ci95"]
        shown = "-" if rate is None else f"{rate:.2f}"
        if rate is not None and ci is not None:
            shown += f" [{ci[0]:.2f}, {ci[1]:.2f}]"
        shown += f" {report['passed']}/{report['attempts']}"
        tokens = report["mean_tokens"] or 0.0
        lines.append(
            f"{_name(run):<{width}}  {shown:<24}  {report['mean_steps'] or 0:>5.1f}  "
            f"{tokens:>7.0f}  {report['mean_seconds'] or 0:>7.1f}  "
            f"{tokens * price / 1e6:>12.6f}"
        )
    tasks, repeats = reports[0]["tasks"], runs[0].run.repeats
    lines.append(
        f"{tasks} tasks x {repeats} attempts each; the interval is over tasks "
        "(attempts of one task are not independent)"
    )
    return lines


def _comparisons(runs: Sequence[RunResults]) -> list[str]:
    """Each pair, stronger first, with its verdict in plain words."""
    if len(runs) < 2:
        return []
    lines = ["Which differences are real? (paired by task)"]
    for stronger, weaker in combinations(runs, 2):
        result = compare_runs(weaker, stronger, alpha=ALPHA, allow_suite_change=True)
        lines += pair_verdict(_name(stronger), _name(weaker), result)
    return lines


def pair_verdict(b: str, a: str, r: dict[str, Any]) -> list[str]:
    """Two or three lines on "B against A" from a ``compare_runs`` result."""
    diff, n = r["difference"], r["tasks"]
    if diff is None:
        return [f"- {b} vs {a}: no task has attempts in both runs"]
    head = f"- {b} vs {a}: {diff:+.2f}"
    if r["ci95"] is not None:
        head += f" (95% interval {r['ci95'][0]:+.2f} to {r['ci95'][1]:+.2f})"
    p_fixed, p_pop = r["p_fixed_suite"], r["p_population"]
    if diff == 0:
        lines = [head + f": level on average over these {n} tasks."]
        if r["mde"] is not None:
            lines.append(
                f"  A real difference smaller than about {r['mde']:.2f} could hide in the "
                f"noise of {n} tasks."
            )
        return lines
    if p_fixed <= ALPHA:
        fixed = f"real on exactly these {n} tasks (p {p_words(p_fixed)}, {r['fixed_suite_test']})"
    else:
        fixed = (
            f"within attempt noise, even on exactly these {n} tasks "
            f"(p {p_words(p_fixed)}, {r['fixed_suite_test']})"
        )
    lines = [f"{head}: {fixed}."]
    if p_pop is not None and p_pop <= ALPHA:
        lines.append(f"  Also shown for tasks like these (paired t p {p_words(p_pop)}).")
        return lines
    lines.append(f"  Not shown for tasks like these (paired t p {p_words(p_pop)}); {_more(r)}.")
    return lines


def _more(r: dict[str, Any]) -> str:
    """How many tasks (and whether repeats could help) to show this difference in general."""
    gap = f"a gap of {abs(r['difference']):.2f}"
    repeats = f"{r['repeats']:.0f}" if r["repeats"] is not None else "these"
    tasks = (
        f"about {r['tasks_needed']} tasks at {repeats} attempts each would show {gap}"
        if r["tasks_needed"] is not None
        else f"more tasks are needed to show {gap}"
    )
    if r["sigma2_a"] is not None and r["repeats_needed"] is None:
        return f"{tasks}; no number of repeats is enough, add tasks"
    if r["repeats_needed"] is not None:
        return f"{tasks}, or about {r['repeats_needed']} attempts per task at {r['tasks']} tasks"
    return tasks


def _unstable(runs: Sequence[RunResults]) -> list[str]:
    """Tasks passed in some attempts and failed in others: where repeats matter."""
    lines = ["Unstable tasks (passed in some attempts, failed in others):"]
    for run in runs:
        shaky = [
            f"{t.task_id} {t.passes}/{t.attempts}" for t in run.tasks if 0 < t.passes < t.attempts
        ]
        lines.append(f"- {_name(run)}: {', '.join(shaky) if shaky else 'none'}")
    return lines
