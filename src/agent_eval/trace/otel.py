"""Send each attempt as an OpenTelemetry GenAI trace to an OTLP/HTTP store.

Langfuse, Arize Phoenix and Jaeger all accept OTLP over HTTP with protobuf. One
``OtlpExporter`` serves a whole run (``export_trajectory`` after each attempt) or a replay
of a saved one (``export_results``). A trace store is a convenience, never part of the
measurement: an export never raises into a run and never blocks it for longer than its
timeout; when the endpoint fails, one warning goes out, the next ``cooldown`` seconds of
attempts are not even tried, and ``agent-eval export-otel`` can send them all later.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from agent_eval import __version__
from agent_eval.errors import ConfigError, ExtraMissingError, ResultsError
from agent_eval.results import AttemptResult, iter_rows, read_head
from agent_eval.trace.spans import AttemptPlan, plan_attempt
from agent_eval.trajectory import read_trajectory, trajectory_path

TRACES_PATH = "/v1/traces"
"""The OTLP/HTTP traces path, appended to an endpoint that does not already end in it."""
INSTALL = "pip install -e '.[otel]' in the agent-eval clone"


@dataclass(frozen=True)
class ExportSummary:
    """What a replay of a results file sent."""

    attempts: int
    """Attempts listed in the results file."""
    sent: int
    """Attempts the endpoint accepted."""
    failed: int
    """Attempts the endpoint did not accept, or that were not tried while it was down."""
    problems: tuple[str, ...]
    """Attempts whose trajectory file is missing or unreadable, one line each."""
    warning: str | None
    """Why the endpoint failed, if it did."""
    plans: tuple[AttemptPlan, ...] = ()
    """The span trees the endpoint accepted, to annotate them afterwards."""


class OtlpExporter:
    """One OTLP/HTTP trace exporter for a run or a replay; call ``shutdown`` when done.

    ``endpoint`` is the OTLP base URL (``http://127.0.0.1:4318``) or a full traces URL
    (Langfuse's ``.../api/public/otel/v1/traces``). ``content`` attaches the task text,
    model content and tool results. ``warn`` receives the one endpoint warning.
    """

    def __init__(
        self,
        endpoint: str,
        headers: Mapping[str, str] | None = None,
        content: bool = False,
        timeout: float = 5.0,
        *,
        cooldown: float = 30.0,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.url = traces_url(endpoint)
        if not timeout > 0:
            raise ConfigError(f"OTLP timeout {timeout}: use a number of seconds above 0")
        try:
            from agent_eval.trace import otel_sdk
        except ImportError as exc:
            raise ExtraMissingError(
                f"OTLP export needs the otel extra, which is not installed ({exc}): {INSTALL}"
            ) from exc
        self.content = content
        self.cooldown = cooldown
        self.warning: str | None = None
        """Why the endpoint failed, once it has; the warning is issued only once."""
        self.sent = 0
        self.failed = 0
        self._warn = warn
        self._down_until = 0.0
        self._lock = threading.Lock()
        self._closed = False
        self._sender = otel_sdk.SdkSender(self.url, headers or {}, timeout, __version__)

    def export_trajectory(self, path: Path, run: Mapping[str, Any] | None = None) -> bool:
        """Send one attempt's trace from its trajectory file; True when it was accepted.

        ``run`` is the results file's ``run`` block, or any dict with ``engine`` and
        ``lab``. Never raises: an unreadable file or a failing endpoint returns False.
        """
        return isinstance(self._export(path, run), AttemptPlan)

    def export_results(self, results_path: Path) -> ExportSummary:
        """Replay every attempt of a results file from its trajectory files."""
        run = read_head(results_path).run.model_dump(mode="json")
        sent, failed, attempts = self.sent, self.failed, 0
        problems: list[str] = []
        plans: list[AttemptPlan] = []
        for row in iter_rows(results_path):
            attempts += 1
            label = f"{row.id} r{row.attempt}"
            name = row.trajectory_file
            path = trajectory_path(results_path, name)
            if path is None or not path.is_file():
                problems.append(f"{label}: trajectory file {name or '(none)'} not found")
            else:
                done = self._export(path, run, row.answer, _meta_defaults(run, path, row.seconds))
                if isinstance(done, AttemptPlan):
                    plans.append(done)
                elif done != "failed":
                    problems.append(f"{label}: {done}")
        return ExportSummary(
            attempts=attempts,
            sent=self.sent - sent,
            failed=self.failed - failed,
            problems=tuple(problems),
            warning=self.warning,
            plans=tuple(plans),
        )

    def _export(
        self,
        path: Path,
        run: Mapping[str, Any] | None,
        answer: str | None = None,
        defaults: Mapping[str, Any] | None = None,
    ) -> AttemptPlan | str:
        """The plan sent, or ``failed`` (endpoint), or why the file cannot be read."""
        try:
            plan = plan_attempt(read_trajectory(path), run, self.content, answer, defaults)
        except ResultsError as exc:
            return str(exc)
        except (OSError, UnicodeDecodeError, TypeError, ValueError) as exc:
            return f"{type(exc).__name__}: {exc}"
        if self._closed or time.monotonic() < self._down_until:
            self._count(False)
            return "failed"
        reason = self._sender.send(plan)
        self._count(reason is None)
        if reason is None:
            return plan
        self._down_until = time.monotonic() + self.cooldown
        self._first_warning(
            f"OTLP endpoint {self.shown_url} did not take the trace of attempt {plan.key} "
            f"({reason}); `agent-eval export-otel RESULTS` can send the missed traces later"
        )
        return "failed"

    @property
    def shown_url(self) -> str:
        """The traces URL without any user:password part, fit for printing."""
        return _shown(self.url)

    def shutdown(self) -> None:
        """Close the connections; later exports return False. Safe to call twice."""
        if not self._closed:
            self._closed = True
            self._sender.shutdown()

    def __enter__(self) -> OtlpExporter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.shutdown()

    def _count(self, accepted: bool) -> None:
        with self._lock:
            if accepted:
                self.sent += 1
            else:
                self.failed += 1

    def _first_warning(self, message: str) -> None:
        with self._lock:
            if self.warning is not None:
                return
            self.warning = message
        if self._warn is not None:
            self._warn(message)


def traces_url(endpoint: str) -> str:
    """The traces URL of an OTLP/HTTP endpoint: ``/v1/traces`` appended unless present."""
    parts = urlsplit(endpoint.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(
            f"OTLP endpoint {_shown(endpoint)!r}: use an http:// or https:// URL, "
            "such as http://127.0.0.1:4318"
        )
    path = parts.path.rstrip("/")
    if not path.endswith(TRACES_PATH):
        path += TRACES_PATH
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def parse_header_items(items: Iterable[str], source: str = "--otlp-header") -> dict[str, str]:
    """Headers from ``KEY=VALUE`` items, as given to ``--otlp-header``."""
    headers: dict[str, str] = {}
    for number, item in enumerate(items, start=1):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            # the item is likely a credential, so the message must not echo it
            raise ConfigError(
                f"{source} item {number}: expected KEY=VALUE, such as "
                "Authorization=Basic <base64 of public:secret> (the value is not shown)"
            )
        headers[key.strip()] = value.strip()
    return headers


def parse_env_headers(value: str) -> dict[str, str]:
    """Headers from ``OTEL_EXPORTER_OTLP_HEADERS``: comma-separated, percent-encoded pairs."""
    items = [item for item in value.split(",") if item.strip()]
    pairs = parse_header_items(items, "OTEL_EXPORTER_OTLP_HEADERS")
    return {key: unquote(text) for key, text in pairs.items()}


def _shown(url: str) -> str:
    """The URL without any user:password part, fit for a message."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _meta_defaults(run: Mapping[str, Any], path: Path, seconds: float) -> dict[str, Any]:
    """What a course trajectory's meta line lacks: the run id, and a start, which is when
    the harness wrote the file (right after the attempt) less the attempt's seconds."""
    written = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    return {
        "run_id": run.get("run_id"),
        "started": (written - timedelta(seconds=seconds)).isoformat(),
    }


class ExportEachAttempt:
    """An attempt observer (run/observers.py) that sends each finished attempt's trace
    as the run goes; ``base`` is the folder its trajectory file names are relative to."""

    def __init__(
        self, exporter: OtlpExporter, base: Path, run: Mapping[str, Any] | None = None
    ) -> None:
        self._exporter, self._base, self._run = exporter, base, run

    def attempt_finished(self, row: AttemptResult) -> None:
        if row.trajectory_file:
            self._exporter.export_trajectory(self._base / row.trajectory_file, self._run)
