"""No agent passes from what earlier runs left where it can look.

The sandbox shows the current folder and the agent's own folder, read-only, and the
package agent_eval is in. Earlier runs of the same tasks leave their records there
(results, journals, trajectories, reports, the course harness's files), and the package
ships suites with their answers. The attacks below read them; the recognition of records
is tested on its own after them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import course_harness
from tests.run.conftest import AGENT_EVAL, needs_sandbox

from agent_eval.run.earlier_runs import MAX_ENTRIES, earlier_records
from agent_eval.suite import shipped_suites

TASK = {"id": "backup-window", "category": "retrieval", "task": "When does the backup run?",
        "expect_in_answer": ["02:00", "04:00"]}  # fmt: skip

FIRST_AGENT = """
def run_task(task, options):
    return {"answer": "02:00", "steps": 1, "tokens": 1}
"""

# Reads every file it can below its own folder (the current one) and answers with the
# time the first run missed wherever it finds it; and says what its prompt file said.
SPONGE_AGENT = """
import os

HERE = os.path.dirname(os.path.abspath(__file__))
MISSED = "04" + ":00"

def _found():
    for folder, _, names in os.walk(HERE):
        for name in names:
            try:
                with open(os.path.join(folder, name), encoding="utf-8") as handle:
                    if MISSED in handle.read():
                        return os.path.relpath(os.path.join(folder, name), HERE)
            except (OSError, UnicodeDecodeError):
                continue
    return None

def run_task(task, options):
    with open(os.path.join(HERE, "prompt.txt"), encoding="utf-8") as handle:
        prompt = handle.read().strip()
    found = _found()
    answer = f"02:00 {MISSED} from {found}" if found else "nothing found"
    return {"answer": f"{answer}; prompt: {prompt}", "steps": 1, "tokens": 1}
