"""Before the first attempt: check that the model endpoint answers and serves the models
the run names, so a dead server or a wrong ``--model`` is one clear line within seconds
rather than a run of failed attempts and retries."""

from __future__ import annotations

import difflib

from agent_eval.agents import MODEL_AGENTS
from agent_eval.errors import ConfigError, ModelEndpointError

PREFLIGHT_SECONDS = 5.0
"""How long the endpoint has to answer ``GET /models``."""
SHOWN_MODELS = 12
"""Served models named in an error; a provider that lists hundreds gets a count."""


def wanted(agent: str, endpoint_named: bool) -> bool:
    """Whether a run of ``agent`` checks its endpoint first.

    The shipped agents that call a model always do, and the baselines never do. A
    user's own agent (a file, a module, a ``cmd:``) is checked when the command names an
    endpoint or a model (``--base-url``, ``OPENAI_BASE_URL``, ``--model``,
    ``--router-model``): the course's commands do, and an agent that needs no model is
    not refused for a server it never calls.
    """
    if agent.startswith("builtin:"):
        return agent.removeprefix("builtin:") in MODEL_AGENTS
    return endpoint_named


def check_endpoint(base_url: str, api_key: str | None, models: dict[str, str]) -> None:
    """Raise, naming the fix, when the endpoint is down or does not list a model.

    ``models`` maps each flag to the model it names (``{"--model": "local/chat"}``). An
    endpoint that lists no models gets only the first check: it answers.
    """
    from agent_eval.models import ChatClient  # httpx: only a run that checks pays for it

    with ChatClient(base_url, api_key, timeout=PREFLIGHT_SECONDS) as client:
        try:
            listed = client.listed_models(PREFLIGHT_SECONDS)
        except ModelEndpointError as exc:
            raise ModelEndpointError(
                f"{exc}: start the model server (`agent-eval serve-model` serves the embedded "
                f"model at http://127.0.0.1:4000/v1), or give --base-url of one that runs",
                exc.kind,
            ) from None
    if listed is None:
        return
    unknown = {flag: name for flag, name in models.items() if name not in listed}
    if not unknown:
        return
    named = " and ".join(f"{flag} {name}" for flag, name in unknown.items())
    served = ", ".join(listed[:SHOWN_MODELS])
    if len(listed) > SHOWN_MODELS:
        served += f" and {len(listed) - SHOWN_MODELS} more"
    close = difflib.get_close_matches(next(iter(unknown.values())), listed, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise ConfigError(
        f"{named}: not served by {base_url}{hint}; it serves {served}; give one of those "
        f"(--no-preflight skips this check, for an endpoint that serves models it does "
        f"not list)"
    )
