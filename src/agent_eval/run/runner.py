"""Run every selected task of a suite, with repeats, side by side, and lose nothing.

Attempts run in worker processes, on this machine or on a Ray cluster (run/executors/
is the seam); each finished attempt is journaled the moment it ends (results/journal.py),
and outputs come out attempt-major, as the course writes them, whatever the completion
order. Ctrl-C stops taking new attempts and lets running ones finish; a second Ctrl-C
kills them. Either way the journal and partial results are written.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import platform
import random
import shlex
import threading
import time
from array import array
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_eval import __version__
from agent_eval.errors import AgentEvalError, ConfigError, ResultsError
from agent_eval.records import RESULTS_SCHEMA, CommandCheck, Task
from agent_eval.redaction import Redactor, public_options, run_redactor, with_secret_options
from agent_eval.results import (
    JOURNAL_SUFFIX,
    AttemptResult,
    Journal,
    Limits,
    Order,
    ResultsHead,
    RunHead,
    SandboxUsed,
    Summary,
    Tally,
    TaskSummary,
    append_labbook,
    build_record_validators,
    finished_run_header,
    iter_rows,
    journal_path_for,
    read_header,
    reopen_journal,
    row_json,
    write_results,
)
from agent_eval.run.agent_facts import agent_facts
from agent_eval.run.attempt import AttemptPlan, Scored
from agent_eval.run.budgets import stated_budgets
from agent_eval.run.ctrl_c import ignoring_ctrl_c, sigterm_as_ctrl_c
from agent_eval.run.earlier_runs import MAX_ENTRIES, earlier_records
from agent_eval.run.early_warnings import EarlyWarnings
from agent_eval.run.executors.protocol import Executor, Slot, executor_class, make_executor
from agent_eval.run.executors.sandboxed import resolve as resolve_sandbox
from agent_eval.run.executors.sandboxed import (
    trust_stores,
    unshown_trust_stores,
    visible_folder,
)
from agent_eval.run.observers import AttemptObserver
from agent_eval.run.outputs import BackgroundWriter, InOrder
from agent_eval.run.preflight import check_endpoint
from agent_eval.run.prepared import PreparedRun
from agent_eval.run.settings import RunConfig
from agent_eval.run.workspace import workspace_source
from agent_eval.sandbox import Sandbox
from agent_eval.suite import load_suite
from agent_eval.trajectory import safe_part

if TYPE_CHECKING:  # the proxy's web server stack is imported only when a run asks for it
    from agent_eval.replay import ModelProxy

MAX_RETRY_WAIT = 60.0


@dataclass
class RunReport:
    """What a run produced: the results file's head (run and per_task), and where its
    rows are: the results file, or the journal when the run wrote no --out."""

    head: ResultsHead
    summary: Summary
    """The run's summary, as ``head.run.summary`` holds it."""
    rows_in: Path
    interrupted: bool = False
    resumed: int = 0
    """Attempts taken from an earlier run instead of being run again."""

    @property
    def rows(self) -> list[AttemptResult]:
        """Every row, read back from disk (the run itself never held them all)."""
        if self.rows_in.name.endswith(JOURNAL_SUFFIX):
            task_ids = tuple(task.id for task in self.head.per_task)
            reader = Journal(self.rows_in, {}, Order(task_ids, self.head.run.repeats or 1))
            try:
                return list(reader.rows())
            finally:
                reader.close()
        return list(iter_rows(self.rows_in))

    @property
    def all_passed(self) -> bool:
        return bool(self.summary.runs) and self.summary.passed == self.summary.runs


