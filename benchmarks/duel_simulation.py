"""How often `agent-eval duel` decides wrongly, how often it decides at all, and what it
costs against a fixed-size design, by simulation.

Each simulated duel has a fixed suite of tasks with a pass probability per task and
side; each round draws one attempt per task and side, and the duel looks after every
round, stopping at its first decision, exactly as the command does. Beside it, the
naive procedure: run `compare`'s tests (the paired t test over tasks and the
within-task permutation test) after every round and stop at the first p < alpha.

    .venv/bin/python benchmarks/duel_simulation.py [--duels 2000] [--seed 20261201]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from agent_eval.score.permutation import permutation_test
from agent_eval.score.planning import repeats_needed, simulate_fixed_suite_power
from agent_eval.score.sequential import confidence_sequence, decide
from agent_eval.score.stats import paired_comparison

TASKS, MAX_ROUNDS, ALPHA, MARGIN = 15, 20, 0.05, 0.1


def outcomes(rng: np.random.Generator, p_a: np.ndarray, p_b: np.ndarray) -> np.ndarray:
    """One duel's paired outcomes: rounds x tasks x (A, B), 1 for a pass."""
    shape = (MAX_ROUNDS, len(p_a))
    return np.stack([rng.random(shape) < p_a, rng.random(shape) < p_b], axis=-1).astype(int)


def duel(passed: np.ndarray, margin: float | None) -> tuple[str, int]:
    """The decision and the rounds it took, looking after every round."""
    diffs = (passed[..., 1] - passed[..., 0]).tolist()
    for interval in confidence_sequence(diffs, ALPHA):
        decision = decide(interval, margin)
        if decision != "undecided":
            return decision, interval.rounds
    return "undecided", MAX_ROUNDS


def naive(passed: np.ndarray) -> tuple[bool, bool]:
    """Whether the paired t test, and the permutation test, ever gave p < alpha when
    rerun after every round."""
    t_hit = perm_hit = False
    for rounds in range(1, MAX_ROUNDS + 1):
        a, b = passed[:rounds, :, 0].sum(axis=0), passed[:rounds, :, 1].sum(axis=0)
        pairs = [(rounds, int(x), rounds, int(y)) for x, y in zip(a, b, strict=True)]
        p_t = paired_comparison(pairs).p_population
        t_hit = t_hit or (p_t is not None and p_t < ALPHA)
        perm_hit = perm_hit or permutation_test(pairs).p_value < ALPHA
        if t_hit and perm_hit:
            break
    return t_hit, perm_hit


def null(rng: np.random.Generator, duels: int) -> None:
    decisions: dict[str, int] = {}
    rounds, t_false, perm_false = [], 0, 0
    for _ in range(duels):
        p = rng.beta(0.6, 0.6, TASKS)  # U-shaped, as real suites are: most tasks near 0 or 1
        passed = outcomes(rng, p, p)
        decision, used = duel(passed, MARGIN)
        decisions[decision] = decisions.get(decision, 0) + 1
        rounds.append(used)
        t_hit, perm_hit = naive(passed)
        t_false += t_hit
        perm_false += perm_hit
    wrong = decisions.get("a_better", 0) + decisions.get("b_better", 0)
    print(
        f"null, {duels} duels, {TASKS} tasks, p ~ Beta(0.6, 0.6) equal on both sides, "
        f"looked at after each of up to {MAX_ROUNDS} rounds, alpha {ALPHA}, margin {MARGIN}"
    )
    print(
        f"  duel: false decision (a side better) {wrong / duels:.3f}; "
        f"no difference {decisions.get('no_difference', 0) / duels:.3f}; "
        f"undecided {decisions.get('undecided', 0) / duels:.3f}; "
        f"mean rounds {np.mean(rounds):.1f}"
    )
    print(
        f"  naive, compare after every round: paired t test {t_false / duels:.3f}, "
        f"permutation test {perm_false / duels:.3f}"
    )


def alternative(rng: np.random.Generator, duels: int, delta: float) -> None:
    decisions, attempts, suites = [], [], []
    for _ in range(duels):
        p_a = rng.uniform(0.2, 0.6, TASKS)
        p_b = p_a + delta
        suites.append((p_a, p_b))
        decision, used = duel(outcomes(rng, p_a, p_b), None)
        decisions.append(decision)
        attempts.append(2 * TASKS * used)
    power = decisions.count("b_better") / duels
    decided = [n for n, d in zip(attempts, decisions, strict=True) if d == "b_better"]
    sigma2 = float(np.mean([np.mean(a * (1 - a) + b * (1 - b)) for a, b in suites]))
    planned = repeats_needed(TASKS, delta, 0.0, sigma2 / 2, sigma2 / 2, ALPHA)
    target = min(power, 0.99)  # a simulated power of exactly 1 is no target to match
    same = _fixed_repeats(rng, suites, target)
    print(
        f"alternative +{delta}, {duels} duels, p_A ~ U(0.2, 0.6), p_B = p_A + {delta}, "
        f"no margin, up to {MAX_ROUNDS} rounds"
    )
    print(
        f"  duel: power {power:.3f}, wrong side {decisions.count('a_better') / duels:.3f}, "
        f"mean attempts {np.mean(attempts):.0f} (mean rounds {np.mean(attempts) / 2 / TASKS:.1f}"
        f"{f', {np.mean(decided) / 2 / TASKS:.1f} when decided' if decided else ''})"
    )
    print(
        f"  fixed design, permutation test at the same power ({target:.2f}): {same} repeats = "
        f"{2 * TASKS * same} attempts"
    )
    print(
        f"  fixed design planned for 80% power as compare plans it: {planned} repeats = "
        f"{2 * TASKS * planned if planned else None} attempts"
    )


def _fixed_repeats(
    rng: np.random.Generator, suites: list[tuple[np.ndarray, np.ndarray]], power: float
) -> int:
    """The fewest repeats per task at which the permutation test, run once at the end,
    reaches ``power`` on suites drawn as the duels' were (400 suites per count)."""
    for repeats in range(1, 200):
        reached = np.mean(
            [
                simulate_fixed_suite_power(p_a.tolist(), p_b.tolist(), repeats, 4, rng, ALPHA)
                for p_a, p_b in suites[:400]
            ]
        )
        if reached >= power:
            return repeats
    return math.inf  # type: ignore[return-value]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duels", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261201)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    clock = time.perf_counter()
    null(rng, args.duels)
    for delta in (0.1, 0.2, 0.3):
        alternative(rng, args.duels, delta)
    print(f"({time.perf_counter() - clock:.0f} s)")


if __name__ == "__main__":
    main()
