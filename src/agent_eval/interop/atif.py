"""ATIF trajectories (the Agent Trajectory Interchange Format that Harbor writes) in and
out, validated with the ``atif`` package's models of the format.

In: one ATIF file is one attempt; a folder of them, or a Harbor job folder (one trial
folder per attempt, with ``result.json`` and ``agent/trajectory.json``), is a run per
agent and model. The verdict is the verifier's reward from the trial's ``result.json``
(full reward passes), else agent-eval's own verdict in the file's ``extra``; a file with
neither is refused, never guessed. A file agent-eval wrote carries its row and its run
under ``extra.agent_eval``, and reads back as that row and run. Out: one ATIF file per
attempt of one of our runs.
"""

from __future__ import annotations

import importlib.util
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_eval.errors import ExtraMissingError, ResultsError
from agent_eval.interop.foreign import (
    AttemptDraft,
    ForeignRun,
    attempt_records,
    build_run,
    clip,
    our_head,
    our_row,
    row_document,
    task_identity,
)
from agent_eval.records import FailureClass
from agent_eval.results import AttemptResult, RunHead, RunResults
from agent_eval.trajectory import safe_part

if TYPE_CHECKING:
    from atif import Trajectory

INSTALL = "pip install -e '.[harbor]' in the agent-eval clone"
SCHEMA_VERSION = "ATIF-v1.6"
"""The ATIF version written: plain-text messages and tool observations, which every
ATIF reader since 1.6 accepts."""
OURS = "agent_eval"
"""The key under ``extra`` that carries what ATIF has no field for (task id, attempt,
verdict, checks), so that a run exported and read back is the same run."""
NOT_ROW = ("task_id", "passed", "position", "run",
           "run_id", "task_set", "task_set_version", "suite_hash")  # fmt: skip
"""Keys under ``extra.agent_eval`` that are not the row's: the task id (the row's ``id``),
the verdict (its checks say it), the row's place in the run, and the run, which files
written before ``run`` held as the four keys after it."""
MAX_FILE = 64 * 1024 * 1024
"""The largest ATIF or trial file read, in bytes."""


def require_atif(path: Path | str) -> None:
    """ExtraMissingError with the install advice when the ATIF models are not installed."""
    if importlib.util.find_spec("atif") is None:
        raise ExtraMissingError(
            f"{path}: ATIF trajectories; reading or writing them needs the ATIF models: {INSTALL}"
        )


def looks_like_atif(start: bytes) -> bool:
    """Whether a JSON file's first bytes are an ATIF trajectory's."""
    return b'"schema_version"' in start and b'"ATIF-' in start and b'"steps"' in start


def trial_folders(folder: Path) -> list[Path]:
    """The Harbor trial folders directly under ``folder`` (a job folder)."""
    return sorted(
        child
        for child in folder.iterdir()
        if child.is_dir()
        and (child / "result.json").is_file()
        and (child / "agent" / "trajectory.json").is_file()
    )


def atif_files(folder: Path) -> list[Path]:
    """The ATIF files directly in ``folder``."""
    return sorted(
        p for p in folder.glob("*.json") if p.is_file() and looks_like_atif(file_start(p))
    )


def is_atif_folder(folder: Path) -> bool:
    """A Harbor job folder or a folder of ATIF files."""
    try:
        return bool(trial_folders(folder) or atif_files(folder))
    except OSError:
        return False


