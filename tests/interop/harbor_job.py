"""Write a Harbor job folder with Harbor's own models, from ATIF files agent-eval exported.

Run by an interpreter that has the ``harbor`` package (Python 3.12 or newer): one trial
folder per file, its ``agent/trajectory.json`` the trajectory without agent-eval's extra,
its ``result.json`` a Harbor ``TrialResult`` whose verifier reward is 1 for a passed
attempt and 0 for a failed one, so that a reader can only learn the verdict from Harbor.

    python harbor_job.py ATIF_DIR JOB_DIR
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from harbor.models.agent.context import AgentContext
from harbor.models.task.id import LocalTaskId
from harbor.models.trajectories import Trajectory
from harbor.models.trial.config import TaskConfig, TrialConfig
from harbor.models.trial.result import AgentInfo, ModelInfo, TimingInfo, TrialResult
from harbor.models.verifier.result import VerifierResult


def main(atif_dir: Path, job_dir: Path) -> None:
    start = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    for file in sorted(atif_dir.glob("*.json")):
        trajectory = Trajectory.model_validate_json(file.read_text(encoding="utf-8"))
        ours = (trajectory.extra or {})["agent_eval"]
        trajectory.extra = None
        trial_name = f"{ours['task_id']}__{file.stem}"
        trial_dir = job_dir / trial_name
        (trial_dir / "agent").mkdir(parents=True)
        (trial_dir / "agent" / "trajectory.json").write_text(
            trajectory.model_dump_json(indent=2, exclude_none=True), encoding="utf-8"
        )
        task_path = Path("tasks") / ours["task_id"]
        result = TrialResult(
            task_name=ours["task_id"],
            trial_name=trial_name,
            trial_uri=trial_dir.resolve().as_uri(),
            task_id=LocalTaskId(path=task_path),
            task_checksum="0" * 16,
            config=TrialConfig(
                task=TaskConfig(path=task_path),
                trial_name=trial_name,
                trials_dir=job_dir,
                job_id=None,
            ),
            agent_info=AgentInfo(
                name=trajectory.agent.name,
                version=trajectory.agent.version,
                model_info=ModelInfo(name=trajectory.agent.model_name or "", provider="openai"),
            ),
            agent_result=AgentContext(n_input_tokens=ours["tokens"], n_output_tokens=0),
            verifier_result=VerifierResult(rewards={"reward": 1.0 if ours["passed"] else 0.0}),
            started_at=start,
            finished_at=start + timedelta(seconds=30),
            agent_execution=TimingInfo(started_at=start, finished_at=start + timedelta(seconds=12)),
        )
        (trial_dir / "result.json").write_text(result.model_dump_json(indent=4), encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
