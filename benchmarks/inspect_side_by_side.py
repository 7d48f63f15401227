"""agent-eval beside Inspect AI on the same work: N two-turn tool loops against one mock.

Each loop is one task whose model first asks for a tool, then answers: agent-eval runs it
with ``builtin:minimal``, Inspect AI with its ``react`` agent and an ``add`` tool. Both
talk to the same scripted model server (agent-eval's own, on 127.0.0.1 port 0, in this
process), which tells them apart by the model name they ask for. The two sides alternate,
round after round, and the table shows medians over the rounds of:

- wall seconds, from start to exit, start-up included;
- CPU seconds: user + system of the command and every process it waited for (from the
  child's rusage), so the figure moves less with other load on the machine;
- peak PSS of the command's whole process tree, sampled from /proc/PID/smaps_rollup
  (shared pages are split between the processes that share them, so a pool of forked
  copies is not counted thirty times over);
- peak RSS of its largest process (VmHWM, read with the PSS), the basis of the issue's
  own memory figures; not the rusage's ``ru_maxrss``, which keeps the RSS of the
  process this one was forked from before it ran the command;
- for the latency case, the run once started as well: from the first attempt's start to
  the last one's end, read from the run's own records (agent-eval's trajectories and
  rows, Inspect AI's samples), against the ideal.

Cases (``--cases``): ``c1`` (concurrency 1), ``c32`` (concurrency 32, agent-eval with the
default isolation and with ``--isolation worker``), ``latency`` (every model call waits
``--latency-ms``; the ideal wall time is calls x latency / concurrency) and ``start`` (10
loops, start to finish).

Inspect AI is installed with pip into a throwaway venv of its own under ``--venv-dir``
(made on first use and reused after); it is never a dependency of agent-eval.
``--skip-inspect`` runs the agent-eval side alone.

    .venv/bin/python benchmarks/inspect_side_by_side.py [--loops 1000] [--rounds 3]
        [--cases c1,c32,latency,start] [--skip-inspect]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import venv
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from agent_eval.models.mock_script import parse_script
from agent_eval.models.mock_server import MockModelServer
from agent_eval.results import iter_rows
from agent_eval.trajectory import read_trajectory, trajectory_path

INSPECT_VERSION = "0.3.285"
CASES = ("c1", "c32", "latency", "start")
PERF = False
"""Whether CPU comes from perf stat (set once in main)."""
AE_MODEL = "ae-model"
INSPECT_MODEL = "inspect-model"

# Inspect's react agent is offered the `add` tool; builtin:minimal has its own tools, so it
# is asked to search. The second turn answers for both.
SCRIPT = {
    "rules": [
        {
            "model": f"^{AE_MODEL}$",
            "turn": 0,
            "reply": {"tool_calls": [{"name": "search_documents", "arguments": {"query": "sum"}}]},
        },
        {
            "model": f"^{INSPECT_MODEL}$",
            "turn": 0,
            "reply": {"tool_calls": [{"name": "add", "arguments": {"x": 1, "y": 2}}]},
        },
    ],
    "default": {"content": "The answer is 3."},
}

INSPECT_TASK = '''
"""One Inspect task: the loops of loops.json, the react agent with an add tool."""
from inspect_ai import Task, task
from inspect_ai.agent import react
from inspect_ai.dataset import json_dataset
from inspect_ai.scorer import includes
from inspect_ai.tool import tool


@tool
def add():
    async def execute(x: int, y: int) -> str:
        """Add two integers.

        Args:
            x: The first integer.
            y: The second integer.
        """
        return str(x + y)

    return execute


@task
def loops(dataset: str) -> Task:
    return Task(dataset=json_dataset(dataset), solver=react(tools=[add()], submit=False),
                scorer=includes(), message_limit=20)
'''


@dataclass(frozen=True)
class Case:
    """One line of the table: how many loops, at what concurrency and latency."""

    name: str
    loops: int
    concurrency: int
    latency_ms: int


@dataclass(frozen=True)
class Measure:
    """One run of one side: wall and CPU seconds, peak PSS of the tree and peak RSS of its
    largest process in MB, rows that passed."""

    wall: float
    cpu: float
    pss_mb: float
    rss_mb: float
    passed: int
    started: float | None = None
    """Seconds from the first attempt's start to the last attempt's end."""


def cases(names: list[str], loops: int) -> list[Case]:
    """The cases asked for; the latency case keeps 640 loops unless --loops is smaller."""
    table = {
        "c1": Case("1 conc.", loops, 1, 0),
        "c32": Case("32 conc.", loops, 32, 0),
        "latency": Case("100 ms, 32 conc.", min(640, loops), 32, 100),
        "start": Case("start to finish", 10, 1, 0),
    }
    return [table[name] for name in names]


def inspect_venv(folder: Path, version: str) -> Path:
    """The venv's inspect command, installing Inspect AI there on first use."""
    command = folder / "bin" / "inspect"
    if command.exists():
        return command
    print(f"installing inspect-ai=={version} into {folder} (once)", file=sys.stderr)
    venv.create(folder, with_pip=True)
    pip = [str(folder / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, f"inspect-ai=={version}", "openai"], check=True)
    return command