def prepare(config: RunConfig) -> PreparedRun:
    """Load the suite and the agent and check every input before any attempt runs."""
    loaded = load_suite(config.tasks)
    tasks = select_tasks(loaded.suite.tasks, config.only, config.task_ids)
    if config.split is not None:
        splits = sorted({loaded.suite.split_of(t) or "none" for t in loaded.suite.tasks})
        tasks = [t for t in tasks if loaded.suite.split_of(t) == config.split]
        if not tasks:
            raise ConfigError(
                f"--split {config.split}: no selected task of suite {loaded.path.name} is in "
                f"that split (splits declared: {', '.join(splits)})"
            )
    executor_class(config.executor)  # a missing extra fails here, before anything runs
    source, note = workspace_source(loaded, config.workspace, config.allow_empty_workspace)
    if config.preflight:
        named = {"--model": config.model, "--router-model": config.router_model}
        check_endpoint(config.base_url, config.api_key,
                       {flag: name for flag, name in named.items() if name})  # fmt: skip
    prepared = PreparedRun(config, loaded, tasks, source, note)
    # The default results name holds the agent's scaffold name, known once a process of
    # its own has loaded the agent in the sandbox, which hides the whole results folder.
    named_later = config.results_dir if config.out is None and config.resume is None else None
    if config.resume is not None:
        _adopt(prepared, config.resume)
    elif config.out is not None:
        prepared.journal_path = journal_path_for(config.out)
        if prepared.journal_path.exists() and prepared.journal_path.stat().st_size:
            raise ConfigError(
                f"--out {config.out}: an unfinished run's journal {prepared.journal_path} is "
                f"there; continue it with --resume {config.out}, or delete the journal"
            )
        if config.out.exists() and not config.overwrite:
            raise ConfigError(
                f"--out {config.out}: a finished run's results are there; add repeats to it "
                f"with --resume {config.out} --repeats N, write elsewhere with another "
                f"--out, or replace it with --overwrite"
            )
    elif named_later is None:
        name = f"{prepared.stamp}-{prepared.run_id}{JOURNAL_SUFFIX}"
        prepared.journal_path = config.trajectory_dir / name
    config = prepared.config  # --resume of a recorded run records
    prepared.proxy = model_proxy(
        config, run_redactor(config.api_key, config.options, config.secret_options)
    )
    prepared.sandbox, prepared.sandbox_used = _sandbox(prepared)
    prepared.agent = agent_facts(config.agent, prepared.sandbox)
    if named_later is not None:
        out = _default_out(prepared, named_later)
        prepared.config, prepared.journal_path = replace(config, out=out), journal_path_for(out)
    return prepared


def _sandbox(prepared: PreparedRun) -> tuple[Sandbox | None, SandboxUsed]:
    """The run's sandbox: what it hides (the run's own files, the suite and its hidden
    checks, and earlier runs' records in the folders it shows) and what it shows besides
    the system and Python, read-only: the current folder, the index, a module agent's
    folder, the certificates the environment trusts, and the documents every attempt
    gets a copy of (so that build() indexes them once, as without the sandbox)."""
    config, suite_file = prepared.config, prepared.loaded.path
    hidden_checks = [suite_file.parent / check.with_files
                     for task in prepared.tasks for check in task.expect_state
                     if isinstance(check, CommandCheck) and check.with_files]  # fmt: skip
    out_folders = [p.parent for p in (config.out, config.labbook, config.resume) if p]
    if config.out is None and config.results_dir is not None:  # named once the agent loads
        out_folders.append(config.results_dir)
    hide = [Path.home(), suite_file, suite_file.parent, *hidden_checks, config.trajectory_dir,
            prepared.journal_path, config.out, config.labbook, config.resume, *out_folders,
            config.replay, config.cache_dir]  # fmt: skip
    if config.sandbox == "off":
        return resolve_sandbox("off", config.sandbox_network, hide=hide, keep=[])
    here, agent_folders = visible_folder(Path.cwd()), _agent_folders(config.agent)
    given = [p.resolve() for p in (config.index, prepared.source) if p is not None]
    # the documents and the index are the agent's to see, records or not
    shown = [f for f in (here, *agent_folders)
             if f is not None and not any(f.is_relative_to(g) for g in given)]  # fmt: skip
    earlier = earlier_records(shown, (task.id for task in prepared.tasks), [*hide, *given])
    prepared.earlier_records = earlier
    if not earlier.complete and here not in agent_folders:
        here = None  # not every entry was looked into: not shown at all
    sandbox, used = resolve_sandbox(
        config.sandbox,
        config.sandbox_network,
        hide=[*hide, *earlier.paths],
        keep=[here, config.index, prepared.source, *agent_folders, *trust_stores()],
        workspace_mb=config.max_workspace_mb,
    )
    if sandbox is not None:
        used = used.model_copy(update={"hidden_records": len(earlier.paths)})
    return sandbox, used


