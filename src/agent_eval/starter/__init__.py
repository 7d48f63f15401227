"""The course's starting point: the folder `agent-eval init` writes, and the suite a run
uses when no ``--tasks`` is given.

The folder holds what the lesson assumes a student has: the suite as ``agent-tasks.json``
(a shipped suite's file, byte for byte), its documents in ``agent-workspace/``, an agent
of their own to edit (``my_agent.py``), the lesson's four-role system
(``examples/multi-agent-system.py``) and a README of the next commands. Nothing that
exists is ever overwritten.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent_eval.errors import ConfigError
from agent_eval.records import CommandCheck
from agent_eval.suite import load_suite, shipped_suites

COURSE_SUITE_FILE = "agent-tasks.json"
"""The course harness's ``--tasks`` default, in the current folder."""
FALLBACK_SUITE = "part26"
"""What a run uses without ``--tasks`` when the folder has no agent-tasks.json."""
WORKSPACE_FOLDER = "agent-workspace"
"""The lesson's documents folder (``--workspace ./agent-workspace``)."""
AGENT_FILE = "my_agent.py"
FOUR_ROLE_FILE = "examples/multi-agent-system.py"
HERE = Path(__file__).resolve().parent


def default_tasks(folder: Path) -> str:
    """The suite of a run without ``--tasks``: ./agent-tasks.json when it exists, as in
    the course, else the shipped part26."""
    return COURSE_SUITE_FILE if (folder / COURSE_SUITE_FILE).is_file() else FALLBACK_SUITE


@dataclass(frozen=True)
class Starter:
    """The files of a starter folder, by path inside it, and what each group is."""

    files: dict[str, bytes]
    lines: list[str]
    """One line per group of files, for the user: what was written and why."""


def plan_starter(suite_name: str = FALLBACK_SUITE) -> Starter:
    """Every file `agent-eval init --suite NAME` writes, with its bytes."""
    shipped = shipped_suites()
    if suite_name not in shipped:
        known = ", ".join(sorted(shipped))
        raise ConfigError(f"--suite {suite_name}: no shipped suite of that name ({known})")
    suite_file = shipped[suite_name]
    loaded = load_suite(suite_name)
    suite = loaded.suite
    files = {COURSE_SUITE_FILE: suite_file.read_bytes()}
    lines = [
        f"{COURSE_SUITE_FILE}: the shipped suite {suite_name} ({suite.name} {suite.version}, "
        f"{len(suite.tasks)} tasks)"
    ]
    if loaded.documents is not None:
        documents = _tree(loaded.documents, WORKSPACE_FOLDER)
        files.update(documents)
        lines.append(f"{WORKSPACE_FOLDER}/: its {len(documents)} document(s)")
    # Command checks run hidden files that live next to the suite file (with_files).
    hidden = sorted({check.with_files for task in suite.tasks for check in task.expect_state
                     if isinstance(check, CommandCheck) and check.with_files})  # fmt: skip
    for folder in hidden:
        files.update(_tree(suite_file.parent / folder, folder))
        lines.append(f"{folder}/: the files its command checks run, next to the suite")
    files[AGENT_FILE] = (HERE / "my_agent.py").read_bytes()
    lines.append(f"{AGENT_FILE}: your agent (search the documents, then ask the model); edit it")
    files[FOUR_ROLE_FILE] = (HERE / "multi_agent_system.py").read_bytes()
    lines.append(f"{FOUR_ROLE_FILE}: the lesson's four-role system")
    files["README.md"] = readme(suite_name).encode("utf-8")
    lines.append("README.md: the next commands")
    return Starter(files, lines)


def write_starter(folder: Path, suite_name: str = FALLBACK_SUITE) -> Starter:
    """Write the starter folder; raise ConfigError, writing nothing, when any of its
    files exists already (an edited agent or suite is never overwritten)."""
    starter = plan_starter(suite_name)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{folder}: is a file, not a folder; give a new folder's name")
    taken = [name for name in starter.files if _taken(folder / name)]
    if taken:
        tops = sorted({name.split("/")[0] + ("/" if "/" in name else "") for name in taken})
        raise ConfigError(
            f"{folder}: {', '.join(tops)} already there; init never overwrites a file, so it "
            "wrote nothing: move them away, or give another folder (agent-eval init DIR)"
        )
    for name, data in starter.files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return starter


def next_commands(model: str = "local/chat") -> list[str]:
    """The three commands after init: a model server, a run of my_agent.py, a report."""
    return [
        "agent-eval serve-model &",
        f"agent-eval run --agent {AGENT_FILE} --model {model} --repeats 3 --out r.json",
        "agent-eval report r.json",
    ]


def readme(suite_name: str) -> str:
    """The starter folder's README: what is here and the next three commands."""
    commands = "\n".join(next_commands())
    return f"""# Your agent, measured

Written by `agent-eval init` (suite {suite_name}).

- `{COURSE_SUITE_FILE}`: the tasks. `agent-eval run` uses this file when no `--tasks` is
  given, and says so. Edit it to add your own tasks; `agent-eval validate
  {COURSE_SUITE_FILE}` checks it.
- `{WORKSPACE_FOLDER}/`: the documents the tasks ask about. Every attempt gets a fresh
  copy of the suite's documents; give `--workspace ./{WORKSPACE_FOLDER}` to use these,
  with your edits.
- `{AGENT_FILE}`: your agent. It searches the documents, then asks the model once, and
  needs only Python. Change it, and measure it again.
- `{FOUR_ROLE_FILE}`: the lesson's four-role system, to compare against.

## The next three commands

```
{commands}
```

1. Start the embedded model on http://127.0.0.1:4000/v1 (the default `--base-url`) and
   wait for its `serving ...` line; its models are `local/chat`, `local/answer` and
   `local/router`. Or leave it out, and give `--base-url` and `--model` of your own
   OpenAI-compatible endpoint.
2. Measure your agent: three attempts per task, results in `r.json`, one trajectory per
   attempt in `trajectories/`.
3. Read the report: success rate with its interval, steps, tokens, seconds, and each
   task's failures. `agent-eval view r.json` shows where each attempt went wrong.

Then compare with the four-role system:

```
agent-eval run --agent {FOUR_ROLE_FILE} --model local/answer --router-model local/router \\
    --workspace ./{WORKSPACE_FOLDER} --out results-four-role.json
agent-eval compare r.json results-four-role.json
```
"""


def _tree(source: Path, prefix: str) -> dict[str, bytes]:
    """Every file under ``source``, by its path under ``prefix``."""
    return {
        f"{prefix}/{path.relative_to(source).as_posix()}": path.read_bytes()
        for path in sorted(source.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def _taken(path: Path) -> bool:
    return path.exists() or path.is_symlink()


__all__ = ["COURSE_SUITE_FILE", "default_tasks", "next_commands", "write_starter"]
