"""The recording file: one attempt's model traffic, call by call, and its one owner.

A recording sits beside the attempt's trajectory, named after it
(``{trajectory stem}{tag}.recording.ndjson``; the suffix keeps it out of the viewer's scan
for results files). Line 1 is ``{"recording": {...}}``: task id, attempt, try, mode and
upstream. Every further line is one call, in the order the requests arrived:

``{"call", "method", "path", "request": {"headers", "json" | "text"}, "response":
{"status", "headers", "json" | "text" | "events"} | null, "error": {"kind", "message"} |
null, "offset", "seconds", "source"}``

``events`` holds a streamed (SSE) reply as its events. ``error`` is what the endpoint did
instead of answering: ``connection`` (refused, reset), ``timeout``, ``stream`` (cut off
mid-reply) or ``unanswered`` (the attempt ended while the call was waiting). ``source``
says who answered: the ``endpoint``, the ``cache`` or a ``recording``.

Nothing secret is written: authorization, cookie and secret-named headers are left out,
secret-named JSON fields are replaced, and the run's secret values are scrubbed from the
text by the caller's redactor.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agent_eval.redaction import REDACTED, is_secret_name, replace_lone_surrogates

RECORDING_SCHEMA = 1
RECORDING_SUFFIX = ".recording.ndjson"
DROPPED_HEADERS = frozenset({
    "authorization", "proxy-authorization", "cookie", "set-cookie", "host", "content-length",
    "connection", "keep-alive", "transfer-encoding", "content-encoding", "accept-encoding",
    "upgrade", "te", "trailer", "date", "server",
})  # fmt: skip
"""Headers never recorded: credentials, and those that describe one connection."""
_encode = json.JSONEncoder(ensure_ascii=False, default=str).encode

Exchange = dict[str, Any]
"""One call of a recording, as its line holds it."""


def recording_name(trajectory_name: str, tag: str = "") -> str:
    """The recording's file name for a trajectory file name (and a try's tag, `.try1`)."""
    return trajectory_name.removesuffix(".jsonl") + tag + RECORDING_SUFFIX


def try_path(final: Path, try_number: int, tries: int) -> Path:
    """Where try ``try_number`` (1-based) of ``tries`` was recorded, given the final
    try's file: earlier tries carry the tag `.tryN` that their trajectories carry."""
    if try_number == tries:
        return final
    stem = final.name.removesuffix(RECORDING_SUFFIX)
    return final.with_name(f"{stem}.try{try_number}{RECORDING_SUFFIX}")


def kept_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Headers as they may be recorded: no credentials, nothing secret-named."""
    return {
        name.lower(): value
        for name, value in headers
        if name.lower() not in DROPPED_HEADERS and not is_secret_name(name)
    }


def scrub_fields(value: Any) -> Any:
    """A JSON value with every secret-named object field's value replaced."""
    if isinstance(value, Mapping):
        return {
            k: REDACTED if is_secret_name(str(k)) else scrub_fields(v) for k, v in value.items()
        }
    if isinstance(value, list):
        return [scrub_fields(item) for item in value]
    return value


def body_record(raw: bytes) -> dict[str, Any]:
    """A request or response body as recorded: ``json`` when it parses, else ``text``
    (a "\\ud800" escape in it, which UTF-8 cannot hold, as U+FFFD)."""
    if not raw:
        return {}
    text = raw.decode("utf-8", errors="replace")
    try:
        return {"json": scrub_fields(replace_lone_surrogates(json.loads(text)))}
    except ValueError:
        return {"text": text}


def body_bytes(part: Mapping[str, Any]) -> bytes:
    """The bytes a recorded body stands for (a streamed reply's events as SSE)."""
    if "events" in part:
        return b"".join(render_event(event) for event in part["events"])
    if "json" in part:
        return json.dumps(part["json"]).encode()
    return str(part.get("text", "")).encode()


def parse_events(raw: bytes) -> list[dict[str, str]]:
    """Server-sent events as recorded: one dict per event, its fields (data, event, id)."""
    events = []
    text = raw.decode("utf-8", errors="replace").replace("\r\n", "\n")
    for block in text.split("\n\n"):
        fields: dict[str, list[str]] = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            fields.setdefault(name, []).append(value.removeprefix(" "))
        if fields:
            events.append({name: "\n".join(values) for name, values in fields.items()})
    return events


def render_event(event: Mapping[str, str]) -> bytes:
    """One recorded event back in SSE form."""
    lines = []
    for name, value in event.items():
        lines += [f"{name}: {part}" for part in str(value).split("\n")]
    return ("\n".join(lines) + "\n\n").encode()


def recording_text(header: Mapping[str, Any], exchanges: Iterable[Exchange]) -> str:
    """A recording file's text: the header line, then one line per call."""
    lines = [{"recording": {"schema": RECORDING_SCHEMA, **header}}, *exchanges]
    return "".join(_encode(line) + "\n" for line in lines)


def read_recording(path: Path) -> tuple[dict[str, Any], list[Exchange]]:
    """A recording's header and calls; ValueError naming the file when it is not one."""
    header: dict[str, Any] | None = None
    calls: list[Exchange] = []
    # "\n" alone ends a line: splitlines() would also cut at U+2028 in a prompt
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            raise ValueError(f"{path}: line {number} is not JSON; not a recording") from None
        if header is None:
            if not isinstance(record, dict) or not isinstance(record.get("recording"), dict):
                raise ValueError(f"{path}: no recording header on line 1; not a recording")
            header = record["recording"]
        elif isinstance(record, dict):
            calls.append(record)
    if header is None:
        raise ValueError(f"{path}: empty; not a recording")
    return header, calls


def request_part(exchange: Mapping[str, Any]) -> Any:
    """What replay compares of a request: its JSON body, or its text."""
    request = exchange.get("request") or {}
    return request.get("json", request.get("text"))


FIELD_ORDER = ("model", "messages", "tools", "tool_choice")
"""Top-level request fields compared first, so a detail names the field that matters."""


def first_difference(recorded: Any, sent: Any, where: str = "") -> str | None:
    """The path of the first field where two request bodies differ (`model`,
    `messages[2].content`, `tools`, `temperature`), or None when they are equal."""
    if isinstance(recorded, dict) and isinstance(sent, dict):
        keys = [k for k in FIELD_ORDER if k in recorded or k in sent]
        keys += sorted((set(recorded) | set(sent)) - set(keys))
        for key in keys:
            inner = f"{where}.{key}" if where else str(key)
            if key not in recorded or key not in sent:
                return inner
            found = first_difference(recorded[key], sent[key], inner)
            if found is not None:
                return found
        return None
    if isinstance(recorded, list) and isinstance(sent, list):
        for index, (left, right) in enumerate(zip(recorded, sent, strict=False)):
            found = first_difference(left, right, f"{where}[{index}]")
            if found is not None:
                return found
        return None if len(recorded) == len(sent) else f"{where}[{min(len(recorded), len(sent))}]"
    if recorded == sent and type(recorded) is type(sent):
        return None
    return where or "body"


def value_at(body: Any, path: str) -> Any:
    """The value at a path first_difference named, or None when it is absent."""
    current = body
    for part in path.replace("[", ".[").split("."):
        if not part:
            continue
        if part.startswith("["):
            index = int(part[1:-1])
            current = current[index] if isinstance(current, list) and index < len(current) else None
        else:
            current = current.get(part) if isinstance(current, dict) else None
    return current
