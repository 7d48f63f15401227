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
from agent_eval.results.read import iter_rows, load_results, read_head
from agent_eval.results.rows import Attempt, RunResults, TaskOutcome
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
    describe_failure,
)
from agent_eval.results.summary import Tally, tally
from agent_eval.results.write import append_labbook, atomic_file, row_json, write_results

__all__ = [
    "COURSE_TASK_KEYS",
    "JOURNAL_SUFFIX",
    "RESULTS_SCHEMA",
    "Attempt",
    "AttemptResult",
    "Budgets",
    "Journal",
    "Labbook",
    "LimitSpread",
    "Limits",
    "Order",
    "ResultsHead",
    "RunHead",
    "RunResults",
    "SandboxUsed",
    "Summary",
    "Tally",
    "TaskOutcome",
    "TaskSummary",
    "append_labbook",
    "atomic_file",
    "describe_failure",
    "finished_run_header",
    "iter_rows",
    "journal_path_for",
    "load_results",
    "read_head",
    "read_header",
    "read_journal",
    "read_labbook",
    "reopen_journal",
    "row_json",
    "tally",
    "write_results",
]
