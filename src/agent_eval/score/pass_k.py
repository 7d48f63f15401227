"""pass^k of one task, in plain Python: the results file's per-task view is written with
it at the end of every run, where importing numpy would cost more than the whole tally.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

Estimator = Callable[[int, int, int], float]
"""(attempts, passes, k) to a chance: pass@k or pass^k."""


# Cached: a report asks for every k of every task, and tasks share (attempts, passes).
@lru_cache(maxsize=1 << 16)
def pass_hat_k(attempts: int, passes: int, k: int) -> float:
    """Unbiased chance that all k attempts drawn from this task's pass (tau-bench pass^k)."""
    if not 1 <= k <= attempts or not 0 <= passes <= attempts:
        raise ValueError(
            f"pass^k needs 1 <= k <= attempts and 0 <= passes <= attempts "
            f"(got k={k}, attempts={attempts}, passes={passes})"
        )
    return math.comb(passes, k) / math.comb(attempts, k)


def pass_hat_every_k(attempts: int, passes: int) -> dict[str, float]:
    """pass^k for every k from 1 to ``attempts``, keyed by ``str(k)``."""
    return every_k(pass_hat_k, attempts, passes)


def every_k(estimator: Estimator, attempts: int, passes: int) -> dict[str, float]:
    """``estimator`` (pass^k, pass@k) for every k from 1 to ``attempts``, keyed by
    ``str(k)``: a new dict each call, copied from one made once per (estimator,
    attempts, passes), which tasks share."""
    return dict(_every_k(estimator, attempts, passes))


@lru_cache(maxsize=1 << 12)
def _every_k(estimator: Estimator, attempts: int, passes: int) -> dict[str, float]:
    return {str(k): estimator(attempts, passes, k) for k in range(1, attempts + 1)}