def _say_what_is_hidden(prepared: PreparedRun, on_notice: Callable[[str], None]) -> None:
    """Tell the user which of their files the agent will not see, so that an agent that
    reads one by a relative path fails for a reason they know."""
    earlier = prepared.earlier_records
    if earlier.paths:
        here = Path.cwd()
        named = [(str(p.relative_to(here)) if p.is_relative_to(here) else str(p))
                 + ("/" if p.is_dir() else "") for p in earlier.paths]  # fmt: skip
        shown = ", ".join(named[:3]) + (f" and {len(named) - 3} more" if len(named) > 3 else "")
        on_notice(
            "the agent cannot see these files, which name its tasks with an answer or an "
            f"outcome (earlier runs' records): {shown}"
        )
    if not earlier.complete:
        kept = prepared.sandbox is not None and prepared.sandbox.shows(str(Path.cwd()))
        what = "shows it unchecked, the agent's files being there" if kept else "hides it"
        on_notice(
            f"the current folder holds more than {MAX_ENTRIES:,} entries to look through for "
            f"earlier runs' records, so the sandbox {what}; run from a smaller folder"
        )


def _agent_folders(spec: str) -> list[Path]:
    """The folders of the files an agent spec names: a module agent's file, or the files
    a cmd: agent's command line gives (its script)."""
    if spec.startswith("cmd:"):
        words = shlex.split(spec.removeprefix("cmd:"))
    else:
        words = [spec.partition(":")[0]] if spec.partition(":")[0].endswith(".py") else []
    return [Path(w).resolve().parent for w in words if Path(w).is_file()]


def _default_out(prepared: PreparedRun, folder: Path) -> Path:
    """A results path that no earlier run used: `{stamp}-{scaffold}-{model}.json`."""
    parts = (prepared.stamp, prepared.agent.scaffold, prepared.config.model)
    stem = "-".join(safe_part(p) for p in parts)
    path = folder / f"{stem}.json"
    if path.exists() or journal_path_for(path).exists():
        path = folder / f"{stem}-{prepared.run_id}.json"
    return path


def _adopt(prepared: PreparedRun, resume: Path) -> None:
    """Continue the run recorded in ``resume`` (a results file or its journal)."""
    journal = resume if resume.name.endswith(JOURNAL_SUFFIX) else journal_path_for(resume)
    if journal.exists():
        header = read_header(journal)
    else:  # a finished run: more repeats continue it
        header = finished_run_header(resume)
        if prepared.config.repeats <= (header["repeats"] or 1):
            raise ResultsError(
                f"--resume {resume}: no journal {journal.name} next to it; that run finished "
                f"its {header['repeats']} repeat(s), so there is nothing to resume; add "
                f"repeats with --repeats N above {header['repeats']}"
            )
        prepared.reopen = resume
    suite = prepared.loaded.suite
    if "suite" in header:  # a course-harness file: no hash, so its suite's name and version
        if header["suite"] != [suite.name, suite.version]:
            raise ConfigError(
                f"--resume {resume}: that run used suite {' '.join(map(str, header['suite']))}, "
                f"not {suite.name} {suite.version}; give its suite"
            )
    elif header.get("suite_hash") != prepared.loaded.hash:
        raise ConfigError(
            f"--resume {resume}: the suite changed since that run ({header.get('suite_hash')} "
            f"-> {prepared.loaded.hash}); start a new run instead"
        )
    config = prepared.config
    same = [("agent", config.agent), ("model", config.model)]
    if "isolation" in header:  # journals from before --isolation do not say
        same.append(("isolation", config.isolation))
    for key, mine in same:
        if header.get(key) != mine:
            raise ConfigError(
                f"--resume {resume}: that run used --{key} {header.get(key)}; give the same"
            )
    prepared.run_id = str(header["run_id"])
    prepared.started = datetime.fromisoformat(str(header["started"]))
    if header.get("record"):  # a recorded run's remaining attempts are recorded too
        prepared.config = replace(prepared.config, record=True)
    if config.lab is None and header.get("lab") is not None:  # the run keeps its label
        prepared.config = replace(prepared.config, lab=str(header["lab"]))
    prepared.journal_path = journal
    prepared.earlier_wall = float(header.get("wall_seconds") or 0.0)


