"""Post each attempt's verdict and check outcomes as Phoenix span annotations.

Phoenix keeps scores as annotations on spans (REST: ``POST /v1/span_annotations``), which
its trace list can filter and its charts can plot; a span event is only text to it. Each
annotation carries one fixed ``identifier``, so Phoenix updates an annotation it already
has (same span, name and identifier) instead of adding a second one: re-sending is safe.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from agent_eval.errors import ConfigError
from agent_eval.trace import genai
from agent_eval.trace.spans import AttemptPlan, check_outcomes, explain, root_span_id, verdict_of

PATH = "/v1/span_annotations"
IDENTIFIER = "agent-eval"
"""The identifier of every annotation we send: what makes a re-send an update."""
WAITS = (0.5, 1.0, 2.0, 4.0)
"""Pauses before asking again while Phoenix has not yet stored the spans just sent."""


@dataclass(frozen=True)
class AnnotationSummary:
    """What one posting of annotations achieved."""

    annotations: int
    """Annotations Phoenix accepted."""
    attempts: int
    """Attempts they belong to."""
    error: str | None
    """Why Phoenix did not take them, if it did not."""


def attempt_annotations(plan: AttemptPlan) -> list[dict[str, Any]]:
    """The verdict and one annotation per check, all on the attempt's root span."""
    score = plan.score
    if not score:
        return []
    span = root_span_id(plan)
    meta = {"conversation_id": plan.key}
    passed = bool(score.get("passed"))
    found = [_annotation(span, genai.EVALUATION, verdict_of(score), passed,
                         explain(score) or "all checks passed", meta)]  # fmt: skip
    for name, ok in check_outcomes(score.get("checks")).items():
        outcome = "pass" if ok else "fail"
        found.append(_annotation(span, f"check.{name}", outcome, ok, f"{name}: {outcome}", meta))
    return found


def _annotation(
    span: str, name: str, label: str, ok: bool, explanation: str, meta: dict[str, str]
) -> dict[str, Any]:
    return {
        "span_id": span,
        "name": name,
        "annotator_kind": "CODE",
        "result": {"label": label, "score": 1.0 if ok else 0.0, "explanation": explanation},
        "identifier": IDENTIFIER,
        "metadata": meta,
    }


def post_annotations(
    base_url: str,
    plans: Iterable[AttemptPlan],
    headers: Mapping[str, str] | None = None,
    timeout: float = 10.0,
) -> AnnotationSummary:
    """Send the annotations of every plan to the Phoenix server at ``base_url``."""
    url = annotations_url(base_url)
    chosen = [p for p in plans if p.score]
    data = [a for plan in chosen for a in attempt_annotations(plan)]
    if not data:
        return AnnotationSummary(0, 0, None)
    error = None
    with httpx.Client(headers=dict(headers or {}), timeout=timeout) as client:
        for wait in (*WAITS, None):
            try:
                answer = client.post(url, params={"sync": "true"}, json={"data": data})
            except httpx.HTTPError as exc:
                return AnnotationSummary(0, len(chosen), f"cannot reach {url}: {exc}")
            if answer.is_success:
                return AnnotationSummary(len(data), len(chosen), None)
            error = f"{url} answered {answer.status_code}: {answer.text[:200]}"
            # 404: the spans were sent a moment ago and Phoenix has not stored them yet
            if answer.status_code != 404 or wait is None:
                break
            time.sleep(wait)
    return AnnotationSummary(0, len(chosen), error)


def annotations_url(base_url: str) -> str:
    """The span-annotations URL of a Phoenix server's base URL."""
    url = httpx.URL(base_url.strip())
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(
            f"--phoenix-annotations {base_url!r}: use the Phoenix server's http:// URL, "
            "such as http://127.0.0.1:6006"
        )
    return str(url.copy_with(path=url.path.rstrip("/").removesuffix(PATH) + PATH))
