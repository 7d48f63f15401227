"""``cmd:COMMAND`` agents: an agent in any language, spoken to over JSON lines.

The process is started once per worker. Each task is one request line on its stdin,
``{"protocol": 1, "task": ..., "options": ...}``, answered by one result line on its
stdout; its stderr is appended to a log file, the run's secrets redacted. A process
that dies, writes a line that is not a result, or stays silent past the attempt's time
budget fails that attempt and is started afresh for the next one. The exact protocol
is in ``docs/protocol.md``.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import os
import selectors
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

from agent_eval.errors import AgentLoadError
from agent_eval.processes import kill_group
from agent_eval.records import AgentReply
from agent_eval.redaction import Redactor, copy_redacted

MAX_LINE_BYTES = 64 * 1024 * 1024
"""A result line longer than this is a runaway process, not a result."""
PROTOCOL_VERSION = 1
"""Sent in every request line; bumped only when a line's meaning changes."""
CLOSE_GRACE_SECONDS = 5.0
"""How long a process may take to exit after its stdin closes before it is terminated."""
GENERIC_STEMS = frozenset({"agent", "main", "index", "run", "app", "cli", "__main__"})
"""Script names too generic to name a scaffold; the folder's name is used instead."""
RESULT_KEYS = frozenset({*AgentReply.model_fields, "infra_error", "error", "protocol"})
"""Keys a result line may carry; any other key is a typo worth failing on."""


PUMP_WAIT_SECONDS = 1.0
"""How long the end of a process waits for the last of its stderr to reach the log."""


class CommandAgentError(Exception):
    """One attempt of a ``cmd:`` agent failed; the message says why, in one line."""


def scaffold_name(argv: list[str]) -> str:
    """The agent's name in reports: its script's name, or its folder's for a generic one.

    ``node examples/node-agent/agent.js`` is ``node-agent``; ``python3 fake.py`` is
    ``fake``; ``./bin/my-agent --fast`` is ``my-agent``.
    """
    scripts = [Path(arg) for arg in argv[1:] if not arg.startswith("-") and Path(arg).suffix]
    script = scripts[0] if scripts else Path(argv[0])
    if script.stem in GENERIC_STEMS and script.resolve().parent.name:
        return script.resolve().parent.name
    return script.stem or "command-agent"


# Loaded here, not in the child: between fork and exec only plain calls are safe.
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """In the child, before exec: be killed when the worker that started it is killed.

    The worker is killed with SIGKILL when an attempt overruns, which gives it no chance
    to end this process itself.
    """
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the worker died between fork and prctl
        os._exit(1)


class LineReader:
    """Reads newline-terminated lines from a pipe, each within a deadline."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = b""
        self.closed = False
        """True once the other end closed the pipe (the process exited)."""

    def pending(self) -> bool:
        """True when output is waiting that no request asked for (blank lines aside)."""
        self._fill(0.0)
        return bool(self._buffer.strip())

    def read_line(self, timeout: float | None) -> bytes | None:
        """The next line, or None at end of file or when ``timeout`` seconds pass first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = None if deadline is None else deadline - time.monotonic()
            if (left is not None and left <= 0) or not self._fill(left):
                return None
            if len(self._buffer) > MAX_LINE_BYTES:
                return self._buffer[:MAX_LINE_BYTES]
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _fill(self, timeout: float | None) -> bool:
        """Read what is available within ``timeout``; False at end of file or timeout."""
        with selectors.DefaultSelector() as selector:
            selector.register(self._fd, selectors.EVENT_READ)
            if not selector.select(timeout):
                return False
        chunk = os.read(self._fd, 1 << 16)
        self._buffer += chunk
        self.closed = not chunk
        return bool(chunk)


