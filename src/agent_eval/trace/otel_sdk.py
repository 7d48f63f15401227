"""Create an attempt's planned spans with the OpenTelemetry SDK and send them over OTLP/HTTP.

This module imports the otel extra at the top. Reach it only through
``agent_eval.trace.otel``, which turns a missing extra into ``ExtraMissingError``.
"""

from __future__ import annotations

import logging
import re
import socket
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from urllib.parse import urlsplit

from opentelemetry import trace as trace_api
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_ON

from agent_eval.trace import genai
from agent_eval.trace.spans import AttemptPlan, PlannedSpan, attempt_id

SCOPE = "agent_eval.trace.otel"
"""The instrumentation scope our spans are reported under."""


class _AttemptIds(IdGenerator):
    """Trace and span ids derived from the attempt's key.

    Replaying an attempt (``export-otel`` after a live export, or twice) then sends the
    same ids, which backends that upsert by id (Langfuse, Phoenix) treat as one trace.
    """

    def __init__(self) -> None:
        self._key = ""
        self._count = 0

    def reset(self, key: str) -> None:
        """Start the ids of a new attempt."""
        self._key, self._count = key, 0

    def generate_trace_id(self) -> int:
        return attempt_id(self._key, 0, 16)

    def generate_span_id(self) -> int:
        self._count += 1
        return attempt_id(self._key, self._count, 8)


class _Collect(SpanProcessor):
    """Keeps the spans of the attempt being built, so they leave in one request."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


class _Messages(logging.Handler):
    """Collects what the OTLP exporter logs, so its failure reaches us, not stderr."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextmanager
def _captured_logs() -> Iterator[_Messages]:
    # a handler on the otel logger also stops logging's last-resort printer, which
    # would otherwise print every retry of every attempt to stderr
    handler = _Messages()
    logger = logging.getLogger("opentelemetry")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


class SdkSender:
    """One tracer and one OTLP/HTTP exporter; sends one attempt's trace per call."""

    def __init__(self, url: str, headers: Mapping[str, str], timeout: float, version: str) -> None:
        self._ids = _AttemptIds()
        self._collect = _Collect()
        resource = Resource.create(
            {genai.SERVICE_NAME: "agent-eval", genai.SERVICE_VERSION: version}
        )
        self._provider = TracerProvider(
            sampler=ALWAYS_ON, resource=resource, id_generator=self._ids, shutdown_on_exit=False
        )
        self._provider.add_span_processor(self._collect)
        self._tracer = self._provider.get_tracer(SCOPE, version)
        self._url, self._timeout = url, timeout
        self._exporter = OTLPSpanExporter(endpoint=url, headers=dict(headers), timeout=timeout)
        # one attempt at a time: the id generator and the collector hold that attempt
        self._lock = threading.Lock()

    def send(self, plan: AttemptPlan) -> str | None:
        """Build and export one attempt's spans; None when accepted, else why not."""
        with self._lock, _captured_logs() as logs:
            self._ids.reset(plan.seed)
            self._collect.spans.clear()
            try:
                # an empty context, so an attempt never nests under a span the caller has open
                self._build(plan.root, Context())
                result = self._exporter.export(self._collect.spans)
            except Exception as exc:  # the SDK should not raise, and a run must never see it
                return f"{type(exc).__name__}: {exc}"
            finally:
                self._collect.spans = []
            if result is SpanExportResult.SUCCESS:
                return None
            return _reason(logs.lines) or _diagnose(self._url, self._timeout)

    def shutdown(self) -> None:
        """Close the exporter's connections; the sender cannot send afterwards."""
        with self._lock, _captured_logs():
            self._provider.shutdown()
            self._exporter.shutdown()  # type: ignore[no-untyped-call]

    def _build(self, planned: PlannedSpan, parent: Context) -> None:
        """Create a span, then its children under it, depth first: the root gets id 1."""
        span = self._start(planned, parent)
        inside = trace_api.set_span_in_context(span)
        for child in planned.children:
            self._build(child, inside)
        span.end(end_time=planned.end_ns)

    def _start(self, planned: PlannedSpan, parent: Context) -> trace_api.Span:
        kind = trace_api.SpanKind.CLIENT if planned.client else trace_api.SpanKind.INTERNAL
        span = self._tracer.start_span(
            planned.name,
            context=parent,
            kind=kind,
            attributes=planned.attributes,
            start_time=planned.start_ns,
        )
        for event in planned.events:
            span.add_event(event.name, event.attributes, timestamp=event.at_ns)
        if planned.error:
            span.set_status(trace_api.Status(trace_api.StatusCode.ERROR, planned.error))
        elif planned.ok:
            span.set_status(trace_api.Status(trace_api.StatusCode.OK))
        return span


def _reason(lines: list[str]) -> str | None:
    """The cause the exporter logged (its first transient error, else its last), if any."""
    for line in lines:
        if line.startswith("Transient error"):
            return _short(line.split(" encountered")[0].removeprefix("Transient error "))
    telling = [line for line in lines if "due to timeout, max retries" not in line]
    return _short(telling[-1]) if telling else None


def _short(text: str) -> str:
    # a refused connection reads as three nested exceptions; the errno says it all
    errno = re.search(r"\[Errno -?\d+\] ([^\"')]*)", text)
    return f"cannot connect: {errno.group(1).strip()}" if errno else text


def _diagnose(url: str, timeout: float) -> str:
    """Why an export failed when the exporter's logs only say it gave up."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=min(timeout, 1.0)):
            pass
    except OSError as exc:
        return f"cannot connect: {exc.strerror or exc}"
    return f"no success answer within {timeout:g} s"