def select_tasks(tasks: list[Task], only: tuple[str, ...], ids: tuple[str, ...]) -> list[Task]:
    """Tasks kept by --only (categories) and --task-id; an unknown name is an error."""
    for wanted, known, flag in (
        (only, sorted({t.category for t in tasks}), "--only"),
        (ids, [t.id for t in tasks], "--task-id"),
    ):
        for name in wanted:
            if name not in known:
                close = difflib.get_close_matches(name, known, n=1)
                hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(known)}"
                raise ConfigError(f"{flag} {name}: not in this suite ({hint})")
    return [t for t in tasks if (not only or t.category in only) and (not ids or t.id in ids)]


@dataclass(frozen=True)
class Started:
    """A run's executor, its slots starting, and the plan it was made with."""

    plan: AttemptPlan
    executor: Executor

    @classmethod
    def made(
        cls, prepared: PreparedRun, redact: Redactor, on_notice: Callable[[str], None]
    ) -> Started:
        """The run's plan and the executor ``--executor`` names for it (not started)."""
        plan = replace(_plan(prepared, redact), proxy=prepared.proxy)
        return cls(plan, make_executor(prepared, plan, on_notice))


@contextmanager
def starting(
    prepared: PreparedRun, on_notice: Callable[[str], None] | None = None
) -> Iterator[Started]:
    """The run's slots start in the background (the sandbox, the zygote, the first
    worker's build()) while the body does its own work, such as printing the header;
    ``execute(..., started=)`` in the body carries on with them. Leaving ends whatever
    execute() did not run."""
    config = prepared.config
    redact = run_redactor(config.api_key, config.options, config.secret_options)
    started = Started.made(prepared, redact, _redacted(on_notice, redact))
    with _outputs_made_first(prepared):
        with _errors_told_plainly(prepared, redact):
            started.executor.start()
        # The results' host string runs `uname -p` (about 13 ms): asked now, while the
        # first worker builds, platform's cache has it when the run ends.
        threading.Thread(target=platform.platform, name="host", daemon=True).start()
        try:
            yield started
        finally:
            started.executor.close()


@contextmanager
def _outputs_made_first(prepared: PreparedRun) -> Iterator[None]:
    """Make the run's outputs before its sandbox starts (`_outputs_made`): a sandbox
    hides only what exists when it starts, and a journal it showed would tell an agent
    the earlier attempts' verdicts and what their checks missed. A journal still empty
    at the end was never used (execute() writes its header first), so it goes."""
    journal = _outputs_made(prepared)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            if journal.stat().st_size == 0:
                journal.unlink()


def _outputs_made(prepared: PreparedRun) -> Path:
    """The run's trajectory folder and its journal file, made where they are not yet: a
    finished run's journal is written again from its results (more repeats of it), else
    the file is made empty for the Journal to fill. Written in place from then on, so
    that a sandbox's mask over it holds (a file renamed over a mount point drops it)."""
    journal = prepared.journal_path
    assert journal is not None  # prepare() always sets it
    prepared.config.trajectory_dir.mkdir(parents=True, exist_ok=True)
    if prepared.reopen is not None:
        reopen_journal(prepared.reopen, _journal_header(prepared))
        prepared.reopen = None
    journal.parent.mkdir(parents=True, exist_ok=True)
    journal.touch()
    return journal


def execute(
    prepared: PreparedRun,
    observer: AttemptObserver | None = None,
    on_notice: Callable[[str], None] | None = None,
    on_warning: Callable[[str], None] | None = None,
    started: Started | None = None,
) -> RunReport:
    """Run every attempt not already journaled, then write the results and labbook.

    ``observer`` hears each attempt as it is kept (run/observers.py);
    ``on_notice`` hears, once, anything the user should know about how the run goes,
    such as attempts each getting a fresh worker because the agent cannot be copied;
    ``on_warning`` hears what went wrong without stopping the run, such as a damaged
    journal line whose attempt runs again. A full disk is a ResultsError saying where
    the journal is and that --resume continues.
    """
    config = prepared.config
    redact = run_redactor(config.api_key, config.options, config.secret_options)
    with _errors_told_plainly(prepared, redact):
        return _execute(prepared, redact, observer, on_notice, on_warning, started)