"""


def _run(folder: Path, command: list[str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=180,
                          env=env, check=False)  # fmt: skip
    assert done.returncode in (0, 2), done.stdout + done.stderr
    return done


def _first_agent_and_suite(folder: Path) -> None:
    """The first agent, and in ``suite/`` the suite and documents, which never say 04:00."""
    _write(folder / "suite" / "docs" / "runbook.md", "Backups: see the operations calendar.\n")
    suite = {"name": "s", "version": "1.0.0", "workspace": "docs", "tasks": [TASK]}
    _write(folder / "suite" / "suite.json", json.dumps(suite))
    _write(folder / "first_agent.py", FIRST_AGENT)


@needs_sandbox
def test_no_agent_passes_from_earlier_runs_records_in_the_folder_it_is_shown(
    tmp_path: Path,
) -> None:
    """A first agent misses 04:00; our harness, the course harness and our reports record
    it in the current folder, under names and folders the next run does not use. The
    next run's agent reads every file there: it finds none of them, still reads its own
    prompt file, and the run says what it hid."""
    _first_agent_and_suite(tmp_path)
    (tmp_path / "agent.py").write_text(SPONGE_AGENT)
    (tmp_path / "prompt.txt").write_text("Answer briefly.\n")
    # a file that names the task but is no record of a run stays visible
    (tmp_path / "hints.json").write_text(json.dumps({"backup-window": "see the calendar"}))
    run = [str(AGENT_EVAL), "run", "--tasks", "suite/suite.json", "--model", "m",
           "--no-preflight", "--repeats", "2"]  # fmt: skip
    _run(tmp_path, [*run, "--agent", "first_agent.py", "--sandbox", "off",
                    "--out", "first.json", "--trajectory-dir", "first-traj"])  # fmt: skip
    _run(tmp_path, [sys.executable, str(course_harness()), "--agent", "first_agent.py",
                    "--tasks", "suite/suite.json", "--model", "m", "--out", "course.json",
                    "--workspace", "suite/docs"])  # fmt: skip
    for form, name in (("html", "first.html"), ("markdown", "first.md"), ("json", "first.rep")):
        _run(tmp_path, [str(AGENT_EVAL), "report", "first.json", "--format", form, "--out", name])
    leaky = sorted(
        str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")
        if p.is_file() and "suite" not in p.parts and "04:00" in p.read_text(errors="replace")
    )  # fmt: skip
    assert {"first.json", "course.json"} <= set(leaky)

    done = _run(tmp_path, [*run, "--agent", "agent.py", "--sandbox", "on",
                           "--out", "second.json", "--trajectory-dir", "second-traj"])  # fmt: skip

    rows = json.loads((tmp_path / "second.json").read_text())["results"]
    assert [row["answer"] for row in rows] == ["nothing found; prompt: Answer briefly."] * 2
    said = done.stdout + done.stderr
    assert "the agent cannot see these files, which name its tasks with an answer" in said
    assert "course.json, first-traj/, first.html and 4 more" in said
    head = json.loads((tmp_path / "second.json").read_text())["run"]
    # the course's trajectories too, though this agent's hold no answer
    assert head["sandbox"]["hidden_records"] == len(
        {Path(p).parts[0] for p in leaky} | {"trajectories"}
    )


@needs_sandbox
def test_no_agent_reads_the_suites_the_package_ships(tmp_path: Path) -> None:
    """The package an agent imports holds the shipped suites, answers and hidden checks
    included. A user's copy of one is run; an agent that looks in the package for the
    task's expected strings finds nothing to pass with."""
    shipped = shipped_suites()["part26"]
    shutil.copytree(shipped.parent, tmp_path / "suite")
    (tmp_path / "agent.py").write_text(
        "import glob, json, os\n"
        "import agent_eval\n"
        "def run_task(task, options):\n"
        "    root = os.path.dirname(agent_eval.__file__)\n"
        "    for path in glob.glob(os.path.join(root, 'suites', '**', '*.json'), recursive=True):\n"
        "        try:\n"
        "            tasks = json.load(open(path)).get('tasks', [])\n"
        "        except (OSError, ValueError):\n"
        "            continue\n"
        "        for found in tasks:\n"
        "            if found.get('task') == task:\n"
        "                return {'answer': ' '.join(found.get('expect_in_answer', [])) or 'seen',\n"
        "                        'steps': 1, 'tokens': 1}\n"
        "    return {'answer': 'nothing found', 'steps': 1, 'tokens': 1}\n"
    )
    _run(tmp_path, [str(AGENT_EVAL), "run", "--agent", "agent.py", "--tasks",
                    f"suite/{shipped.name}", "--model", "m", "--no-preflight",
                    "--sandbox", "on", "--out", "r.json"])  # fmt: skip
    rows = json.loads((tmp_path / "r.json").read_text())["results"]
    assert len(rows) == 15
    assert {row["answer"] for row in rows} == {"nothing found"}


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_records_are_told_from_other_files_by_what_they_say(tmp_path: Path) -> None:
    """A file is a record when it names a task of the run as a whole word and says what
    became of an attempt; a folder of nothing but records is hidden whole."""
    row = '{"task_id": "t1", "answer": "02:00", "checks": {"missing": ["04:00"]}}\n'
    records = [
        _write(tmp_path / "r.json", row),
        _write(tmp_path / "report.html", "<td>t1</td><td>passed</td>"),
        _write(tmp_path / "log.eval", "zipped, unreadable here"),
    ]
    _write(tmp_path / "deep" / "er" / "table.md", "| t1 | success 0/2 |")
    _write(tmp_path / "mixed" / "r.jsonl", row)
    trajectories = tmp_path / "traj"
    for n in range(3):
        _write(trajectories / f"t1-r{n}.jsonl", row)
    kept = [
        _write(tmp_path / "prompt.txt", "Answer briefly; say what was missing."),
        _write(tmp_path / "hints.json", '{"t1": "see the calendar"}'),
        _write(tmp_path / "other.json", '{"t10": "answer", "xt1": "passed", "t1-b": "passed"}'),
        _write(tmp_path / "agent.py", "# t1 answer: check the calendar\n"),
        _write(tmp_path / "mixed" / "notes.txt", "nothing of a run"),
        _write(tmp_path / ".git" / "r.json", row),
        _write(tmp_path / "env" / "pyvenv.cfg", "home = /usr/bin\n"),
        _write(tmp_path / "env" / "r.json", row),
        _write(tmp_path / "docs" / "r.json", row),
    ]
    found = earlier_records([tmp_path], ["t1"], passed_over=[tmp_path / "docs"])
    assert found.complete
    assert sorted(found.paths) == sorted(
        [*records, trajectories, tmp_path / "deep", tmp_path / "mixed" / "r.jsonl"]
    )
    assert not set(found.paths) & set(kept)
    assert earlier_records([tmp_path], ["t2"], passed_over=[]).paths == [tmp_path / "log.eval"]