def reply_fields(raw: bytes, allowed: frozenset[str], version: int) -> dict[str, Any]:
    """The run_task dict from one result line; CommandAgentError says what is wrong with it.

    An ``{"error": "..."}`` line is the agent's own account of a failed attempt and is
    raised as ``agent reported: ...``.
    """
    text = raw.decode("utf-8", errors="replace").strip()
    if len(raw) >= MAX_LINE_BYTES:
        raise CommandAgentError(f"wrote a result line over {MAX_LINE_BYTES} bytes")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CommandAgentError(
            f"wrote a line that is not JSON ({exc.msg}): {text[:120]!r}; stdout carries "
            f"result lines only, logs belong on stderr"
        ) from None
    if not isinstance(value, dict):
        raise CommandAgentError(f"wrote JSON {type(value).__name__}, not a result object")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise CommandAgentError(
            f"wrote a result with unknown key(s) {', '.join(unknown)} "
            f"(known: {', '.join(sorted(allowed))})"
        )
    if value.get("protocol", version) != version:
        raise CommandAgentError(
            f"answered protocol {value['protocol']!r}; this harness speaks {version}"
        )
    if "error" in value:
        raise CommandAgentError(f"agent reported: {str(value['error'])[:500]}")
    return {key: item for key, item in value.items() if key != "protocol"}


def log_tail(path: Path, since: int) -> str:
    """The last non-empty line the log gained after offset ``since`` (harness notes aside)."""
    try:
        with path.open("rb") as log:
            log.seek(max(since, log.seek(0, os.SEEK_END) - (1 << 16)))
            lines = log.read().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    said = [line.strip() for line in lines if line.strip() and not line.startswith("[agent-eval]")]
    return said[-1][:200] if said else ""


