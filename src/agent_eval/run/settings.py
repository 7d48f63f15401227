"""One validated object per `agent-eval run`: what to run, against what, and how to record it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agent_eval.errors import ConfigError
from agent_eval.results import journal_path_for

if TYPE_CHECKING:
    from pydantic import TypeAdapter

DEFAULT_BASE_URL = "http://127.0.0.1:4000/v1"
"""The course gateway's address, where `agent-eval serve-model` also listens."""
DEFAULT_MODEL = "local/chat"
Isolation = Literal["attempt", "worker"]
"""attempt: each attempt starts from the state build() left; worker: a worker's attempts
share its process, and state carries over (the course harness's behaviour)."""
ISOLATIONS: tuple[Isolation, ...] = ("attempt", "worker")
SANDBOX_MODES = ("auto", "on", "off")
"""--sandbox: auto uses the kernel sandbox where it works, on insists on it, off never."""
SANDBOX_ENV = "AGENT_EVAL_SANDBOX"
"""Sets the default of --sandbox (auto when unset)."""
SANDBOX_NETWORKS = ("model", "none", "host")
"""--sandbox-network: only the model endpoint (default), nothing, or the host's network."""
SPLITS = ("dev", "test")
EXECUTORS = ("local", "ray")
"""Where attempts run: worker processes on this machine, or a Ray cluster."""


PRICE_FLAGS = {
    "per_million": "--cost-per-million",
    "input_per_million": "--input-cost-per-million",
    "output_per_million": "--output-cost-per-million",
}
"""Each price and the flag that gives it."""


@dataclass(frozen=True)
class Prices:
    """The user's own prices in currency units per million tokens; the harness invents none."""

    per_million: float | None = None
    input_per_million: float | None = None
    output_per_million: float | None = None

    def __post_init__(self) -> None:
        for name, flag in PRICE_FLAGS.items():
            value = getattr(self, name)
            if value is not None and not value >= 0:  # NaN too
                raise ConfigError(f"{flag} {value:g}: a price is 0 or more; give your price")
        if self.per_million is not None and (
            self.input_per_million is not None or self.output_per_million is not None
        ):
            raise ConfigError(
                "give either --cost-per-million or the input and output prices, not both"
            )

    def as_dict(self) -> dict[str, float | None]:
        return {
            "per_million": self.per_million,
            "input_per_million": self.input_per_million,
            "output_per_million": self.output_per_million,
        }

    @property
    def given(self) -> bool:
        return any(v is not None for v in self.as_dict().values())