def file_start(path: Path, size: int = 4096) -> bytes:
    """The first bytes of a regular file, to tell its format; empty for anything else,
    and never blocking: a FIFO named like a run is not read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return b""
    try:
        return os.read(fd, size) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    except OSError:
        return b""
    finally:
        os.close(fd)


def read_atif(path: Path) -> list[ForeignRun]:
    """The runs of an ATIF file, a folder of ATIF files or a Harbor job folder."""
    require_atif(path)
    parts: list[tuple[Path, Path | None]]
    if path.is_dir():
        trials = trial_folders(path)
        parts = [(t / "agent" / "trajectory.json", t / "result.json") for t in trials]
        parts += [(file, None) for file in atif_files(path)]
    else:
        parts = [(path, None)]
    if not parts:
        raise ResultsError(f"{path}: holds no ATIF trajectory and no Harbor trial folder")
    groups: dict[tuple[str, str, str | None], list[AttemptDraft]] = {}
    heads: dict[tuple[str, str, str | None], RunHead] = {}
    for trajectory_path, trial_path in parts:
        trajectory = _load_trajectory(trajectory_path)
        trial = _load_json(trial_path) if trial_path else None
        draft, head = _attempt(trajectory_path, trajectory, trial)
        # Runs of ours keep apart by their id: two of one agent and model stay two.
        key = (head.scaffold, head.model, head.run_id if draft.row else None)
        groups.setdefault(key, []).append(draft)
        heads.setdefault(key, head)
    runs = []
    for key, drafts in groups.items():
        _number_attempts(drafts)
        expected: dict[str, str | None] = dict.fromkeys((d.task_id for d in drafts), None)
        head = heads[key]
        if head.suite_hash is None:
            head = head.model_copy(update={"suite_hash": task_identity(expected)})
        runs.append(build_run(path, head, drafts, "atif", expected))
    return runs


def _load_json(path: Path) -> dict[str, Any]:
    try:
        if path.stat().st_size > MAX_FILE:
            raise ResultsError(f"{path}: larger than {MAX_FILE} bytes; not read")
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{path}: cannot be read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}: not valid JSON at line {exc.lineno} ({exc.msg})") from None
    if not isinstance(document, dict):
        raise ResultsError(f"{path}: expected a JSON object")
    return document


def _load_trajectory(path: Path) -> Trajectory:
    from atif import Trajectory
    from pydantic import ValidationError

    document = _load_json(path)
    try:
        return Trajectory.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "(file)"
        raise ResultsError(
            f"ATIF file {path}: {field}: {first['msg']} (not a valid ATIF trajectory)"
        ) from None


def _attempt(
    path: Path, trajectory: Trajectory, trial: dict[str, Any] | None
) -> tuple[AttemptDraft, RunHead]:
    ours: dict[str, Any] = dict((trajectory.extra or {}).get(OURS) or {})
    agent = trajectory.agent
    reward = _reward(trial)
    # A file agent-eval wrote, with no Harbor verdict beside it: our row and run, whole.
    row = _our_row(path, ours, trajectory) if trial is None and "checks" in ours else None
    if reward is not None:
        passed = reward >= 1.0
    elif row is not None:
        passed = row.passed
    elif isinstance(ours.get("passed"), bool):
        passed = ours["passed"]
    else:
        raise ResultsError(
            f"ATIF file {path}: records no verdict (no verifier reward in a Harbor trial "
            "result.json beside it, and none in extra); give the Harbor job folder"
        )
    task_id = str(ours.get("task_id") or (trial or {}).get("task_name") or path.stem)
    records = list(_records(trajectory))
    metrics = trajectory.final_metrics
    agent_result = (trial or {}).get("agent_result") or {}
    prompt = metrics.total_prompt_tokens if metrics else None
    completion = metrics.total_completion_tokens if metrics else None
    if prompt is None:
        prompt = agent_result.get("n_input_tokens")
    if completion is None:
        completion = agent_result.get("n_output_tokens")
    failure: FailureClass | None = ours.get("failure_class")
    error = ours.get("error")
    exception = (trial or {}).get("exception_info")
    if exception and not passed:
        failure = "agent_error"
        error = f"{exception.get('exception_type')}: {exception.get('exception_message')}"
    if error is None and reward is not None and not passed:
        error = f"verifier reward {reward:g}"
    stopped = str(ours.get("stopped") or ("agent_error" if exception else "finished"))
    if row is not None:
        stopped, error = row.stopped or "", row.error
    records.append({"type": "stop", "reason": stopped, "detail": error})
    user = next((s for s in trajectory.steps if s.source == "user"), None)
    draft = AttemptDraft(
        task_id=row.id if row else task_id,
        attempt=row.attempt if row else int(ours.get("attempt") or 0),
        passed=passed,
        answer=str(ours.get("answer") or _last_agent_text(trajectory)),
        category=str(ours.get("category") or ""),
        records=records,
        prompt_tokens=prompt,
        completion_tokens=completion,
        tokens=ours.get("tokens"),
        seconds=ours.get("seconds") or _trial_seconds(trial),
        stopped=stopped,
        failure_class=failure,
        error=error,
        score={"reward": reward, "session_id": trajectory.session_id},
        task_text=user.message if user is not None and isinstance(user.message, str) else None,
        row=row,
        position=ours["position"] if row and isinstance(ours.get("position"), int) else None,
    )
    if row is not None and isinstance(ours.get("run"), dict):
        where = f"ATIF file {path}: extra.{OURS}.run"
        return draft, our_head(where, ours["run"])
    trial_agent = (trial or {}).get("agent_info") or {}
    model = agent.model_name or ((trial_agent.get("model_info") or {}).get("name"))
    # A Harbor trajectory lies at JOB/TRIAL/agent/trajectory.json: the job names the run.
    folder = path.parent.parent.parent.name if trial else path.parent.name
    job_id = ((trial or {}).get("config") or {}).get("job_id")
    head = RunHead(
        run_id=str(ours.get("run_id") or job_id or folder),
        scaffold=agent.name,
        task_set=str(ours.get("task_set") or folder),
        task_set_version=str(ours.get("task_set_version") or ""),
        model=model or "(not recorded)",
        suite_hash=ours.get("suite_hash"),
        harness_version=f"{agent.name} {agent.version}",
        notes=f"ATIF trajectories ({trajectory.schema_version})"
        + (" from a Harbor job" if trial else ""),
        options={"source_format": "atif"},
    )
    return draft, head


def _our_row(path: Path, ours: dict[str, Any], trajectory: Trajectory) -> AttemptResult:
    """The row under ``extra.agent_eval``; a file written before the row's every field
    was carried lacks a few, and takes its tokens from the trajectory's final metrics."""
    fields = {key: value for key, value in ours.items() if key not in NOT_ROW}
    metrics = trajectory.final_metrics
    if metrics is not None:
        fields.setdefault("prompt_tokens", metrics.total_prompt_tokens)
        fields.setdefault("completion_tokens", metrics.total_completion_tokens)
    return our_row(f"ATIF file {path}: extra.{OURS}", {"id": ours.get("task_id"), **fields})


