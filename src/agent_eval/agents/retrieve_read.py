"""``builtin:retrieve-read``: the classic baseline, one search with the task text, then one answer.

It makes no decisions: the task text is the query, the top passages go into one prompt,
and the model's reply is the answer. That suits small and base models, which cannot yet
drive a tool loop, and it is the scaffold a tool-using agent has to beat.

A base model without a chat template never saw chat turns in training, so it gets a
plain document to continue (``/v1/completions``): instructions, four invented worked
examples, then the passages and the question, ending in ``Answer:``. A model with a chat
template gets the same content as chat turns. ``--option prompt_style=completion|chat``
overrides what the server reports; with no report (most servers), the prompt is chat.

Two steps per attempt: a ``tool`` record for the search and a ``model`` record for the
answer, then the stop record. An answer cut at the reply limit stops as ``reply_cut``, as
in the other reference agents.
"""

from __future__ import annotations

import threading
from typing import Any

from agent_eval.agents import reading_prompts
from agent_eval.agents.config import AgentConfig, ClientPool
from agent_eval.agents.session import Session
from agent_eval.errors import ConfigError
from agent_eval.models import ChatClient

SCAFFOLD_NAME = "retrieve-read"
"""The agent's name in reports and trajectory file names."""
PROMPT_STYLES = ("auto", "completion", "chat")
"""``auto`` asks the server whether the model has a chat template."""

_clients = ClientPool()
_templates: dict[str, bool] = {}
"""Endpoint -> whether its model has a chat template, once the server has said."""
_lock = threading.Lock()


def build(options: dict[str, Any]) -> None:
    """Open the connection to the model endpoint once, before the first task, and ask the
    server whether its model has a chat template (every attempt then knows)."""
    client = _clients.warm(options)
    if client is not None and not options.get("prompt_style"):
        _style_from_server(client)


def run_task(task: str, options: dict[str, Any]) -> dict[str, Any]:
    """Search once with ``task``, answer once from the passages found; the result dict."""
    config = AgentConfig.from_options(options)
    style = str(options.get("prompt_style") or "auto")
    if style not in PROMPT_STYLES:
        raise ConfigError(
            f"option prompt_style={style!r}: use prompt_style=completion (a base model), "
            "prompt_style=chat, or leave it out to ask the server"
        )
    client = _clients.get(config.base_url, config.api_key, config.timeout)
    session = Session(config, client)
    return session.run(lambda: _retrieve_then_read(session, task, style))


def close() -> None:
    """Close the endpoint connections after the last task."""
    _clients.close()
    with _lock:
        _templates.clear()


def _retrieve_then_read(session: Session, task: str, style: str) -> str:
    session.check_budget(steps_needed=2)
    found = session.use_tool("search_documents", {"query": task})
    # A failed search (no documents, a broken index) still gets an answer: the prompt
    # then says there are no passages, and an honest model says so.
    passages = "" if found.error else found.result
    if style == "auto":
        style, why = _style_from_server(session.client)
        session.notes.append(f"prompt style {style} ({why})")
    model = session.config.model
    if style == "completion":
        prompt = reading_prompts.completion_prompt(passages, task)
        reply = session.complete(
            "reader",
            model,
            prompt,
            instructions=reading_prompts.INSTRUCTIONS,
            stop=list(reading_prompts.STOPS),
        )
    else:
        messages = reading_prompts.chat_messages(passages, task)
        reply = session.ask("reader", model, messages)
    return reading_prompts.clean_answer(reply.content or "")


def _style_from_server(client: ChatClient) -> tuple[str, str]:
    """``completion`` when the server says the model has no chat template, else ``chat``."""
    with _lock:
        template = _templates.get(client.base_url)
    if template is None:
        reported = client.health().get("chat_template")
        if isinstance(reported, bool):  # silence (or a server not up yet) is asked again
            template = reported
            with _lock:
                _templates[client.base_url] = template
    if template is False:
        return "completion", "the server reports no chat template"
    if template:
        return "chat", "the server reports a chat template"
    return "chat", "the server does not say whether the model has a chat template"