def _execute(
    prepared: PreparedRun,
    redact: Redactor,
    observer: AttemptObserver | None,
    on_notice: Callable[[str], None] | None,
    on_warning: Callable[[str], None] | None,
    started: Started | None,
) -> RunReport:
    config = prepared.config
    on_notice, on_warning = _redacted(on_notice, redact), _redacted(on_warning, redact)
    order = prepared.order
    journal = Journal(_outputs_made(prepared), _journal_header(prepared), order)
    warnings = [redact(warning) for warning in journal.damaged]
    for warning in warnings:
        on_warning(warning)
    # A journaled attempt counts as finished unless its endpoint failed: those run again.
    finished = {order.position((row.id, row.attempt))
                for row in journal.rows() if row.failure_class != "infra_error"}  # fmt: skip
    # Positions in the order, 8 bytes each: a long run's plan costs next to nothing.
    pending = array("q", (p for p in range(len(order)) if p not in finished))
    resumed = len(order) - len(pending)
    if config.shuffle:
        random.Random(config.seed).shuffle(pending)
    by_id = {t.id: t for t in prepared.tasks}
    started = started or Started.made(prepared, redact, on_notice)
    build_record_validators()  # while the first worker starts, and before any thread needs one
    plan, executor = started.plan, started.executor
    clock = time.perf_counter()
    watch = EarlyWarnings(on_notice, config.max_infra_retries)

    def attempt(slot: Slot, position: int, stop: threading.Event) -> Scored:
        task_id, number = order.key(position)
        return _with_retries(config, slot, by_id[task_id], number, stop, watch)

    def keep(index: int, scored: Scored) -> None:
        """Trajectory file, then journal line, then the caller: each step can rely on
        the one before (a journaled row's file exists; the observer sees a kept row)."""
        scored.save(config.trajectory_dir)
        text = row_json(scored.row)
        kept = redact(text)
        journal.append(scored.row, kept)
        # what the console shows (an answer, an error) is the row as journaled, redacted
        in_order.put(index, scored.row if kept == text else AttemptResult.model_validate_json(kept))
        watch.finished(scored.row)

    in_order = InOrder(observer.attempt_finished if observer is not None else None)
    writer = BackgroundWriter()
    used = prepared.sandbox_used
    if used is not None and used.applied == "none" and config.sandbox == "auto":
        on_notice(f"this run is not sandboxed: {used.reason}")
    if prepared.sandbox is not None:
        _say_what_is_hidden(prepared, on_notice)
    for store in unshown_trust_stores() if prepared.sandbox is not None else []:
        on_notice(
            f"{store}: the sandbox shows no certificate from the home folder or the root, "
            "so inside it is not trusted; keep it in a folder of its own, or --sandbox off"
        )
    try:
        try:
            with sigterm_as_ctrl_c():
                interrupted = executor.run(
                    pending, attempt, lambda i, scored: writer.submit(partial(keep, i, scored))
                )
        except KeyboardInterrupt:  # one that reached past the executor as it wound down
            interrupted = True
        finally:
            with ignoring_ctrl_c():
                writer.close()  # every attempt that finished reaches the journal
                if plan.proxy is not None:
                    plan.proxy.close()
    except BaseException:
        journal.close()
        if not journal:  # nothing ran (build failed): leave no journal to resume
            journal.path.unlink(missing_ok=True)
        raise
    with ignoring_ctrl_c():
        try:
            in_order.flush()
            tally = Tally(config.prices.as_dict())
            for row in journal.rows():
                tally.add(row)
            wall = time.perf_counter() - clock
            summary = tally.summary()
            head = results_head(prepared, summary, tally.per_task(), wall, interrupted,
                                warnings + executor.warnings)  # fmt: skip
            rows_in, written = journal.path, 0
            if config.out is not None:
                written = write_results(config.out, head, journal.lines(), redact)
                rows_in = config.out
        finally:
            journal.close()
        if config.out is not None and not interrupted and written == prepared.attempts:
            journal.path.unlink(missing_ok=True)
        if config.labbook is not None and not interrupted:
            append_labbook(config.labbook, head.run, redact)
    return RunReport(head, summary, rows_in, interrupted, resumed)