def _reward(trial: dict[str, Any] | None) -> float | None:
    rewards = ((trial or {}).get("verifier_result") or {}).get("rewards") or {}
    if not rewards:
        return None
    value = rewards.get("reward", next(iter(rewards.values())))
    return float(value) if isinstance(value, int | float) else None


def _trial_seconds(trial: dict[str, Any] | None) -> float | None:
    from datetime import datetime

    timing = (trial or {}).get("agent_execution") or trial or {}
    start, end = timing.get("started_at"), timing.get("finished_at")
    if not start or not end:
        return None
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def _number_attempts(drafts: list[AttemptDraft]) -> None:
    """Attempts the files do not number are numbered in file order, per task."""
    seen: dict[str, int] = {}
    for draft in drafts:
        seen[draft.task_id] = seen.get(draft.task_id, 0) + 1
        if not draft.attempt:
            draft.attempt = seen[draft.task_id]


def _text(message: Any) -> str:
    if isinstance(message, str):
        return message
    return " ".join(getattr(part, "text", None) or "" for part in message or [])


def _last_agent_text(trajectory: Trajectory) -> str:
    for step in reversed(trajectory.steps):
        if step.source == "agent" and _text(step.message):
            return _text(step.message)
    return ""


def _records(trajectory: Trajectory) -> Iterator[dict[str, Any]]:
    """A model record per agent step, then a tool record per call with its observation."""
    for step in trajectory.steps:
        if step.source != "agent":
            continue
        calls = step.tool_calls or []
        metrics = step.metrics
        yield {
            "type": "model",
            "role": "assistant",
            "model": step.model_name or trajectory.agent.model_name,
            "tool_calls": [call.function_name for call in calls],
            "prompt_tokens": metrics.prompt_tokens if metrics else None,
            "completion_tokens": metrics.completion_tokens if metrics else None,
            "seconds": (step.extra or {}).get("seconds"),
            "content": clip(_text(step.message)),
        }
        results = {
            result.source_call_id: result
            for result in (step.observation.results if step.observation else [])
        }
        for call in calls:
            result = results.get(call.tool_call_id)
            extra = (result.extra if result else None) or {}
            yield {
                "type": "tool",
                "tool": call.function_name,
                "args": call.arguments,
                "error": bool(extra.get("error", False)),
                "result": clip(_text(result.content)) if result else "",
                "call_id": call.tool_call_id,
            }