@dataclass(frozen=True)
class RunConfig:
    """Everything `run` needs; the CLI builds it from flags and the environment."""

    agent: str
    tasks: str
    only: tuple[str, ...] = ()
    """Categories to keep; empty keeps all."""
    task_ids: tuple[str, ...] = ()
    """Task ids to keep; empty keeps all."""
    repeats: int = 1
    out: Path | None = None
    results_dir: Path | None = None
    """Where a run without ``out`` writes its results file, named
    ``{stamp}-{scaffold}-{model}.json``; None writes only the journal."""
    trajectory_dir: Path = Path("trajectories")
    base_url: str = DEFAULT_BASE_URL
    model: str = DEFAULT_MODEL
    router_model: str | None = None
    api_key: str | None = None
    workspace: Path | None = None
    allow_empty_workspace: bool = False
    """Run even when the workspace has no documents (tasks that need none)."""
    index: Path | None = None
    options: dict[str, str] = field(default_factory=dict)
    secret_options: dict[str, str] = field(default_factory=dict)
    """--secret-option: given to the agent like options, never recorded, scrubbed from text."""
    prices: Prices = field(default_factory=Prices)
    quant: str | None = None
    engine: str | None = None
    engine_version: str | None = None
    notes: str | None = None
    lab: str | None = None
    labbook: Path | None = None
    timeout_per_task: float | None = None
    """Hard time budget per attempt, for tasks without their own max_seconds."""
    concurrency: int = 1
    """Attempts run side by side, each in its own worker process."""
    max_infra_retries: int = 2
    """Retries of an attempt whose model endpoint failed (down, timeout, 429, 5xx)."""
    retry_backoff: float = 1.0
    """First retry delay in seconds, doubled each retry; a Retry-After wins when longer."""
    max_memory_mb: int | None = None
    """Address-space limit of each worker; an agent past it is stopped as over_budget."""
    resume: Path | None = None
    """A results file (or its journal) whose finished attempts are kept, not re-run."""
    seed: int | None = None
    """Makes every choice the harness makes reproducible; also given to the agent."""
    shuffle: bool = False
    """Run attempts in a seeded random order (outputs keep the run's attempt-major order)."""
    split: str | None = None
    """Keep only the tasks of this split (dev or test)."""
    max_test_looks: int = 3
    """Warn once this suite version's test split has been evaluated more often than this."""
    max_cost_per_task: float | None = None
    """Cost budget of one attempt at the user's prices; past it the attempt is over_budget."""
    isolation: Isolation = "attempt"
    """What an attempt may see of earlier ones: nothing (attempt), or its worker's state."""
    executor: str = "local"
    """Where attempts run: `local` worker processes or a `ray` cluster."""
    ray_address: str | None = None
    """The Ray cluster (`auto`, `HOST:PORT`, `ray://HOST:10001`); None starts a local one."""
    overwrite: bool = False
    """A new run may replace a finished run's results file at ``out``."""
    record: bool = False
    """Record every attempt's model calls through the proxy, one file beside each trajectory."""
    replay: Path | None = None
    """A recorded run's results file: each attempt is answered from its own recording."""
    replay_missing: str = "error"
    """A call the recording lacks: a replay_mismatch (error), or sent on (pass-through)."""
    cache_dir: Path | None = None
    """Reuse replies stored here for the same request in the same task and attempt number."""
    sandbox: str = field(default_factory=lambda: os.environ.get(SANDBOX_ENV) or "auto")
    """Whether attempts and state checks run in the kernel sandbox: auto, on or off
    (default: $AGENT_EVAL_SANDBOX, else auto)."""
    sandbox_network: str = "model"
    """What a sandboxed agent may reach: the model endpoint, nothing, or the host network."""
    max_workspace_mb: int = 1024
    """The RAM a sandboxed slot's attempt may fill: its workspace, /tmp and HOME together."""
    preflight: bool = False
    """Check, before the first attempt, that the endpoint answers and lists the models."""

    def __post_init__(self) -> None:
        if self.repeats < 1:
            raise ConfigError(f"--repeats {self.repeats}: give 1 or more")
        if self.split not in (None, *SPLITS):
            raise ConfigError(f"--split {self.split}: choose {' or '.join(SPLITS)}")
        if self.max_test_looks < 1:
            raise ConfigError(f"--max-test-looks {self.max_test_looks}: give 1 or more")
        if self.isolation not in ISOLATIONS:
            raise ConfigError(f"--isolation {self.isolation}: give attempt or worker")
        if self.concurrency < 1:
            raise ConfigError(f"--concurrency {self.concurrency}: give 1 or more")
        if self.max_infra_retries < 0:
            raise ConfigError(f"--max-infra-retries {self.max_infra_retries}: give 0 or more")
        if self.max_memory_mb is not None and self.max_memory_mb < 64:
            raise ConfigError(f"--max-memory-mb {self.max_memory_mb}: give at least 64")
        if self.resume is not None and not (
            self.resume.exists() or journal_path_for(self.resume).exists()  # after a crash
        ):
            raise ConfigError(
                f"--resume {self.resume}: no such results file, and no journal "
                f"{journal_path_for(self.resume).name} next to it"
            )
        if self.executor not in EXECUTORS:
            raise ConfigError(f"--executor {self.executor}: choose {' or '.join(EXECUTORS)}")
        if self.sandbox not in SANDBOX_MODES:
            raise ConfigError(f"--sandbox {self.sandbox}: choose {', '.join(SANDBOX_MODES)}")
        if self.sandbox_network not in SANDBOX_NETWORKS:
            raise ConfigError(
                f"--sandbox-network {self.sandbox_network}: choose {', '.join(SANDBOX_NETWORKS)}"
            )
        if self.max_workspace_mb < 1:
            raise ConfigError(f"--max-workspace-mb {self.max_workspace_mb}: give 1 or more")
        if self.ray_address is not None and self.executor != "ray":
            raise ConfigError(f"--ray-address {self.ray_address}: add --executor ray")
        if self.timeout_per_task is not None and self.timeout_per_task <= 0:
            raise ConfigError(f"--timeout-per-task {self.timeout_per_task}: give seconds > 0")
        if self.max_cost_per_task is not None:
            if self.max_cost_per_task <= 0:
                raise ConfigError(f"--max-cost-per-task {self.max_cost_per_task}: give a cost > 0")
            if not self.prices.given:
                raise ConfigError(
                    f"--max-cost-per-task {self.max_cost_per_task}: cost needs your price; "
                    "add --cost-per-million, or --input-cost-per-million and "
                    "--output-cost-per-million"
                )
        self._check_traffic()
        if self.index is not None and not self.index.exists():
            raise ConfigError(
                f"--index {self.index}: no such index; build one with `agent-eval index DIR -o "
                f"{self.index}`"
            )

    def _check_traffic(self) -> None:
        """--record, --replay, --replay-missing and --cache."""
        if self.replay_missing not in REPLAY_MISSING:
            raise ConfigError(
                f"--replay-missing {self.replay_missing}: choose {' or '.join(REPLAY_MISSING)}"
            )
        if self.replay is None:
            if self.replay_missing != "error":
                raise ConfigError(
                    f"--replay-missing {self.replay_missing}: add --replay RESULTS.json"
                )
            return
        if not self.replay.is_file():
            raise ConfigError(
                f"--replay {self.replay}: no such results file; give the results file of a "
                "run made with --record"
            )
        if self.cache_dir is not None:
            raise ConfigError(
                f"--cache {self.cache_dir}: a replay answers from its recording; drop --cache"
            )


