"""The OpenTelemetry export: each attempt's trajectory as a GenAI trace, sent over OTLP/HTTP
to a trace store (Langfuse, Arize Phoenix, Jaeger), during a run or afterwards.

The span plan (spans.py, genai.py, messages.py) needs no extra; sending it (otel_sdk.py)
needs the otel extra, reached only through otel.py. Trajectory files themselves are
owned by :mod:`agent_eval.trajectory`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_eval.lazy import lazy_getattr

# The face's names that live in its modules, imported on first use (__getattr__).
if TYPE_CHECKING:
    from agent_eval.trace.messages import from_openai
    from agent_eval.trace.otel import (
        ExportEachAttempt,
        OtlpExporter,
        parse_env_headers,
        parse_header_items,
    )
    from agent_eval.trace.phoenix import annotations_url, post_annotations


__all__ = [
    "ExportEachAttempt",
    "OtlpExporter",
    "annotations_url",
    "from_openai",
    "parse_env_headers",
    "parse_header_items",
    "post_annotations",
]


_LAZY = {
    "ExportEachAttempt": "agent_eval.trace.otel:ExportEachAttempt",
    "OtlpExporter": "agent_eval.trace.otel:OtlpExporter",
    "annotations_url": "agent_eval.trace.phoenix:annotations_url",
    "from_openai": "agent_eval.trace.messages:from_openai",
    "parse_env_headers": "agent_eval.trace.otel:parse_env_headers",
    "parse_header_items": "agent_eval.trace.otel:parse_header_items",
    "post_annotations": "agent_eval.trace.phoenix:post_annotations",
}
"""Public name -> where it lives: ``module:attribute``, or a module."""
__getattr__ = lazy_getattr(__name__, _LAZY)
