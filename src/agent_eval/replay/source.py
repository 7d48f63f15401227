"""What `run --replay RESULTS.json` replays: every attempt's recorded calls, by try."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agent_eval.errors import ConfigError, ResultsError
from agent_eval.replay.recording import Exchange, read_recording, try_path
from agent_eval.results import iter_rows, read_head
from agent_eval.trajectory import read_trajectory, trajectory_path

AttemptKey = tuple[str, int]
"""(task id, attempt number)."""


@dataclass(frozen=True)
class ReplaySource:
    """The recorded calls of a results file's attempts: per attempt, one list per try."""

    origin: str
    """The results file, as the user named it (for messages)."""
    tries: dict[AttemptKey, tuple[tuple[Exchange, ...], ...]]
    port: int | None = None
    """The port the recording proxy listened on, taken again when it is free."""

    def calls(self, task_id: str, attempt: int, try_number: int) -> tuple[Exchange, ...] | None:
        """The calls try ``try_number`` made, or None when that try was not recorded."""
        recorded = self.tries.get((task_id, attempt), ())
        return recorded[try_number - 1] if try_number <= len(recorded) else None


def load_replay(results: Path) -> ReplaySource:
    """Read the recordings a results file's rows name; ConfigError when there are none,
    or when a named recording is missing or damaged."""
    base = results.parent
    tries: dict[AttemptKey, tuple[tuple[Exchange, ...], ...]] = {}
    ports: Counter[int | None] = Counter()
    for row in iter_rows(results):
        if not row.recording_file:
            continue
        final = Path(row.recording_file)
        final = final if final.is_absolute() else base / final
        count = row.infra_retries + 1
        recorded = []
        for number in range(1, count + 1):
            path = try_path(final, number, count)
            try:
                header, calls = read_recording(path)
                recorded.append(tuple(calls))
                ports[urlsplit(str(header.get("proxy", ""))).port] += 1
            except FileNotFoundError:
                raise ConfigError(
                    f"--replay {results}: the recording {path} of task {row.id} attempt "
                    f"{row.attempt} is missing; keep the recordings beside the trajectories"
                ) from None
            except ValueError as exc:
                raise ConfigError(f"--replay {results}: {exc}") from None
        tries[(row.id, row.attempt)] = tuple(recorded)
    if not tries:
        raise ConfigError(
            f"--replay {results}: no attempt of that run was recorded; record one with "
            "`agent-eval run --record ...`"
        )
    ports.pop(None, None)
    return ReplaySource(str(results), tries, ports.most_common(1)[0][0] if ports else None)


def recorded_suite(results: Path, suite_hash: str | None) -> str:
    """The shipped suite a recorded run used, found by its hash; ConfigError asking for
    --tasks when it was a suite of the user's own."""
    from agent_eval.suite import load_suite, shipped_suites

    for name in shipped_suites():
        if load_suite(name).hash == suite_hash:
            return name
    raise ConfigError(
        f"{results}: that run's suite is not a shipped one; give the suite it ran with --tasks"
    )


LIMITS = ("max_infra_retries", "timeout_per_task", "max_memory_mb", "max_cost_per_task")
"""The recorded limits a replay takes, by flag name (as the results file's run.limits)."""
PRICES = ("cost_per_million", "input_cost_per_million", "output_cost_per_million")
"""The price settings, by flag name: taken from a recording together or not at all."""


def recorded_settings(results: Path, given: Collection[str]) -> dict[str, Any]:
    """The settings of the recorded run in ``results`` that `run --replay` takes where
    the user gave none (``given`` names the ones given, as `run`'s flags): each setting
    that decides which calls an attempt makes and how often. The model, router model,
    repeats, seed and endpoint; the retries after an endpoint failure; the time, memory
    and cost limits and the prices a cost is judged at (all of them, unless a price is
    given). A setting the file does not record is left out; a router model that was not
    given comes back as not given, as the trajectories' meta lines record it."""
    head = read_head(results).run
    limits = head.limits
    prices = head.prices or {}
    recorded: dict[str, Any] = {
        "model": head.model,
        "router_model": _recorded_router_model(results, head.router_model),
        "repeats": head.repeats,
        "seed": head.seed,
        "base_url": head.base_url,
    }
    for name in LIMITS:
        recorded[name] = getattr(limits, name, None)
    if not set(PRICES) & set(given):
        recorded.update(zip(PRICES, (prices.get("per_million"), prices.get("input_per_million"),
                                     prices.get("output_per_million")), strict=True))  # fmt: skip
    # None is "not recorded", but for the router model, where it is "not given"
    return {name: value for name, value in recorded.items() if name not in given
            and (value is not None or name == "router_model")}  # fmt: skip


def _recorded_router_model(results: Path, in_head: str | None) -> str | None:
    """The --router-model the recorded run was given: its first trajectory's meta line
    says, None included (the results file's head names the model when none was given);
    ``in_head`` when no trajectory says."""
    for row in iter_rows(results):
        path = trajectory_path(results, row.trajectory_file)
        if path is None or not path.is_file():
            continue
        try:
            meta = read_trajectory(path, tolerant=True).meta
        except ResultsError:
            continue
        if meta is not None and "router_model" in meta:
            return meta.get("router_model")
        break
    return in_head
