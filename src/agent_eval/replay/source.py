"""What `run --replay RESULTS.json` replays: every attempt's recorded calls, by try."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from agent_eval.errors import ConfigError
from agent_eval.replay.recording import Exchange, read_recording, try_path
from agent_eval.results import iter_rows

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
