"""Scoring: pure checks on an attempt, failure classes, and statistics.

The package imports none of its modules itself: an agent's worker uses ``copied`` alone
and so never loads the checks' pydantic records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_eval.lazy import lazy_getattr

# The face's names that live in its modules, imported on first use (__getattr__).
if TYPE_CHECKING:
    from agent_eval.score import planning, stats
    from agent_eval.score.checks import BUDGET_STOPS, classify, score_attempt, tools_used
    from agent_eval.score.citations import judge_citations, read_cited, rejudge
    from agent_eval.score.clusters import (
        cluster_labels,
        clustered_mean,
        clustered_t_p,
        effective_variance,
    )
    from agent_eval.score.copied import (
        AT_LENGTH,
        MOSTLY,
        RUN_WORDS,
        copied_share,
        covered_words,
        document_runs,
        is_copied_pass,
        word_runs,
        words,
    )
    from agent_eval.score.cost import attempt_cost, attempt_costs
    from agent_eval.score.pass_k import pass_hat_every_k, pass_hat_k
    from agent_eval.score.permutation import PermutationTest, permutation_test
    from agent_eval.score.planning import plan_from_pairs, repeats_needed
    from agent_eval.score.sequential import Decision, confidence_sequence, decide, projected_rounds
    from agent_eval.score.snapshot import Changes, changes, still_copy, workspace_diff
    from agent_eval.score.snapshot import snapshot as workspace_snapshot
    from agent_eval.score.state import check_state, unjudged


__all__ = [
    "AT_LENGTH",
    "BUDGET_STOPS",
    "MOSTLY",
    "RUN_WORDS",
    "Changes",
    "Decision",
    "PermutationTest",
    "attempt_cost",
    "attempt_costs",
    "changes",
    "check_state",
    "classify",
    "cluster_labels",
    "clustered_mean",
    "clustered_t_p",
    "confidence_sequence",
    "copied_share",
    "covered_words",
    "decide",
    "document_runs",
    "effective_variance",
    "is_copied_pass",
    "judge_citations",
    "pass_hat_every_k",
    "pass_hat_k",
    "permutation_test",
    "plan_from_pairs",
    "planning",
    "projected_rounds",
    "read_cited",
    "rejudge",
    "repeats_needed",
    "score_attempt",
    "stats",
    "still_copy",
    "tools_used",
    "unjudged",
    "word_runs",
    "words",
    "workspace_diff",
    "workspace_snapshot",
]


_LAZY = {
    "AT_LENGTH": "agent_eval.score.copied:AT_LENGTH",
    "BUDGET_STOPS": "agent_eval.score.checks:BUDGET_STOPS",
    "Changes": "agent_eval.score.snapshot:Changes",
    "Decision": "agent_eval.score.sequential:Decision",
    "MOSTLY": "agent_eval.score.copied:MOSTLY",
    "PermutationTest": "agent_eval.score.permutation:PermutationTest",
    "RUN_WORDS": "agent_eval.score.copied:RUN_WORDS",
    "attempt_cost": "agent_eval.score.cost:attempt_cost",
    "attempt_costs": "agent_eval.score.cost:attempt_costs",
    "changes": "agent_eval.score.snapshot:changes",
    "check_state": "agent_eval.score.state:check_state",
    "classify": "agent_eval.score.checks:classify",
    "cluster_labels": "agent_eval.score.clusters:cluster_labels",
    "clustered_mean": "agent_eval.score.clusters:clustered_mean",
    "clustered_t_p": "agent_eval.score.clusters:clustered_t_p",
    "confidence_sequence": "agent_eval.score.sequential:confidence_sequence",
    "copied_share": "agent_eval.score.copied:copied_share",
    "covered_words": "agent_eval.score.copied:covered_words",
    "decide": "agent_eval.score.sequential:decide",
    "document_runs": "agent_eval.score.copied:document_runs",
    "effective_variance": "agent_eval.score.clusters:effective_variance",
    "is_copied_pass": "agent_eval.score.copied:is_copied_pass",
    "judge_citations": "agent_eval.score.citations:judge_citations",
    "pass_hat_every_k": "agent_eval.score.pass_k:pass_hat_every_k",
    "pass_hat_k": "agent_eval.score.pass_k:pass_hat_k",
    "permutation_test": "agent_eval.score.permutation:permutation_test",
    "plan_from_pairs": "agent_eval.score.planning:plan_from_pairs",
    "planning": "agent_eval.score.planning",
    "projected_rounds": "agent_eval.score.sequential:projected_rounds",
    "read_cited": "agent_eval.score.citations:read_cited",
    "rejudge": "agent_eval.score.citations:rejudge",
    "repeats_needed": "agent_eval.score.planning:repeats_needed",
    "score_attempt": "agent_eval.score.checks:score_attempt",
    "still_copy": "agent_eval.score.snapshot:still_copy",
    "stats": "agent_eval.score.stats",
    "tools_used": "agent_eval.score.checks:tools_used",
    "unjudged": "agent_eval.score.state:unjudged",
    "word_runs": "agent_eval.score.copied:word_runs",
    "words": "agent_eval.score.copied:words",
    "workspace_diff": "agent_eval.score.snapshot:workspace_diff",
    "workspace_snapshot": "agent_eval.score.snapshot:snapshot",
}
"""Public name -> where it lives: ``module:attribute``, or a module."""
__getattr__ = lazy_getattr(__name__, _LAZY)