def tree_memory_kb(root: int, include_root: bool = True) -> tuple[int, int]:
    """The PSS in kB of ``root``'s descendants now, and of ``root`` itself unless told
    not to, and the largest of their peak RSS (VmHWM) so far (processes gone by the time
    they are read are skipped)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        tree.update(children)
        frontier.extend(children)
    if not include_root:
        tree.discard(root)
    total = largest = 0
    for pid in tree:
        try:
            pss = Path(f"/proc/{pid}/smaps_rollup").read_text().split("\nPss:", 1)[1]
            hwm = Path(f"/proc/{pid}/status").read_text().split("\nVmHWM:", 1)[1]
        except (OSError, IndexError):  # gone, or a kernel thread's empty files
            continue
        total += int(pss.split()[0])
        largest = max(largest, int(hwm.split()[0]))
    return total, largest


def measure(command: list[str], cwd: Path, env: dict[str, str], interval: float) -> Measure:
    """Run ``command`` to its end, sampling its tree's PSS every ``interval`` seconds.

    CPU is perf's task-clock when perf can count (it adds up every descendant, also one
    killed before its parent reaped it, as a sandbox's processes are); otherwise the
    child's rusage, which misses those."""
    handle, counts = tempfile.mkstemp(suffix=".perf")
    os.close(handle)
    prefix = ["perf", "stat", "-e", "task-clock", "-x,", "-o", counts, "--"] if PERF else []
    start = time.perf_counter()
    child = subprocess.Popen(
        [*prefix, *command], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    peak, largest = [0], [0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(interval):  # perf's own few MB are not the command's
            pss, hwm = tree_memory_kb(child.pid, include_root=not PERF)
            peak[0], largest[0] = max(peak[0], pss), max(largest[0], hwm)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    assert child.stderr is not None
    errors = child.stderr.read()  # until the child exits and closes it
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    done.set()
    sampler.join()
    cpu = usage.ru_utime + usage.ru_stime
    if PERF:
        cpu = task_clock_seconds(Path(counts))
    os.unlink(counts)
    if child.returncode not in (0, 2):  # 2: agent-eval ran, some attempt failed
        tail = errors.decode(errors="replace").strip().splitlines()[-3:]
        raise SystemExit(f"{command[0]} exited {child.returncode}: {' / '.join(tail)}")
    return Measure(wall, cpu, peak[0] / 1024, largest[0] / 1024, 0)


def perf_counts() -> bool:
    """Whether ``perf stat`` is installed and allowed to count this user's processes."""
    if shutil.which("perf") is None:
        return False
    probe = subprocess.run(
        ["perf", "stat", "-e", "task-clock", "-x,", "--", "true"], capture_output=True, text=True
    )
    return probe.returncode == 0 and "task-clock" in probe.stderr


def task_clock_seconds(path: Path) -> float:
    """The task-clock total of a ``perf stat -x,`` output file, in seconds."""
    for line in path.read_text().splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[2].startswith("task-clock"):
            return float(fields[0]) / 1000
    raise SystemExit(f"perf stat wrote no task-clock line: {path.read_text()!r}")


def write_loops(folder: Path, count: int) -> None:
    """The same loops as an agent-eval suite and as an Inspect dataset."""
    prompts = [
        (f"loop-{i}", f"Loop {i}: use a tool, then say what 1 + 2 is.") for i in range(count)
    ]
    suite = {"name": "loops", "version": "1", "tasks": [
        {"id": i, "category": "loop", "task": p, "expect_in_answer": ["3"], "max_steps": 4}
        for i, p in prompts
    ]}  # fmt: skip
    (folder / f"ae-{count}.json").write_text(json.dumps(suite))
    with (folder / f"inspect-{count}.jsonl").open("w") as handle:
        for i, p in prompts:
            handle.write(json.dumps({"id": i, "input": p, "target": "3"}) + "\n")


def ae_outcome(results: Path) -> tuple[int, float | None]:
    """How many attempts of an agent-eval results file passed, and the run once started:
    each attempt's start is its trajectory's, its end that plus the row's seconds (an
    attempt without a trajectory is left out)."""
    passed, spans = 0, []
    for row in iter_rows(results):
        passed += row.failure_class == "passed"
        path = trajectory_path(results, row.trajectory_file)
        meta = read_trajectory(path).meta if path is not None else None
        if meta is not None and "started" in meta:
            began = datetime.fromisoformat(meta["started"]).timestamp()
            spans.append((began, began + row.seconds))
    return passed, span(spans)


def span(spans: list[tuple[float, float]]) -> float | None:
    """From the earliest start to the latest end."""
    return max(end for _, end in spans) - min(start for start, _ in spans) if spans else None


def run_ae(
    case: Case, isolation: str | None, work: Path, url: str, pss: float, extra: list[str]
) -> Measure:
    """One agent-eval run of ``case``."""
    out = Path(tempfile.mkdtemp(prefix="ae-", dir=work))
    command = [
        sys.executable, "-m", "agent_eval", "run", "--agent", "builtin:minimal",
        "--tasks", str(work / f"ae-{case.loops}.json"), "--workspace", str(work / "ws"),
        "--base-url", url, "--model", AE_MODEL, "--api-key", "dummy", "--no-preflight",
        "--concurrency", str(case.concurrency), "--out", str(out / "r.json"),
        "--trajectory-dir", str(out / "traj"),
    ]  # fmt: skip
    if isolation:
        command += ["--isolation", isolation]
    command += extra
    result = measure(command, work, dict(os.environ), pss)
    return Measure(result.wall, result.cpu, result.pss_mb, result.rss_mb,
                   *ae_outcome(out / "r.json"))  # fmt: skip


def run_inspect(case: Case, inspect: Path, work: Path, url: str, pss: float) -> Measure:
    """One Inspect AI run of ``case``."""
    logs = Path(tempfile.mkdtemp(prefix="inspect-", dir=work))
    command = [
        str(inspect), "eval", "loops_task.py@loops", "--model", f"openai-api/mock/{INSPECT_MODEL}",
        "-T", f"dataset={work / f'inspect-{case.loops}.jsonl'}",
        "--max-connections", str(case.concurrency), "--max-samples", str(case.concurrency),
        "--log-dir", str(logs), "--log-format", "json", "--display", "none",
    ]  # fmt: skip
    env = dict(os.environ, MOCK_BASE_URL=url, MOCK_API_KEY="dummy", INSPECT_LOG_DIR=str(logs))
    result = measure(command, work, env, pss)
    logs_found = list(logs.glob("*.json"))
    passed, started = 0, None
    if logs_found:
        samples = json.loads(logs_found[0].read_text()).get("samples", [])
        passed = sum(
            1 for s in samples if any(v.get("value") == "C" for v in s.get("scores", {}).values())
        )
        started = span([
            (datetime.fromisoformat(s["started_at"]).timestamp(),
             datetime.fromisoformat(s["completed_at"]).timestamp())
            for s in samples if s.get("started_at") and s.get("completed_at")
        ])  # fmt: skip
    return Measure(result.wall, result.cpu, result.pss_mb, result.rss_mb, passed, started)


def progress(case: Case, side: str, round_: int, got: Measure) -> None:
    """One line on stderr per run, as it ends, with the load at that moment."""
    load = os.getloadavg()[0]
    print(f"{case.loops} loops, {case.name}, {side}, round {round_}: wall {got.wall:.2f} s, "
          f"cpu {got.cpu:.2f} s, PSS {got.pss_mb:.0f} MB, largest RSS {got.rss_mb:.0f} MB, "
          f"passed {got.passed}"
          f"{f', once started {got.started:.2f} s' if got.started else ''} (load {load:.2f})",
          file=sys.stderr, flush=True)  # fmt: skip


def median(runs: list[Measure]) -> Measure:
    """The median of each figure over the rounds (rows: the fewest that passed)."""
    started = [r.started for r in runs if r.started is not None]
    return Measure(
        statistics.median(r.wall for r in runs),
        statistics.median(r.cpu for r in runs),
        statistics.median(r.pss_mb for r in runs),
        statistics.median(r.rss_mb for r in runs),
        min(r.passed for r in runs),
        statistics.median(started) if started else None,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--loops",
        type=int,
        default=1000,
        help="Loops (tasks) of the c1 and c32 cases; the latency case runs "
        "min(640, LOOPS). Default 1000.",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="Runs of each side per case, alternating; the table shows medians.",
    )
    parser.add_argument(
        "--cases", default=",".join(CASES), help=f"Comma-separated subset of {', '.join(CASES)}."
    )
    parser.add_argument(
        "--latency-ms",
        type=int,
        default=100,
        help="Delay of every model call in the latency case. Default 100.",
    )
    parser.add_argument(
        "--skip-inspect",
        action="store_true",
        help="Run only the agent-eval side (no Inspect venv needed).",
    )
    parser.add_argument(
        "--inspect-version",
        default=INSPECT_VERSION,
        help=f"Inspect AI version for the throwaway venv. Default {INSPECT_VERSION}.",
    )
    parser.add_argument(
        "--venv-dir",
        type=Path,
        default=None,
        help="Where the throwaway Inspect venv lives (made on first use). "
        "Default: ~/.cache/agent-eval/bench/inspect-VERSION.",
    )
    parser.add_argument(
        "--pss-interval",
        type=float,
        default=0.1,
        help="Seconds between PSS samples of the process tree. Default 0.1.",
    )
    parser.add_argument(
        "--rusage",
        action="store_true",
        help="Take CPU from the child's rusage even where perf stat works "
        "(rusage misses processes killed before their parent reaped them).",
    )
    parser.add_argument(
        "--ae-args",
        default="",
        help="More `agent-eval run` flags for every agent-eval run, as one string, "
        "e.g. --ae-args='--sandbox off'.",
    )
    args = parser.parse_args(argv)
    extra = shlex.split(args.ae_args)
    names = [n.strip() for n in args.cases.split(",") if n.strip()]
    unknown = [n for n in names if n not in CASES]
    if unknown or args.loops < 1 or args.rounds < 1:
        parser.error(f"--cases takes {', '.join(CASES)}; --loops and --rounds at least 1")
    chosen = cases(names, args.loops)
    chosen = [c if c.latency_ms == 0 else Case(c.name.replace("100", str(args.latency_ms)),
              c.loops, c.concurrency, args.latency_ms) for c in chosen]  # fmt: skip
    inspect = None
    if not args.skip_inspect:
        cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
        folder = args.venv_dir or cache / "agent-eval" / "bench" / f"inspect-{args.inspect_version}"
        inspect = inspect_venv(folder, args.inspect_version)
    global PERF
    PERF = not args.rusage and perf_counts()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    source = "perf stat task-clock" if PERF else "rusage of the child"
    shown_args = f", agent-eval run {args.ae_args}" if extra else ""
    print(
        f"{os.cpu_count()} cpus, python {sys.version.split()[0]}, CPU from {source}, "
        f"load average {load} before{shown_args}"
    )
    rows: list[tuple[str, str, Measure, float | None]] = []
    script = parse_script(SCRIPT)
    with tempfile.TemporaryDirectory(prefix="ae-vs-inspect-") as scratch:
        work = Path(scratch)
        (work / "ws").mkdir()
        (work / "ws" / "notes.md").write_text("The sum of 1 and 2 is 3.\n")
        (work / "loops_task.py").write_text(INSPECT_TASK)
        for case in chosen:
            write_loops(work, case.loops)
            with MockModelServer(script, latency=case.latency_ms / 1000) as mock:
                sides: dict[str, list[Measure]] = {}
                labels: list[tuple[str, str | None]] = [("agent-eval", None)]
                if case.concurrency > 1 and case.latency_ms == 0:
                    labels.append(("agent-eval --isolation worker", "worker"))
                for round_ in range(1, args.rounds + 1):
                    for label, isolation in labels:
                        got = run_ae(case, isolation, work, mock.base_url, args.pss_interval, extra)
                        sides.setdefault(label, []).append(got)
                        progress(case, label, round_, got)
                    if inspect is not None:
                        got = run_inspect(case, inspect, work, mock.base_url, args.pss_interval)
                        sides.setdefault("Inspect AI react", []).append(got)
                        progress(case, "Inspect AI react", round_, got)
            ideal = (
                2 * case.loops * case.latency_ms / 1000 / case.concurrency
                if case.latency_ms
                else None
            )
            for label, runs in sides.items():
                rows.append((f"{case.loops} loops, {case.name}", label, median(runs), ideal))
    print(
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} after; "
        f"medians of {args.rounds} round(s)"
    )
    print()
    print(
        f"{'case':<28} {'side':<30} {'wall s':>7} {'cpu s':>7} {'ms cpu/loop':>11} "
        f"{'PSS MB':>7} {'RSS MB':>7} {'passed':>7}  ideal"
    )
    for case_label, side, m, ideal in rows:
        loops = int(case_label.split()[0])
        shown = ""
        if ideal:
            once = f"; {m.started / ideal:.2f}x once started" if m.started else ""
            shown = f"{ideal:.2f} s ({m.wall / ideal:.2f}x{once})"
        print(
            f"{case_label:<28} {side:<30} {m.wall:7.2f} {m.cpu:7.2f} {1000 * m.cpu / loops:11.2f} "
            f"{m.pss_mb:7.0f} {m.rss_mb:7.0f} {m.passed:7d}  {shown}"
        )


if __name__ == "__main__":
    main()
