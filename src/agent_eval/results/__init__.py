"""The results file, its journal and the labbook: their records, and the only code that
reads or writes them.

Every command goes through here: ``run`` writes (``write_results``, ``Journal``,
``append_labbook``), ``report``, ``compare`` and the viewer load (``load_results``),
``rescore`` and ``export-otel`` stream (``read_head``, ``iter_rows``), ``history`` reads
the labbook (``read_labbook``), and a watcher of a run in progress reads its journal
(``read_journal``). Files of schema 1 and the course harness's files are
read too, brought to the current shape (``legacy``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_eval.lazy import lazy_getattr
from agent_eval.records import RESULTS_SCHEMA
from agent_eval.results.journal import (
    JOURNAL_SUFFIX,
    Journal,
    Order,
    finished_run_header,
    journal_path_for,
    read_header,
    read_journal,
    reopen_journal,
)
from agent_eval.results.labbook import Labbook, read_labbook
from agent_eval.results.read import iter_rows, load_back_rows, load_results, read_head
from agent_eval.results.rows import Attempt, CheckValues, RunResults, TaskOutcome
from agent_eval.results.schema import (
    COURSE_TASK_KEYS,
    AttemptResult,
    Budgets,
    Limits,
    LimitSpread,
    ResultsHead,
    RunHead,
    SandboxUsed,
    Summary,
    TaskSummary,
    build_record_validators,
    describe_failure,
)
from agent_eval.results.summary import Tally, tally
from agent_eval.results.write import append_labbook, atomic_file, row_json, write_results

# The face's names that live in its modules, imported on first use (__getattr__).
if TYPE_CHECKING:
    from agent_eval.results.duel_file import (
        DUEL_SCHEMA,
        SIDES,
        DuelRecord,
        Stop,
        read_duel,
        side_results,
        write_duel,
    )
    from agent_eval.results.legacy import NOT_RECORDED, RAISED
    from agent_eval.results.rows import CHECK_FIELDS, compact
    from agent_eval.results.schema import Frame
    from agent_eval.results.summary import UNKNOWN_CLASS


__all__ = [
    "CHECK_FIELDS",
    "COURSE_TASK_KEYS",
    "DUEL_SCHEMA",
    "JOURNAL_SUFFIX",
    "NOT_RECORDED",
    "RAISED",
    "RESULTS_SCHEMA",
    "SIDES",
    "UNKNOWN_CLASS",
    "Attempt",
    "AttemptResult",
    "Budgets",
    "CheckValues",
    "DuelRecord",
    "Frame",
    "Journal",
    "Labbook",
    "LimitSpread",
    "Limits",
    "Order",
    "ResultsHead",
    "RunHead",
    "RunResults",
    "SandboxUsed",
    "Stop",
    "Summary",
    "Tally",
    "TaskOutcome",
    "TaskSummary",
    "append_labbook",
    "atomic_file",
    "build_record_validators",
    "compact",
    "describe_failure",
    "finished_run_header",
    "iter_rows",
    "journal_path_for",
    "load_back_rows",
    "load_results",
    "read_duel",
    "read_head",
    "read_header",
    "read_journal",
    "read_labbook",
    "reopen_journal",
    "row_json",
    "side_results",
    "tally",
    "write_duel",
    "write_results",
]


_LAZY = {
    "CHECK_FIELDS": "agent_eval.results.rows:CHECK_FIELDS",
    "DUEL_SCHEMA": "agent_eval.results.duel_file:DUEL_SCHEMA",
    "DuelRecord": "agent_eval.results.duel_file:DuelRecord",
    "Frame": "agent_eval.results.schema:Frame",
    "NOT_RECORDED": "agent_eval.results.legacy:NOT_RECORDED",
    "RAISED": "agent_eval.results.legacy:RAISED",
    "SIDES": "agent_eval.results.duel_file:SIDES",
    "Stop": "agent_eval.results.duel_file:Stop",
    "UNKNOWN_CLASS": "agent_eval.results.summary:UNKNOWN_CLASS",
    "compact": "agent_eval.results.rows:compact",
    "read_duel": "agent_eval.results.duel_file:read_duel",
    "side_results": "agent_eval.results.duel_file:side_results",
    "write_duel": "agent_eval.results.duel_file:write_duel",
}
"""Public name -> where it lives: ``module:attribute``, or a module."""
__getattr__ = lazy_getattr(__name__, _LAZY)
