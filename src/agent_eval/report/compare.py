"""Compare two runs paired by task id, and say in plain words whether the change is real.

Two claims are kept apart (docs/statistics.md): (a) "B is better on tasks like these", about the
population of tasks, tested with the paired t test; and (b) "B beats A on exactly this
suite", tested with the exact within-task permutation test. The verdict names which
claim it makes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agent_eval.errors import ConfigError
from agent_eval.interop import task_differences
from agent_eval.report.figures import paired_figures, task_figures
from agent_eval.report.text import short_hash
from agent_eval.results import RunHead, RunResults, TaskOutcome
from agent_eval.score import (
    PermutationTest,
    cluster_labels,
    clustered_mean,
    clustered_t_p,
    effective_variance,
    is_copied_pass,
    permutation_test,
    planning,
    stats,
)


def _check_suites(
    a: RunTotals, b: RunTotals, differences: list[str] | None, allow_suite_change: bool
) -> bool:
    """True when the suites differ and that was allowed; ConfigError when not allowed.

    A run that recorded no suite hash (the course harness records none) is taken to
    match by suite name and version; ``unverified_suites`` names it for a warning.
    """
    if differences is not None:  # another harness's run: its tasks are what it can state
        if differences and not allow_suite_change:
            raise ConfigError(
                f"compare {a.path} {b.path}: the runs hold different tasks "
                f"({'; '.join(differences)}), so a difference could come from the tasks "
                "rather than the agents; pass --allow-suite-change to pair the task ids "
                "they share"
            )
        return bool(differences)
    hash_a, hash_b = a.run.suite_hash, b.run.suite_hash
    if hash_a is None or hash_b is None:
        key_a = (a.run.task_set, a.run.task_set_version)
        same = key_a == (b.run.task_set, b.run.task_set_version)
    else:
        same = hash_a == hash_b
    if same:
        return False
    if not allow_suite_change:
        raise ConfigError(
            f"compare {a.path} {b.path}: the runs used different suites "
            f"({a.run.task_set} {a.run.task_set_version} hash {short_hash(hash_a)} "
            f"against {b.run.task_set} {b.run.task_set_version} hash "
            f"{short_hash(hash_b)}), so a "
            "difference could come from the tasks rather than the agents; re-run both on one "
            "suite, or pass --allow-suite-change to pair the task ids they share"
        )
    return True


def unverified_suites(*runs: RunResults | RunTotals) -> list[str]:
    """The files among ``runs`` that recorded no suite hash, so that nobody can tell
    whether their tasks were the same."""
    return [str(run.path) for run in runs if run.run.suite_hash is None]


@dataclass(frozen=True)
class TaskTotals:
    """What a comparison reads of one task's attempts, worked out from its rows once."""

    task_id: str
    """The task's id."""
    category: str
    """The task's category (from its first attempt)."""
    group: str | None
    """The task's group (from its first attempt), for --cluster group."""
    attempts: int
    """How many attempts the task had."""
    passes: int
    """How many attempts passed."""
    copied: int
    """How many passes are flagged as copied (score.copied)."""
    figures: dict[str, float | None]
    """The mean of each figure over the attempts (figures.task_figures)."""

    @property
    def rate(self) -> float:
        """The task's pass rate m_i, as TaskOutcome.rate."""
        return self.passes / self.attempts if self.attempts else 0.0


@dataclass(frozen=True)
class RunTotals:
    """What a comparison reads of one run: its head and its tasks' totals.

    A few kilobytes however many attempts the run has, so that the command line can load
    and total one run in a second process while it loads the other.
    """

    path: Path
    """The file it was read from."""
    run: RunHead
    """The ``run`` object of the file."""
    tasks: tuple[TaskTotals, ...]
    """The tasks, in first-seen order."""

    @property
    def label(self) -> str:
        """As RunResults.label."""
        return self.run.label


def run_totals(results: RunResults) -> RunTotals:
    """The totals of every task of a loaded run."""
    prices = results.prices
    return RunTotals(
        results.path,
        results.run,
        tuple(
            TaskTotals(
                task.task_id,
                task.category,
                task.rows[0].group,
                task.attempts,
                task.passes,
                _flagged(task),
                task_figures(task, prices),
            )
            for task in results.tasks
        ),
    )


def _flagged(task: TaskOutcome) -> int:
    """The task's passes flagged as copied."""
    # Only a row with a copied share can be flagged; most rows carry none.
    shared = [r for r in task.rows if r.copied_share is not None]
    return sum(is_copied_pass(r.passed, r.answer, r.copied_share) for r in shared)