# -- out ---------------------------------------------------------------------------


def write_atif(run: RunResults, out: Path) -> list[Path]:
    """One ATIF file per attempt of ``run`` in the folder ``out``, each validated by the
    ATIF models before it is written; the files written."""
    require_atif(out)
    from atif import Trajectory

    out.mkdir(parents=True, exist_ok=True)
    head = run.run
    run_head = head.model_dump(mode="json", exclude={"summary"})
    written = []
    for position, row in enumerate(run.rows):
        records = attempt_records(run, row)
        steps = _steps(records, _meta(records).get("task") or row.id)
        document = row_document(row)
        ours = {
            "task_id": document.pop("id"),
            "passed": row.passed,
            **document,
            "position": position,
            "run": run_head,
        }
        trajectory = Trajectory.model_validate(
            {
                "schema_version": SCHEMA_VERSION,
                "session_id": f"{head.run_id}-{row.id}-r{row.attempt}",
                "agent": {
                    "name": head.scaffold,
                    "version": head.harness_version or "unknown",
                    "model_name": head.model,
                },
                "steps": steps,
                "final_metrics": {
                    "total_prompt_tokens": row.prompt_tokens,
                    "total_completion_tokens": row.completion_tokens,
                    "total_steps": len(steps),
                },
                "extra": {OURS: ours},
            }
        )
        name = f"{safe_part(row.id)}-r{row.attempt}.json"
        path = out / name
        path.write_text(
            json.dumps(trajectory.to_json_dict(), indent=2, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
        written.append(path)
    return written


def _meta(records: list[dict[str, Any]]) -> dict[str, Any]:
    meta = records[0].get("meta") if records else None
    return meta if isinstance(meta, dict) else {}


def _steps(records: list[dict[str, Any]], task: str) -> list[dict[str, Any]]:
    """ATIF steps from our records: the task as the user's step, then one agent step per
    model reply holding the tool calls that followed it and their results."""
    steps: list[dict[str, Any]] = [{"step_id": 1, "source": "user", "message": str(task)}]
    current: dict[str, Any] | None = None
    for record in records:
        kind = record.get("type")
        if kind == "model":
            current = {
                "step_id": len(steps) + 1,
                "source": "agent",
                "message": str(record.get("content") or ""),
                "model_name": record.get("model"),
                "metrics": {
                    "prompt_tokens": record.get("prompt_tokens"),
                    "completion_tokens": record.get("completion_tokens"),
                },
                "extra": {"seconds": record.get("seconds")},
            }
            steps.append(current)
        elif kind == "tool":
            if current is None:  # a tool result with no model reply before it
                current = {"step_id": len(steps) + 1, "source": "agent", "message": ""}
                steps.append(current)
            number = len(current.get("tool_calls", []))
            call_id = str(record.get("call_id") or f"call_{len(steps)}_{number}")
            args = record.get("args")
            current.setdefault("tool_calls", []).append(
                {
                    "tool_call_id": call_id,
                    "function_name": str(record.get("tool")),
                    "arguments": args if isinstance(args, dict) else {"value": args},
                }
            )
            current.setdefault("observation", {"results": []})["results"].append(
                {
                    "source_call_id": call_id,
                    "content": str(record.get("result") or ""),
                    "extra": {"error": bool(record.get("error"))},
                }
            )
    return steps