def test_a_folder_too_large_to_look_through_is_not_looked_through_whole(tmp_path: Path) -> None:
    """Past MAX_ENTRIES entries the search stops and says so: the run then shows no
    folder it could not look through."""
    crowded = tmp_path / "crowded"
    crowded.mkdir()
    for n in range(MAX_ENTRIES + 1):
        (crowded / f"{n}.bin").touch()
    found = earlier_records([tmp_path], ["t1"], passed_over=[])
    assert not found.complete
    assert earlier_records([tmp_path], ["t1"], passed_over=[crowded]).complete


def test_a_folder_of_many_records_is_judged_by_its_first_and_hidden_whole(
    tmp_path: Path,
) -> None:
    """A run's thousands of trajectories cost a look at JUDGED of them, not a look at
    each or a folder left unshown; a folder whose first files are no records is looked
    through file by file."""
    row = '{"task_id": "t1", "answer": "02:00"}\n'
    many = tmp_path / "runs" / "old" / "trajectories"
    many.mkdir(parents=True)
    for n in range(MAX_ENTRIES + 1):
        (many / f"t1-r{n:05}.jsonl").write_text(row)
    mixed = _write(tmp_path / "notes" / "a.txt", "nothing of a run").parent
    late = _write(mixed / "z.json", row)
    found = earlier_records([tmp_path], ["t1"], passed_over=[])
    assert found.complete
    assert sorted(found.paths) == [late, tmp_path / "runs"]


def test_a_folder_given_twice_or_inside_another_is_looked_through_once(tmp_path: Path) -> None:
    record = _write(tmp_path / "inner" / "r.json", '{"task_id": "t1", "passed": false}')
    _write(tmp_path / "inner" / "agent.py", "")
    found = earlier_records([tmp_path, tmp_path / "inner", None], ["t1"], passed_over=[])
    assert found.paths == [record]


@needs_sandbox
def test_a_current_folder_too_large_to_look_through_is_not_shown(tmp_path: Path) -> None:
    """Past MAX_ENTRIES the current folder is not shown, its records with it; an agent
    named by a relative path in a folder of its own still runs, and the run says why."""
    _first_agent_and_suite(tmp_path)
    crowded = tmp_path / "crowded"
    crowded.mkdir()
    for n in range(MAX_ENTRIES + 1):
        (crowded / str(n)).touch()
    _write(tmp_path / "agent" / "agent.py", (
        "def run_task(task, options):\n"
        "    try:\n"
        "        seen = open('first.json').read()[:10]\n"
        "    except OSError as exc:\n"
        "        seen = type(exc).__name__\n"
        "    return {'answer': seen, 'steps': 1, 'tokens': 1}\n"
    ))  # fmt: skip
    run = [str(AGENT_EVAL), "run", "--tasks", "suite/suite.json", "--model", "m",
           "--no-preflight"]  # fmt: skip
    _run(tmp_path, [*run, "--agent", "first_agent.py", "--sandbox", "off", "--out", "first.json"])
    done = _run(tmp_path, [*run, "--agent", "agent/agent.py", "--sandbox", "on",
                           "--out", "second.json", "--trajectory-dir", "second-traj"])  # fmt: skip
    rows = json.loads((tmp_path / "second.json").read_text())["results"]
    assert [row["answer"] for row in rows] == ["FileNotFoundError"]
    assert f"more than {MAX_ENTRIES:,} entries" in done.stdout + done.stderr