def _task_change(task_a: TaskTotals, task_b: TaskTotals) -> dict[str, Any]:
    difference = task_b.rate - task_a.rate
    change = "better" if difference > 0 else "worse" if difference < 0 else "same"
    return {
        "task_id": task_a.task_id,
        "category": task_a.category,
        "a": f"{task_a.passes}/{task_a.attempts}",
        "b": f"{task_b.passes}/{task_b.attempts}",
        "rate_a": task_a.rate,
        "rate_b": task_b.rate,
        "difference": difference,
        "change": change,
    }


def compare_runs(
    a: RunResults,
    b: RunResults,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    delta: float | None = None,
    allow_suite_change: bool = False,
    cluster: str = "none",
) -> dict[str, Any]:
    """The paired comparison of run B against run A, as the compare JSON contract.

    ``cluster`` (none, group, category) makes the paired SE, interval, t test and the
    planning figures cluster-robust; the exact permutation test is within tasks either way.
    """
    return compare_totals(
        run_totals(a),
        run_totals(b),
        differences=task_differences(a, b),
        alpha=alpha,
        power=power,
        delta=delta,
        allow_suite_change=allow_suite_change,
        cluster=cluster,
    )


def compare_totals(
    a: RunTotals,
    b: RunTotals,
    *,
    differences: list[str] | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    delta: float | None = None,
    allow_suite_change: bool = False,
    cluster: str = "none",
) -> dict[str, Any]:
    """``compare_runs`` of two runs' totals; ``differences`` is ``task_differences`` of
    the runs (None for two agent-eval runs, whose suite hashes say it)."""
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ConfigError(
            f"compare: --alpha {alpha} and --power {power} must each lie "
            "strictly between 0 and 1 (for example --alpha 0.05 --power 0.8)"
        )
    if delta is not None and not 0 < delta <= 1:
        raise ConfigError(
            f"compare: --delta {delta} must be a difference in success rate "
            "in (0, 1], for example 0.1"
        )
    suite_changed = _check_suites(a, b, differences, allow_suite_change)
    tasks_a = {t.task_id: t for t in a.tasks}
    tasks_b = {t.task_id: t for t in b.tasks}
    shared = [task_id for task_id in tasks_a if task_id in tasks_b]
    if not shared:
        raise ConfigError(
            f"compare {a.path} {b.path}: the runs share no task id, so there "
            "is nothing to pair; compare runs of the same suite"
        )
    pairs = [
        (tasks_a[t].attempts, tasks_a[t].passes, tasks_b[t].attempts, tasks_b[t].passes)
        for t in shared
    ]
    paired = stats.paired_comparison(pairs, 1 - alpha)
    permutation = permutation_test(pairs)
    plan = planning.plan_from_pairs(pairs, delta, alpha, power)
    d, p_population, clusters = paired.difference, paired.p_population, len(shared)
    if cluster != "none":
        found = clustered_mean(list(paired.differences),
                               _task_clusters([tasks_a[t] for t in shared], cluster),
                               1 - alpha, bounds=(-1, 1))  # fmt: skip
        d, p_population, clusters = found.estimate, clustered_t_p(found), found.clusters
        spread = effective_variance(found)
        plan = planning.plan_from_pairs(pairs, delta, alpha, power, diff_variance=spread)
        if spread is None:  # one cluster, or no spread: there is nothing to plan from
            why = dict.fromkeys(("omega2", "repeats_needed", "tasks_needed", "mde"),
                                d.why_not or "no cluster-robust spread")  # fmt: skip
            plan = replace(plan, omega2=None, repeats_needed=None, tasks_needed=None, mde=None,
                           not_estimable={**plan.not_estimable, **why})  # fmt: skip
    worse = d.mean is not None and d.mean < 0 and permutation.p_value <= alpha
    result: dict[str, Any] = {
        "a": {"label": a.label, "run_id": a.run.run_id, "path": str(a.path)},
        "b": {"label": b.label, "run_id": b.run.run_id, "path": str(b.path)},
        "suite_changed": suite_changed,
        "unverified_suites": unverified_suites(a, b),
        "only_a": [t for t in tasks_a if t not in tasks_b],
        "only_b": [t for t in tasks_b if t not in tasks_a],
        "tasks": paired.n,
        "mean_a": paired.mean_a,
        "mean_b": paired.mean_b,
        "difference": d.mean,
        "se_paired": d.se,
        "ci95": None if d.lo is None or d.hi is None else [d.lo, d.hi],
        "se_unpaired": paired.se_unpaired,
        "correlation": paired.correlation,
        "p_fixed_suite": permutation.p_value,
        "p_fixed_suite_exact": permutation.exact,
        "fixed_suite_test": _test_name(pairs, permutation),
        "p_population": p_population,
        "cluster": {"by": cluster, "clusters": clusters},
        "alpha": alpha,
        "power": power,
        "delta": plan.delta,
        "repeats": plan.repeats,
        "sigma2_a": plan.sigma2_a,
        "sigma2_b": plan.sigma2_b,
        "omega2": plan.omega2,
        "repeats_needed": plan.repeats_needed,
        "tasks_needed": plan.tasks_needed,
        "mde": plan.mde,
        "worse_beyond_noise": worse,
        "figures": paired_figures(
            [tasks_a[t].figures for t in shared], [tasks_b[t].figures for t in shared], 1 - alpha
        ),
        "per_task": [_task_change(tasks_a[t], tasks_b[t]) for t in shared],
        "not_estimable": _not_estimable(paired, plan),
    }
    result["copied"] = _copied(tasks_a, tasks_b, shared, d.mean, (pairs, paired, permutation))
    result["verdict"] = verdict(result)
    return result


