"""How a run meets Ctrl-C and SIGTERM.

The first Ctrl-C drains (running attempts finish), the second kills them; after that
the run winds down (agents' close(), the workers, the sandbox, the logs) and writes
its partial results. A Ctrl-C that lands while it winds down must cut none of that
short, or the attempts that finished would reach no results file.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def sigterm_as_ctrl_c() -> Iterator[None]:
    """SIGTERM stops the run as Ctrl-C does: running attempts finish (within their
    budgets), the partial results are written, and no scratch copy is left behind."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(_signal: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def ignoring_ctrl_c() -> Iterator[None]:
    """Work that must finish once begun (ending the workers, writing the results)
    goes on through another Ctrl-C or SIGTERM."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
