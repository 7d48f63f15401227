"""What a run says, once, while it goes, when something is wrong with all of it: the
first attempts all failing with the same error, or an endpoint failure being retried.
Both mean waiting for a run that cannot measure anything, unless the user is told."""

from __future__ import annotations

import threading
from collections.abc import Callable

from agent_eval.results import AttemptResult

FIRST_ATTEMPTS = 3
"""The same error on this many first finished attempts is worth a word."""


class EarlyWarnings:
    """Hears each finished attempt and each retried try; speaks at most once of each."""

    def __init__(self, notice: Callable[[str], None] | None, max_retries: int) -> None:
        self._notice = notice
        self._max_retries = max_retries
        self._first: list[tuple[str | None, str | None]] = []
        self._said_retry = False
        self._lock = threading.Lock()

    def finished(self, row: AttemptResult) -> None:
        """Say so when the first FIRST_ATTEMPTS attempts all failed with one error."""
        with self._lock:
            if len(self._first) >= FIRST_ATTEMPTS:
                return
            self._first.append((row.failure_class, row.error))
            same = len(self._first) == FIRST_ATTEMPTS and len(set(self._first)) == 1
        if same and row.error and self._notice is not None:
            self._notice(
                f"the first {FIRST_ATTEMPTS} attempts all failed with the same error "
                f"({row.failure_class}): {row.error}; the run goes on (Ctrl-C stops it and "
                "keeps what finished)"
            )

    def retrying(self, row: AttemptResult) -> None:
        """Say, the first time, that an endpoint failure is being retried and how often."""
        with self._lock:
            said, self._said_retry = self._said_retry, True
        if not said and self._notice is not None:
            self._notice(
                f"the model endpoint failed ({row.error}); each attempt it fails is retried "
                f"up to {self._max_retries} time(s) with a growing wait "
                "(--max-infra-retries 0 retries none)"
            )