def _redacted(say: Callable[[str], None] | None, redact: Redactor) -> Callable[[str], None]:
    """``say`` for messages that may quote an agent (a close() that failed), redacted."""
    return (lambda message: say(redact(message))) if say is not None else (lambda _: None)


FULL = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is used up",
        errno.EFBIG: "a file reached the largest size this system allows"}  # fmt: skip
"""Write errors that mean no room, each as the user is told it."""


@contextmanager
def _errors_told_plainly(prepared: PreparedRun, redact: Redactor) -> Iterator[None]:
    """An error's message is redacted (a build() that failed may quote the API key); no
    room to write becomes one line saying so, where the journal is and how the run
    continues, instead of a traceback: every attempt journaled before it is kept."""
    try:
        yield
    except AgentEvalError as exc:
        if redact and redact(str(exc)) != str(exc):
            exc.args = (redact(str(exc)),)
        raise
    except OSError as exc:
        if exc.errno not in FULL:
            raise
        what = f"{FULL[exc.errno]} ({exc.strerror})"
        journal = prepared.journal_path
        if journal is None or not journal.exists():
            raise ResultsError(
                f"{what}; no attempt had finished: free some space and run again"
            ) from exc
        target = prepared.config.out or journal
        raise ResultsError(
            f"{what}; the journal {journal} keeps every attempt that finished: free some "
            f"space, then continue with the same command and --resume {target}"
        ) from exc


def _with_retries(
    config: RunConfig,
    slot: Slot,
    task: Task,
    number: int,
    stop: threading.Event,
    watch: EarlyWarnings | None = None,
) -> Scored:
    """One attempt, tried again after an endpoint failure up to --max-infra-retries, with
    backoff that honours Retry-After; a failed try's files are kept under `.tryN`."""
    for try_number in range(config.max_infra_retries + 1):
        scored = slot.run_try(task, number)
        if scored.row.failure_class != "infra_error" or try_number == config.max_infra_retries:
            break
        if watch is not None:
            watch.retrying(scored.row)
        scored.save(config.trajectory_dir, tag=f".try{try_number + 1}")
        delay = config.retry_backoff * 2**try_number
        wait = (scored.infra or {}).get("retry_after")
        if isinstance(wait, int | float):
            delay = max(delay, float(wait))
        if config.replay is not None and config.replay_missing == "error":
            delay = 0.0  # a replayed failure: no endpoint to give time to recover
        if stop.wait(min(delay, MAX_RETRY_WAIT)):
            break
    return replace(scored, row=scored.row.model_copy(update={"infra_retries": try_number}))


def _plan(prepared: PreparedRun, redact: Redactor) -> AttemptPlan:
    config, loaded = prepared.config, prepared.loaded
    return AttemptPlan(
        base_options=_base_options(prepared),
        source=prepared.source,
        trajectory_dir=config.trajectory_dir,
        results_dir=(config.out.parent if config.out else Path.cwd()),
        # The run id keeps two runs that start in the same second into one folder from
        # writing the same names; a resumed run keeps its id, so its names carry on.
        stamp=f"{prepared.stamp}-{prepared.run_id}",
        scaffold=prepared.agent.scaffold,
        model=config.model,
        meta={
            "scaffold": prepared.agent.scaffold,
            "model": config.model,
            "router_model": config.router_model,
            "suite": loaded.suite.name,
            "suite_version": loaded.suite.version,
            "suite_hash": loaded.hash,
            "run_id": prepared.run_id,
        },
        redact=redact,
        timeout_per_task=config.timeout_per_task,
        seed=config.seed,
        suite_dir=loaded.path.parent,
        suite_tools=loaded.suite.tools,
        prices=config.prices.as_dict(),
        max_cost=config.max_cost_per_task,
        sandbox=prepared.sandbox,
        attempt_logs_mb=config.max_workspace_mb if config.isolation == "attempt" else None,
    )