REPLAY_MISSING = ("error", "pass-through")
"""What --replay does with a call its recording lacks."""


def parse_options(pairs: tuple[str, ...] | list[str], flag: str = "--option") -> dict[str, str]:
    """`--option KEY=VALUE` pairs as a dict; a pair without '=' is a ConfigError."""
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            # a --secret-option's text is not repeated: it may be the secret itself
            shown = repr(pair) if flag == "--option" else "(value not shown)"
            raise ConfigError(f"{flag} {shown}: write it as KEY=VALUE")
        options[key.strip()] = value
    return options


PRICE_KEYS = {"cost_per_million": "per_million", "input_cost_per_million": "input_per_million",
              "output_cost_per_million": "output_per_million"}  # fmt: skip
"""Each price as a setting (its flag's name) and as a field of Prices."""
FROM_THE_COMMAND_LINE = {"no_preflight", "endpoint_named"}
"""What `run`'s command line says that decides the endpoint check: --no-preflight, and
whether --base-url, --model or --router-model was given (which checks any agent)."""
SETTINGS = frozenset(
    {f.name for f in fields(RunConfig)} - {"prices"} | set(PRICE_KEYS) | FROM_THE_COMMAND_LINE
)
"""The names a run's settings are given by: `run`'s flags with - as _, without the ones
that only change what the console shows (--verbose, --otlp-*)."""


def build_settings(values: Mapping[str, Any], where: str = "") -> RunConfig:
    """The RunConfig that ``values`` name: the one way settings become a run, whether
    they come from `run`'s flags, a duel side, a sweep's `[run]` table, the demo or the
    audit. A list or a tuple, a path or its text are both taken; ``options`` and
    ``secret_options`` as KEY=VALUE pairs or a table. A name that is not a setting, or a
    value of the wrong kind, is a ConfigError that names it, after ``where`` (e.g.
    ``"sweep m.toml: run."``)."""
    from pydantic import ValidationError

    unknown = sorted(set(values) - SETTINGS)
    if unknown:
        raise ConfigError(
            f"{where}{unknown[0]}: not a run setting; the settings are `agent-eval run`'s "
            "flags, with _ for - (e.g. max_infra_retries)"
        )
    given = {key: value for key, value in values.items()
             if key not in PRICE_KEYS and key not in FROM_THE_COMMAND_LINE}  # fmt: skip
    if "no_preflight" in values:
        from agent_eval.run.preflight import wanted

        # Without a named endpoint only the shipped agents that call a model are checked
        # (a duel's side); a replay never contacts the endpoint, so nothing is checked.
        checks = not values["no_preflight"] and not values.get("replay")
        given["preflight"] = checks and wanted(values["agent"], values.get("endpoint_named", False))
    resume = given.get("resume")
    if resume is not None and given.get("out") is None and str(resume).endswith(".json"):
        given["out"] = resume  # a resumed run goes on writing its results file
    for key in ("only", "task_ids"):  # `only = "retrieval"`, as `--only retrieval` says it
        if isinstance(given.get(key), str):
            given[key] = [given[key]]
    for key, flag in (("options", "--option"), ("secret_options", "--secret-option")):
        if key in given:
            given[key] = _options(given[key], flag, f"{where}{key}")
    try:
        prices = Prices(**{PRICE_KEYS[key]: v for key, v in values.items() if key in PRICE_KEYS})
        return _adapter().validate_python({**given, "prices": prices})
    except ValidationError as exc:
        first = exc.errors()[0]
        at = ".".join(str(part) for part in first["loc"])
        raise ConfigError(f"{where}{at}: {first['msg']}") from None
    except ConfigError as exc:
        if not where:
            raise
        raise ConfigError(f"{where.rstrip('.')}: {exc}") from None


@cache
def _adapter() -> TypeAdapter[RunConfig]:
    """Checks each setting's kind and turns text into paths and lists into tuples; made
    on first use, so that commands which run nothing never pay for it."""
    from pydantic import TypeAdapter

    return TypeAdapter(RunConfig)


def _options(value: object, flag: str, where: str) -> dict[str, str]:
    """KEY=VALUE pairs (flags) or a table (TOML) as the agent's text options."""
    if isinstance(value, Mapping):
        return {str(key): option_text(item) for key, item in value.items()}
    if isinstance(value, list | tuple) and all(isinstance(pair, str) for pair in value):
        return parse_options(value, flag)
    raise ConfigError(f"{where}: give a table of options or KEY=VALUE pairs")


def option_text(value: object) -> str:
    """An option's value as the agent receives it: TOML's true as true, not True."""
    return str(value).lower() if isinstance(value, bool) else str(value)