def _task_clusters(tasks: list[TaskTotals], by: str) -> list[str]:
    """Each task's cluster label under ``--cluster by``, as run_report.task_clusters."""
    return cluster_labels(
        [t.task_id for t in tasks], by,
        {t.task_id: t.group for t in tasks}, {t.task_id: t.category for t in tasks},
    )  # fmt: skip


def _copied(
    tasks_a: dict[str, TaskTotals],
    tasks_b: dict[str, TaskTotals],
    shared: list[str],
    difference: float | None,
    found: tuple[list[stats.PairCount], stats.PairedComparison, PermutationTest],
) -> dict[str, Any]:
    """The passes flagged as copied on each side (score.copied), and the difference and
    permutation p with them counted as failures: whether the flagged passes move it.
    ``found`` is the comparison's own pairs, paired figures and test, which stand when
    no pass is flagged (the same pairs, so the same figures, without a second test)."""
    counts = {t: (tasks_a[t].copied, tasks_b[t].copied) for t in shared}
    pairs = [
        (tasks_a[t].attempts, tasks_a[t].passes - counts[t][0],
         tasks_b[t].attempts, tasks_b[t].passes - counts[t][1])
        for t in shared
    ]  # fmt: skip
    if pairs == found[0]:
        without, p_without = found[1].difference.mean, found[2].p_value
    else:
        without = stats.paired_comparison(pairs, 0.95).difference.mean
        p_without = permutation_test(pairs).p_value
    moves = (
        difference is not None and without is not None and round(without, 3) != round(difference, 3)
    )
    return {
        "a": sum(a for a, _ in counts.values()),
        "b": sum(b for _, b in counts.values()),
        "difference_without": without,
        "p_fixed_suite_without": p_without,
        "moves_difference": moves,
    }


def _not_estimable(paired: stats.PairedComparison, plan: planning.Plan) -> dict[str, str]:
    """Why each figure of the comparison that is null could not be estimated, by its key."""
    why: dict[str, str] = {}
    if paired.difference.why_not is not None:
        why["se_paired"] = why["ci95"] = paired.difference.why_not
    return {**why, **paired.not_estimable, **plan.not_estimable}


def _test_name(pairs: list[stats.PairCount], permutation: PermutationTest) -> str:
    """Which test gave p_fixed_suite, so that a reader can check it."""
    if not permutation.exact:
        return f"within-task permutation, Monte Carlo ({permutation.permutations} draws)"
    if all(p[0] == 1 and p[2] == 1 for p in pairs):
        return "McNemar exact (one attempt each)"
    return "exact within-task permutation"


def p_words(value: float | None) -> str:
    """A p-value for a sentence: "< 0.001", "= 0.042", or "undefined"."""
    if value is None:
        return "undefined"
    return "< 0.001" if value < 0.001 else f"= {value:.3f}"


