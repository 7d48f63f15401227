"""``builtin:multi-agent``: the course's four-role system, router, researcher, answerer, verifier.

- the router (on the router model) picks a route and says why; the decision is logged;
- the researcher runs the tool loop and finishes with notes;
- the answerer writes the answer from the evidence alone;
- the verifier checks the answer against the evidence and replaces unsupported claims
  with an honest "This is not stated in the documents." (``prompts.NOT_STATED``).

Every model record carries its role, and the result's ``roles`` gives tokens per role.
"""

from __future__ import annotations

from typing import Any

from agent_eval.agents import prompts
from agent_eval.agents.config import ClientPool, warm_search
from agent_eval.agents.loop import LoopResult, tool_loop
from agent_eval.agents.session import Session
from agent_eval.models import ChatReply, find_json_object, is_whole_object, json_schema_format
from agent_eval.tools import tool_specs
from agent_eval.trajectory import RouteRecord

SCAFFOLD_NAME = "multi-agent"
"""The agent's name in reports and trajectory file names."""
EVIDENCE_CHARS = 6000
"""How much gathered evidence the answerer and verifier see; small models have small contexts."""

_clients = ClientPool()
_ROUTE_SCHEMA = {
    "type": "object",
    "properties": {"route": {"enum": list(prompts.ROUTES)}, "reason": {"type": "string"}},
    "required": ["route", "reason"],
    "additionalProperties": False,
}
_ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}
_VERDICT_SCHEMA = {
    "type": "object",
    "properties": {"supported": {"type": "boolean"}, "answer": {"type": "string"}},
    "required": ["supported", "answer"],
    "additionalProperties": False,
}


def build(options: dict[str, Any]) -> None:
    """Open the connection to the model endpoint and index the documents, once, before
    the first task."""
    _clients.warm(options)
    warm_search(options)


def run_task(task: str, options: dict[str, Any]) -> dict[str, Any]:
    """Run one attempt at ``task`` through the four roles and return the result dict."""
    config = _clients.config(options)
    client = _clients.get(config.base_url, config.api_key, config.timeout)
    session = Session(config, client, per_role=True)
    return session.run(lambda: _pipeline(session, task))


def close() -> None:
    """Close the endpoint connections after the last task."""
    _clients.close()


def _pipeline(session: Session, task: str) -> str:
    config = session.config
    route, reason = _route(session, task)
    session.trajectory.append(RouteRecord(type="route", route=route, reason=reason))
    # The answerer and the verifier need one reply each; the researcher gets the rest.
    share = session.steps_left - 2
    research = LoopResult(answer=None)
    if share >= 1:
        tools = tool_specs(list(config.tools))
        system = prompts.researcher_system(route, tools, config.tool_mode == "json")
        research = tool_loop(
            session,
            role="researcher",
            model=config.model,
            system=system,
            task=task,
            step_cap=share,
        )
        if research.answer is None:
            session.notes.append("the researcher ran out of steps; answering from what it found")
    else:
        session.notes.append("the researcher was skipped: no steps to spare")
    evidence = _evidence(research)
    answer = _answer(session, task, evidence)
    if session.steps_left < 1:
        session.notes.append("the verifier was skipped: no steps left")
        return answer
    return _verify(session, task, evidence, answer)


def _ask_json(
    session: Session, role: str, model: str, system: str, user: str, schema: dict[str, Any]
) -> str:
    json_mode = session.config.tool_mode == "json"
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    fmt = json_schema_format(role, schema) if json_mode else None
    reply = session.ask(role, model, messages, response_format=fmt, complete=_whole_json)
    return reply.content or ""


def _whole_json(reply: ChatReply) -> bool:
    """A role's JSON reply is whole, even when it met the reply limit, when all of it parses."""
    return is_whole_object(reply.content or "")


def _route(session: Session, task: str) -> tuple[str, str]:
    config = session.config
    content = _ask_json(
        session,
        "router",
        config.router_model,
        prompts.router_system(),
        prompts.task_message(task),
        _ROUTE_SCHEMA,
    )
    obj = find_json_object(content) or {}
    route = obj.get("route")
    if isinstance(route, str) and route.strip().lower() in prompts.ROUTES:
        reason = obj.get("reason")
        return route.strip().lower(), str(reason).strip() if reason else "the router gave no reason"
    return prompts.DEFAULT_ROUTE, (
        f"the router's reply named no known route ({content[:120]!r}); "
        f"fell back to the default route '{prompts.DEFAULT_ROUTE}'"
    )


def _evidence(research: LoopResult) -> str:
    parts = [f"Researcher's notes: {research.answer or '(none)'}"]
    for name, args, result in research.observations:
        parts.append(f"[{name} {prompts.args_text(args)}]\n{result}")
    text = "\n\n".join(parts)
    return text if len(text) <= EVIDENCE_CHARS else text[:EVIDENCE_CHARS] + "\n[... cut]"


def _answer(session: Session, task: str, evidence: str) -> str:
    config = session.config
    user = f"{prompts.task_message(task)}\n\nEvidence:\n{evidence}"
    system = prompts.answerer_system(config.tool_mode == "json")
    content = _ask_json(session, "answerer", config.model, system, user, _ANSWER_SCHEMA)
    obj = find_json_object(content)
    # A model may answer in JSON even unasked; take the answer field when there is one.
    if obj is not None and isinstance(obj.get("answer"), str):
        return str(obj["answer"]).strip()
    return content.strip()


def _verify(session: Session, task: str, evidence: str, answer: str) -> str:
    config = session.config
    user = f"{prompts.task_message(task)}\n\nEvidence:\n{evidence}\n\nAnswer: {answer}"
    content = _ask_json(
        session, "verifier", config.model, prompts.verifier_system(), user, _VERDICT_SCHEMA
    )
    obj = find_json_object(content) or {}
    supported = obj.get("supported")
    if isinstance(supported, str) and supported.strip().lower() in ("true", "false"):
        supported = supported.strip().lower() == "true"
    if not isinstance(supported, bool):
        session.notes.append("the verifier's reply could not be read; the answer was kept")
        return answer
    if supported:
        return answer
    revised = str(obj.get("answer") or "").strip()
    session.notes.append("the verifier found unsupported claims; the answer was revised")
    if not revised or revised == answer:
        return prompts.NOT_STATED
    if "not stated in the documents" in revised.lower():
        return revised
    # Whatever the verifier kept, the gap is said in words a refusal check accepts.
    return f"{revised} {prompts.REST_NOT_STATED}"