def model_proxy(config: RunConfig, redact: Redactor) -> ModelProxy | None:
    """The proxy between agents and the model that --record, --replay and --cache ask
    for (the recordings to replay are read now, before any attempt runs); or None."""
    if not (config.record or config.replay or config.cache_dir):
        return None
    from agent_eval.replay import ModelProxy, load_replay

    return ModelProxy(
        config.base_url,
        redact,
        keep=config.record or config.replay is not None,
        replay=load_replay(config.replay) if config.replay is not None else None,
        pass_through=config.replay_missing == "pass-through",
        cache_dir=config.cache_dir,
    )


def attempt_plan(prepared: PreparedRun, proxy: ModelProxy | None) -> AttemptPlan:
    """What every attempt of the run shares, for a caller that runs attempts itself."""
    config = prepared.config
    redact = run_redactor(config.api_key, config.options, config.secret_options)
    return replace(_plan(prepared, redact), proxy=proxy)


def _journal_header(prepared: PreparedRun) -> dict[str, Any]:
    config = prepared.config
    return {
        "run_id": prepared.run_id,
        "started": prepared.started.isoformat(),
        "suite_hash": prepared.loaded.hash,
        "agent": config.agent,
        "model": config.model,
        "isolation": config.isolation,
        "wall_seconds": prepared.earlier_wall,
        **({"lab": config.lab} if config.lab is not None else {}),
        **({"record": True} if config.record else {}),
    }


def results_head(
    prepared: PreparedRun,
    summary: Summary,
    per_task: list[TaskSummary],
    wall: float,
    interrupted: bool,
    warnings: list[str],
) -> ResultsHead:
    """The results file without its rows: `schema`, `run` (with the summary), `per_task`.

    Every key of the course harness's ``run`` is given, with its values where the user
    gave none (the router model is the model, a label not given is "unknown", the host
    is ``platform.platform()``); ``date`` is the day, as the course writes it, and
    ``started_at`` the full timestamp.
    """
    config, loaded = prepared.config, prepared.loaded
    run = RunHead(
        lab=config.lab,
        run_id=prepared.run_id,
        scaffold=prepared.agent.scaffold,
        agent_entry_point=config.agent,
        task_set=loaded.suite.name,
        task_set_version=loaded.suite.version,
        model=config.model,
        router_model=config.router_model or config.model,
        quant=_or_unknown(config.quant),
        engine=_or_unknown(config.engine),
        engine_version=_or_unknown(config.engine_version),
        base_url=config.base_url,
        repeats=config.repeats,
        host=platform.platform(),
        date=prepared.started.date().isoformat(),
        wall_seconds=round(wall + prepared.earlier_wall, 3),
        notes=config.notes or "",
        summary=summary,
        started_at=prepared.started.isoformat(),
        suite_hash=loaded.hash,
        harness_version=__version__,
        concurrency=config.concurrency,
        isolation=config.isolation,
        limits=Limits(
            timeout_per_task=config.timeout_per_task,
            max_memory_mb=config.max_memory_mb,
            max_infra_retries=config.max_infra_retries,
            max_cost_per_task=config.max_cost_per_task,
        ),
        seed=config.seed,
        prices=config.prices.as_dict(),
        options=public_options({**config.options, **config.secret_options}, config.secret_options),
        interrupted=interrupted,
        warnings=warnings,
        budgets=stated_budgets(loaded.suite, prepared.tasks, config),
        splits=prepared.splits,
        recorded=config.record or None,
        replayed_from=str(config.replay) if config.replay is not None else None,
        sandbox=prepared.sandbox_used,
    )
    return ResultsHead(schema=RESULTS_SCHEMA, run=run, per_task=per_task)


def _or_unknown(label: str | None) -> str:
    """A label the user did not give, recorded as the course records it."""
    return "unknown" if label is None else label


def _base_options(prepared: PreparedRun) -> dict[str, Any]:
    """The course's option keys plus every --option; per-attempt keys are added later."""
    config = prepared.config
    return {
        "base_url": config.base_url,
        "model": config.model,
        "router_model": config.router_model or config.model,
        "api_key": config.api_key,
        "workspace": str(prepared.source) if prepared.source else None,
        "index": str(config.index) if config.index else None,
        "log_dir": str(config.trajectory_dir),
        **({"prices": config.prices.as_dict()} if config.prices.given else {}),
        **with_secret_options(config.options, config.secret_options),
    }