def _planning_sentence(r: dict[str, Any]) -> str:
    power = f"{r['power']:.0%} power at alpha {r['alpha']:g}"
    if r["cluster"]["by"] != "none" and r["cluster"]["clusters"] < 2:
        return (
            f"All paired tasks fall in one {r['cluster']['by']} cluster, so the cluster-robust "
            "uncertainty is undefined and nothing can be planned from it: add tasks from "
            "other clusters, or report with --cluster none."
        )
    why = r["not_estimable"]
    mde = ""
    if r["mde"] is not None:
        mde = (
            f" The smallest difference these {r['tasks']} tasks can detect is about {r['mde']:.3f}."
        )
    elif "mde" in why:
        mde = f" The smallest difference they can detect cannot be estimated: {why['mde']}."
    if r["tasks"] < 2 or why.get("repeats_needed") == planning.NO_VARIATION:
        return f"Nothing can be planned from these runs: {why['repeats_needed']}."
    if r["sigma2_a"] is None or r["sigma2_b"] is None:
        return (
            "Repeats >= 2 per task are needed to plan: with one attempt per task, attempt "
            "noise cannot be told apart from real differences between tasks." + mde
        )
    if r["delta"] == 0:
        return (
            "The runs tie on average, so there is no difference to plan for; give --delta "
            "to plan for one." + mde
        )
    if r["repeats_needed"] is None:
        more = (
            f" (about {r['tasks_needed']} tasks at {r['repeats']:.0f} repeats each)"
            if r["tasks_needed"] is not None
            else ""
        )
        return (
            f"To show a difference of {r['delta']:.3f} on tasks like these with {power}, "
            f"no number of repeats is enough: add tasks{more}. The tasks differ from one "
            "another more than repeats can average away." + mde
        )
    return (
        f"To show a difference of {r['delta']:.3f} on tasks like these with {power}, about "
        f"{r['repeats_needed']} repeats per task are needed at {r['tasks']} tasks (these runs "
        f"had {r['repeats']:.3g})." + mde
    )


def verdict(r: dict[str, Any]) -> str:
    """One plain-language paragraph that says which claim the numbers support."""
    diff, alpha = r["difference"], r["alpha"]
    if diff is None:
        return "No task has attempts in both runs, so there is nothing to compare."
    direction = "better than" if diff > 0 else "worse than" if diff < 0 else "level with"
    head = (
        f"Over {r['tasks']} shared task(s), B scores {r['mean_b']:.3f} against A's "
        f"{r['mean_a']:.3f}, a difference of {diff:+.3f}"
    )
    if r["ci95"] is not None:
        head += f" (95% interval [{r['ci95'][0]:+.3f}, {r['ci95'][1]:+.3f}])"
    elif "ci95" in r["not_estimable"]:
        head += f" (its interval cannot be estimated: {r['not_estimable']['ci95']})"
    fixed_ok = r["p_fixed_suite"] <= alpha and diff != 0
    pop_ok = r["p_population"] is not None and r["p_population"] <= alpha and diff != 0
    if fixed_ok:
        claim_b = (
            f"Claim (b), on exactly this suite: B is {direction} A beyond attempt noise "
            f"({r['fixed_suite_test']}, p {p_words(r['p_fixed_suite'])})."
        )
    else:
        claim_b = (
            "Claim (b), on exactly this suite: the difference is within attempt noise "
            f"({r['fixed_suite_test']}, p {p_words(r['p_fixed_suite'])})."
        )
    if pop_ok:
        claim_a = (
            f"Claim (a), on tasks like these: B is {direction} A (paired t p "
            f"{p_words(r['p_population'])})."
        )
    elif r["p_population"] is None and "p_population" in r["not_estimable"]:
        claim_a = (
            "Claim (a), on tasks like these: not shown; the paired t test cannot be "
            f"computed ({r['not_estimable']['p_population']})."
        )
    else:
        claim_a = (
            "Claim (a), on tasks like these: not shown; the paired t test gives p "
            f"{p_words(r['p_population'])}, and a claim about other tasks needs more of them."
        )
    warning = (
        " The suites differ: only the shared task ids were paired." if r["suite_changed"] else ""
    )
    copied = r.get("copied") or {}
    if copied.get("moves_difference"):
        warning = (
            f" {copied['a']} of A's and {copied['b']} of B's passes mostly copy the task or "
            f"the documents (copied_share); counted as failures, the difference is "
            f"{copied['difference_without']:+.3f} ({r['fixed_suite_test']}, p "
            f"{p_words(copied['p_fixed_suite_without'])}), so look at those attempts before "
            "trusting the difference." + warning
        )
    both = ""
    if fixed_ok and r["p_population"] is not None and not pop_ok:
        both = " " + _reconcile(r)
    return f"{head}. {claim_b} {claim_a}{both} {_planning_sentence(r)}{warning}"


def _reconcile(r: dict[str, Any]) -> str:
    """Why the permutation test can be sure while the interval still holds 0: the two
    answer different questions (docs/statistics.md)."""
    holds_zero = r["ci95"] is not None and r["ci95"][0] <= 0 <= r["ci95"][1]
    spread = (
        "the 95% interval generalises over tasks, and it includes 0"
        if holds_zero
        else f"the paired t test (p {p_words(r['p_population'])}) generalises over tasks"
    )
    return (
        f"The two claims do not conflict: the permutation test is conditional on these "
        f"{r['tasks']} tasks (would re-running them keep the difference?), while {spread} "
        "because other tasks like these could differ the other way."
    )
