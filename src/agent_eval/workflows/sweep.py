"""A sweep: one TOML file naming a matrix of configurations (agents × models × options)
and the run settings they share. Each configuration is one run with its own results file,
so a sweep that was interrupted continues where it stopped when it is started again.

```toml
[run]
tasks = "part26"
repeats = 3
concurrency = 4
out_dir = "sweep-out"

[matrix]
agents = ["builtin:minimal", "builtin:multi-agent"]
models = ["local/chat", "local/answer"]
options = { tool_mode = ["native", "json"] }
```
"""

from __future__ import annotations

import itertools
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agent_eval.errors import ConfigError
from agent_eval.results import journal_path_for
from agent_eval.run.settings import DEFAULT_BASE_URL, Prices, RunConfig
from agent_eval.trajectory import safe_part

OptionValue = str | int | float | bool


class _Forbid(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SweepRun(_Forbid):
    """The `[run]` table: every setting the configurations share, as `run`'s flags."""

    tasks: str = "part26"
    out_dir: str = "sweep"
    repeats: int = Field(default=1, ge=1)
    concurrency: int = Field(default=1, ge=1)
    base_url: str | None = None
    router_model: str | None = None
    workspace: str | None = None
    index: str | None = None
    only: list[str] = Field(default_factory=list)
    task_ids: list[str] = Field(default_factory=list)
    options: dict[str, OptionValue] = Field(default_factory=dict)
    cost_per_million: float | None = None
    input_cost_per_million: float | None = None
    output_cost_per_million: float | None = None
    max_cost_per_task: float | None = None
    timeout_per_task: float | None = None
    max_infra_retries: int = Field(default=2, ge=0)
    max_memory_mb: int | None = None
    seed: int | None = None
    shuffle: bool = False
    split: Literal["dev", "test"] | None = None
    quant: str | None = None
    engine: str | None = None
    engine_version: str | None = None
    notes: str | None = None
    lab: str | None = None
    labbook: str | None = None
    max_test_looks: int = Field(default=3, ge=1)

    @field_validator("only", "task_ids", mode="before")
    @classmethod
    def _one_or_more(cls, value: object) -> object:
        """``only = "retrieval"`` as the course's ``--only retrieval`` says it, or a list."""
        return [value] if isinstance(value, str) else value


class Matrix(_Forbid):
    """The `[matrix]` table: every combination of these is one configuration."""

    agents: list[str] = Field(min_length=1)
    models: list[str] = Field(min_length=1)
    options: dict[str, list[OptionValue]] = Field(default_factory=dict)


class SweepFile(_Forbid):
    run: SweepRun = SweepRun()
    matrix: Matrix


@dataclass(frozen=True)
class Configuration:
    """One cell of the matrix, and the run that measures it."""

    name: str
    """The results file's stem: agent, model and options, sanitised."""
    config: RunConfig
    max_test_looks: int = 3
    """Warn past this many looks at the suite version's test split."""

    @property
    def state(self) -> str:
        """new (nothing yet), resume (a journal is there) or done (results, no journal)."""
        out = self.config.out
        assert out is not None  # every configuration writes a results file
        if journal_path_for(out).exists():
            return "resume"
        return "done" if out.exists() else "new"


def _text(value: OptionValue) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _agent_part(agent: str) -> str:
    if agent.startswith("builtin:"):
        return agent.removeprefix("builtin:")
    if agent.startswith("cmd:"):
        words = agent.removeprefix("cmd:").split()
        return Path(words[-1]).stem if words else "cmd"
    return Path(agent.split(":")[0]).stem


def load_sweep(path: Path, api_key: str | None, base_url: str | None) -> list[Configuration]:
    """Every configuration of the sweep file, in matrix order; ConfigError naming the key."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"sweep {path}: no such file; give a matrix TOML file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"sweep {path}: not valid TOML ({exc})") from None
    try:
        sweep = SweepFile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"sweep {path}: {where}: {first['msg']}") from None
    shared, matrix = sweep.run, sweep.matrix
    out_dir = Path(shared.out_dir)
    template = RunConfig(
        overwrite=True,  # a sweep run again runs its finished cells again
        agent=matrix.agents[0],
        tasks=shared.tasks,
        only=tuple(shared.only),
        task_ids=tuple(shared.task_ids),
        repeats=shared.repeats,
        base_url=shared.base_url or base_url or DEFAULT_BASE_URL,
        router_model=shared.router_model,
        api_key=api_key,
        workspace=Path(shared.workspace) if shared.workspace else None,
        index=Path(shared.index) if shared.index else None,
        prices=Prices(
            shared.cost_per_million, shared.input_cost_per_million, shared.output_cost_per_million
        ),
        quant=shared.quant,
        engine=shared.engine,
        engine_version=shared.engine_version,
        notes=shared.notes,
        lab=shared.lab,
        labbook=Path(shared.labbook) if shared.labbook else None,
        timeout_per_task=shared.timeout_per_task,
        concurrency=shared.concurrency,
        max_infra_retries=shared.max_infra_retries,
        max_memory_mb=shared.max_memory_mb,
        seed=shared.seed,
        shuffle=shared.shuffle,
        split=shared.split,
        max_cost_per_task=shared.max_cost_per_task,
    )
    keys = list(matrix.options)
    found: list[Configuration] = []
    seen: set[str] = set()
    cells = itertools.product(matrix.agents, matrix.models,
                              itertools.product(*(matrix.options[k] for k in keys)))  # fmt: skip
    for agent, model, values in cells:
        chosen = {key: _text(value) for key, value in zip(keys, values, strict=True)}
        parts = [_agent_part(agent), model, *(f"{k}={v}" for k, v in chosen.items())]
        name = "-".join(safe_part(part) for part in parts)
        if name in seen:
            name = f"{name}-{len(found) + 1}"
        seen.add(name)
        options = {**{k: _text(v) for k, v in shared.options.items()}, **chosen}
        out = out_dir / f"{name}.json"
        config = replace(template, agent=agent, model=model, options=options, out=out,
                         trajectory_dir=out_dir / "trajectories" / name)  # fmt: skip
        if journal_path_for(out).exists():
            config = replace(config, resume=out)
        found.append(Configuration(name, config, shared.max_test_looks))
    return found
