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
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_eval.errors import ConfigError
from agent_eval.results import journal_path_for
from agent_eval.run import DEFAULT_BASE_URL, RunConfig, build_settings, option_text
from agent_eval.trajectory import safe_part
from agent_eval.workflows.one_run import RunConsole, run_one

OptionValue = str | int | float | bool
SWEEP_SETS = {
    "agent": "[matrix] agents",
    "model": "[matrix] models",
    "out": "out_dir",
    "results_dir": "out_dir",
    "trajectory_dir": "out_dir",
    "resume": "starting the sweep again resumes it",
    "overwrite": "a sweep run again runs its finished configurations again",
    "replay": "replay each results file with `agent-eval run --replay`",
}
"""`[run]` keys the sweep sets for each configuration, and what does instead."""
NOT_IN_A_FILE = {"api_key": "set OPENAI_API_KEY", "secret_options": "give them to `run`"}
"""`[run]` keys that would put a secret in the sweep file."""


class _Forbid(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Matrix(_Forbid):
    """The `[matrix]` table: every combination of these is one configuration."""

    agents: list[str] = Field(min_length=1)
    models: list[str] = Field(min_length=1)
    options: dict[str, list[OptionValue]] = Field(default_factory=dict)


class SweepFile(_Forbid):
    run: dict[str, Any] = Field(default_factory=dict)
    """The settings every configuration shares, as `run`'s flags (checked by
    build_settings), and ``out_dir``, the folder of the sweep's files."""
    matrix: Matrix


@dataclass(frozen=True)
class Configuration:
    """One cell of the matrix, and the run that measures it."""

    name: str
    """The results file's stem: agent, model and options, sanitised."""
    config: RunConfig

    @property
    def state(self) -> str:
        """new (nothing yet), resume (a journal is there) or done (results, no journal)."""
        out = self.config.out
        assert out is not None  # every configuration writes a results file
        if journal_path_for(out).exists():
            return "resume"
        return "done" if out.exists() else "new"


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
    shared, matrix = dict(sweep.run), sweep.matrix
    out_dir = shared.pop("out_dir", "sweep")
    if not isinstance(out_dir, str):
        raise ConfigError(f"sweep {path}: run.out_dir: give a folder name")
    for key in sorted(shared.keys() & (SWEEP_SETS.keys() | NOT_IN_A_FILE.keys())):
        fix = NOT_IN_A_FILE.get(key) or f"the sweep sets it ({SWEEP_SETS[key]})"
        raise ConfigError(f"sweep {path}: run.{key}: not a key of a sweep's [run]: {fix}")
    shared.setdefault("tasks", "part26")
    shared["base_url"] = shared.get("base_url") or base_url or DEFAULT_BASE_URL
    options = shared.pop("options", {})
    where = f"sweep {path}: run."
    template = build_settings(
        {**shared, "agent": matrix.agents[0], "api_key": api_key, "options": options,
         "overwrite": True},  # a sweep run again runs its finished cells again
        where,
    )  # fmt: skip
    out_dir = Path(out_dir)
    keys = list(matrix.options)
    found: list[Configuration] = []
    seen: set[str] = set()
    cells = itertools.product(matrix.agents, matrix.models,
                              itertools.product(*(matrix.options[k] for k in keys)))  # fmt: skip
    for agent, model, values in cells:
        chosen = {key: option_text(value) for key, value in zip(keys, values, strict=True)}
        parts = [_agent_part(agent), model, *(f"{k}={v}" for k, v in chosen.items())]
        name = "-".join(safe_part(part) for part in parts)
        if name in seen:
            name = f"{name}-{len(found) + 1}"
        seen.add(name)
        options = {**template.options, **chosen}
        out = out_dir / f"{name}.json"
        config = replace(template, agent=agent, model=model, options=options, out=out,
                         trajectory_dir=out_dir / "trajectories" / name)  # fmt: skip
        if journal_path_for(out).exists():
            config = replace(config, resume=out)
        found.append(Configuration(name, config))
    return found


def run_sweep(
    configurations: list[Configuration],
    console: RunConsole,
    say: Callable[[str], None],
) -> Configuration | None:
    """Measure each configuration not finished earlier, in order, resuming one that a
    journal shows was interrupted. The configuration that was interrupted, or None."""
    total = len(configurations)
    for number, cell in enumerate(configurations, start=1):
        state = cell.state
        say(f"[{number}/{total}] {cell.name}" + (" (resumed)" if state == "resume" else ""))
        if state == "done":
            say(f"  finished earlier: {cell.config.out} kept, not re-run")
            continue
        try:
            done = run_one(cell.config, console)
        except KeyboardInterrupt:  # a Ctrl-C before the run took charge of it
            return cell
        if done.report.interrupted:
            return cell
    return None
