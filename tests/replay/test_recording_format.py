"""The recording format's pieces: what differs first, events both ways, no secrets."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from agent_eval.replay.recording import (
    body_record,
    first_difference,
    kept_headers,
    parse_events,
    recording_text,
    render_event,
    scrub_fields,
)

BODY = {
    "model": "mock",
    "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
    "tools": [{"type": "function", "function": {"name": "search_documents"}}],
    "temperature": 0.0,
}


def changed(**fields: object) -> dict[str, object]:
    return {**json.loads(json.dumps(BODY)), **fields}


def test_the_first_differing_field_is_named() -> None:
    assert first_difference(BODY, changed()) is None
    assert first_difference(BODY, changed(model="other", temperature=1.0)) == "model"
    messages = [BODY["messages"][0], {"role": "user", "content": "Hello"}]  # type: ignore[index]
    assert first_difference(BODY, changed(messages=messages)) == "messages[1].content"
    assert first_difference(BODY, changed(messages=messages[:1])) == "messages[1]"
    assert first_difference(BODY, changed(tools=[])) == "tools[0]"
    assert first_difference(BODY, changed(temperature=0.5)) == "temperature"
    assert first_difference(BODY, changed(seed=3)) == "seed"  # a parameter added
    without = changed()
    del without["temperature"]
    assert first_difference(BODY, without) == "temperature"  # or taken away
    # near misses: equal in Python, not in JSON
    assert first_difference({"n": 1}, {"n": True}) == "n"
    assert first_difference({"n": 1}, {"n": 1.0}) == "n"
    assert first_difference("text", "other") == "body"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=12,
)


@given(json_values)
def test_a_body_never_differs_from_itself(body: object) -> None:
    assert first_difference(body, json.loads(json.dumps(body))) is None


line_text = st.text(
    st.characters(blacklist_characters="\r\n", blacklist_categories=["Cs"]), min_size=1
).filter(
    lambda text: not text.startswith(" ")  # SSE takes one leading space as the separator's
)


@given(st.lists(st.dictionaries(st.sampled_from(["data", "event", "id"]), line_text, min_size=1),
                max_size=4))  # fmt: skip
def test_events_come_back_as_they_were_sent(events: list[dict[str, str]]) -> None:
    assert parse_events(b"".join(render_event(e) for e in events)) == events
    multi_line = {"data": "first\nsecond"}
    assert parse_events(render_event(multi_line)) == [multi_line]


def test_secrets_are_never_kept() -> None:
    headers = [("Authorization", "Bearer sk-1"), ("X-Api-Key", "sk-2"), ("Cookie", "a=b"),
               ("Content-Type", "application/json"), ("Host", "x")]  # fmt: skip
    assert kept_headers(headers) == {"content-type": "application/json"}
    body = {"api_key": "sk-3", "nested": [{"client_secret": "s", "max_tokens": 8}], "n": 1}
    assert scrub_fields(body) == {
        "api_key": "[redacted]", "nested": [{"client_secret": "[redacted]", "max_tokens": 8}],
        "n": 1,
    }  # fmt: skip


def test_a_lone_surrogate_in_a_body_is_recorded_as_u_fffd() -> None:
    """A JSON escape of a lone surrogate, which UTF-8 cannot hold, sent by an agent or an
    endpoint: the recording keeps the text around it and can be written."""
    raw = b'{"messages": [{"role": "user", "content": "hi \\ud800 there"}]}'
    body = body_record(raw)
    assert body == {"json": {"messages": [{"role": "user", "content": "hi \ufffd there"}]}}
    text = recording_text({"task": "t"}, [{"request": body}])
    assert "hi \ufffd there" in text.encode("utf-8").decode("utf-8")
