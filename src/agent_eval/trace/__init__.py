"""The OpenTelemetry export: each attempt's trajectory as a GenAI trace, sent over OTLP/HTTP
to a trace store (Langfuse, Arize Phoenix, Jaeger), during a run or afterwards.

The span plan (spans.py, genai.py, messages.py) needs no extra; sending it (otel_sdk.py)
needs the otel extra, reached only through otel.py. Trajectory files themselves are
owned by :mod:`agent_eval.trajectory`.
"""