class CommandAgent:
    """The entry-point contract (build, run_task, close) over a long-lived process."""

    def __init__(self, command: str) -> None:
        try:
            self.argv = shlex.split(command)
        except ValueError as exc:
            raise AgentLoadError(f"agent cmd:{command}: cannot split the command ({exc})") from None
        if not self.argv:
            raise AgentLoadError("agent cmd:: no command given; write --agent 'cmd:node agent.js'")
        self.command = command
        self.SCAFFOLD_NAME = scaffold_name(self.argv)
        self.log_path = Path(tempfile.gettempdir()) / "agent-eval" / f"{self.SCAFFOLD_NAME}.log"
        self._process: subprocess.Popen[bytes] | None = None
        self._reader: LineReader | None = None
        self._log: IO[bytes] | None = None
        self._redact = Redactor([])
        self._pump: threading.Thread | None = None
        """Copies the process's stderr into the log, redacted, when there are secrets."""

    def build(self, options: dict[str, Any]) -> None:
        """Choose the stderr log from ``options["log_dir"]`` and start the process."""
        self._redact = Redactor.for_run(None, options)  # its secret options, the environment's
        if options.get("log_dir"):
            self.log_path = Path(str(options["log_dir"])) / f"{self.SCAFFOLD_NAME}.log"
        self._start()

    def run_task(self, task: str, options: dict[str, Any]) -> dict[str, Any]:
        """Send one request line and return the validated result line's fields."""
        if self._process is None or self._process.poll() is not None:
            self._start()
        assert self._process is not None and self._reader is not None  # _start() set them
        if self._reader.pending():
            # Output arrived while no request was open: the process is out of step with
            # the protocol, so its next line could answer the wrong task. Start afresh.
            self._note("restarting: the process wrote to stdout between tasks")
            self._stop()
            self._start()
            assert self._process is not None and self._reader is not None
        self._note(f"task {options.get('task_id')} attempt {options.get('attempt')}")
        log_mark = self._log_size()
        request = {"protocol": PROTOCOL_VERSION, "task": task, "options": options}
        try:
            line = json.dumps(request, ensure_ascii=False) + "\n"
            assert self._process.stdin is not None
            self._process.stdin.write(line.encode("utf-8"))
            self._process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._failure("exited before reading the request", log_mark) from None
        limits = options.get("limits") or {}
        budget = limits.get("max_seconds") if isinstance(limits, dict) else None
        # A little grace past the budget, but less than the harness gives the worker, so
        # this message (and not a bare kill) is what the attempt records.
        timeout = None if budget is None else float(budget) + min(1.0, 0.05 * float(budget))
        raw = self._reader.read_line(timeout)
        if raw is None:
            if not self._reader.closed:
                raise self._failure(f"wrote no result line within {timeout:g}s", log_mark)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(CLOSE_GRACE_SECONDS)  # for its exit code
            raise self._failure("exited before writing a result line", log_mark)
        try:
            return reply_fields(raw, RESULT_KEYS, PROTOCOL_VERSION)
        except CommandAgentError as exc:
            if str(exc).startswith("agent reported:"):
                raise  # a well-formed error line: the process is still in step
            raise self._failure(str(exc), log_mark) from None

    def close(self) -> None:
        """End the process: close its stdin, wait briefly, then terminate and kill it."""
        self._stop(CLOSE_GRACE_SECONDS)
        if self._log is not None:
            self._log.close()
            self._log = None

    def _start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        if self._log is None:
            self._log = self.log_path.open("ab", buffering=0)
        try:
            self._process = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                # through a redacting copy when the run has secrets, else straight in
                stderr=subprocess.PIPE if self._redact else self._log,
                # Its own session: a Ctrl-C at the terminal is the harness's to handle,
                # and killing the group also ends what the agent itself started.
                start_new_session=True,
                # Only a ctypes call before exec: safe even though the worker may have threads.
                preexec_fn=functools.partial(_die_with_parent, os.getpid()),
            )
        except OSError as exc:
            raise AgentLoadError(
                f"agent cmd:{self.command}: cannot start {self.argv[0]!r} ({exc.strerror}); "
                f"check that it is installed and on PATH"
            ) from None
        assert self._process.stdout is not None
        self._reader = LineReader(self._process.stdout.fileno())
        if self._process.stderr is not None:
            self._pump = threading.Thread(
                target=copy_redacted,
                args=(self._process.stderr, self._redact.stream(self._log.write)),
                name="agent-stderr",
                daemon=True,
            )
            self._pump.start()
        self._note(f"started pid {self._process.pid}: {self.command}")

    def _stop(self, grace: float = 0.0) -> None:
        """Close stdin, give the process ``grace`` seconds, then end its whole group."""
        process, self._process, self._reader = self._process, None, None
        if process is None:
            return
        if process.stdin is not None:
            # A process that already died leaves a broken pipe; that tells us nothing new.
            with contextlib.suppress(OSError):
                process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(grace)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if process.poll() is not None:
                break
            kill_group(process.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(1.0)
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
        if self._pump is not None:
            # its stderr ends with it, unless something it started still holds the pipe
            self._pump.join(PUMP_WAIT_SECONDS)
            self._pump = None

    def _failure(self, what: str, log_mark: int) -> CommandAgentError:
        """Stop the process (the next task restarts it) and say what went wrong."""
        process = self._process
        pid = process.pid if process is not None else "?"
        self._stop()
        code = process.returncode if process is not None else None
        if code is not None and code < 0 and "exited" in what:
            what += f" (killed by {signal.Signals(-code).name})"
        elif code is not None and "exited" in what:
            what += f" (exit code {code})"
        tail = log_tail(self.log_path, log_mark)
        said = f"; its last stderr line: {tail!r}" if tail else ""
        self._note(f"attempt failed: {what}")
        return CommandAgentError(
            f"agent process {self.SCAFFOLD_NAME} (pid {pid}) {what}{said}; log: {self.log_path}"
        )

    def _note(self, text: str) -> None:
        """A harness line in the stderr log, so each stretch of it can be told apart."""
        if self._log is not None:
            self._log.write(self._redact(f"[agent-eval] {text}\n").encode())

    def _log_size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0
