"""What hears a run as it goes. Every finished attempt reaches each observer once, in
the run's attempt-major order whatever order attempts finish in, after its trajectory
and journal line are written: the console's lines and progress bar, the OpenTelemetry
export and a caller's own function all listen the same way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from agent_eval.results import AttemptResult


class AttemptObserver(Protocol):
    """Anything told of each attempt a run keeps."""

    def attempt_finished(self, row: AttemptResult) -> None:
        """``row`` is the attempt as journaled, secrets redacted."""


class EachAttempt:
    """A plain function as an observer: ``execute(prepared, EachAttempt(rows.append))``."""

    def __init__(self, function: Callable[[AttemptResult], None]) -> None:
        self._function = function

    def attempt_finished(self, row: AttemptResult) -> None:
        self._function(row)


class Observers:
    """Several observers as one, told in the order given."""

    def __init__(self, *observers: AttemptObserver | None) -> None:
        self._observers = [observer for observer in observers if observer is not None]

    def attempt_finished(self, row: AttemptResult) -> None:
        for observer in self._observers:
            observer.attempt_finished(row)
