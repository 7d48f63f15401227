"""agent-eval: measure AI agents on versioned, program-checked task suites."""

from __future__ import annotations

__version__ = "0.1.0"
