"""Grammar-constrained sampling on the embedded model: what holds for every sample.

Sampled text differs between llama.cpp builds and CPUs, so nothing here asserts what a
seed produced. It asserts the guarantees: greedy grammar-first sampling picks what the
full grammar test picks; every reply serve-model's engine returns under a grammar is
either whole JSON of the schema or says ``finish_reason: "length"``; and a reply too short
for any whole object always says so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("llama_cpp", reason="the local extra is not installed")

import llama_cpp

from agent_eval.models.local_engine import LlamaPool, chat_completion
from agent_eval.models.local_sampling import grammar_first_llama, safe_llama
from agent_eval.models.local_server import locate_default_model

ACTIONS = ["search_documents", "read_file", "finish"]
SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ACTIONS},
        "args": {"type": "object", "properties": {"query": {"type": "string"}},
                 "required": ["query"]},
    },
    "required": ["action", "args"],
}  # fmt: skip
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search_documents",
        "description": "Search the documents.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
    },
}
PROMPTS = [
    "You are an agent. Reply with one JSON action to find the backup window.",
    "Reply with one JSON action. The user asks which port the gateway uses.",
]
FEWEST_TOKENS = 3
"""Fewer tokens than any whole object of SCHEMA needs: the shortest has 39 characters
(``{"action":"finish","args":{"query":""}}``), and no three tokens of the vocabulary
spell that much JSON."""


@pytest.fixture(scope="module")
def pool() -> Iterator[LlamaPool]:
    engine = LlamaPool(locate_default_model(), parallel=1, n_ctx=1024, n_threads=1)
    yield engine
    engine.close()


def ask(pool: LlamaPool, prompt: str, max_tokens: int, **body: Any) -> dict[str, Any]:
    request = {
        "model": "local/answer",
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        **body,
    }
    choice: dict[str, Any] = chat_completion(pool, request, max_tokens)["choices"][0]
    return choice


def keeps_to_the_schema(text: str) -> bool:
    try:
        action = json.loads(text)
    except json.JSONDecodeError:
        return False
    return (
        isinstance(action, dict)
        and set(action) == {"action", "args"}
        and action["action"] in ACTIONS
        and isinstance(action["args"], dict)
        and set(action["args"]) == {"query"}
        and isinstance(action["args"]["query"], str)
    )


@pytest.mark.parametrize("prompt", PROMPTS)
def test_greedy_output_is_the_same_as_the_full_grammar_test(prompt: str) -> None:
    path = str(locate_default_model())
    outputs = []
    for make in (safe_llama(llama_cpp), grammar_first_llama(llama_cpp)):
        llm = make(model_path=path, n_ctx=1024, n_threads=1, verbose=False)
        grammar = llama_cpp.LlamaGrammar.from_json_schema(json.dumps(SCHEMA), verbose=False)
        reply = llm.create_chat_completion(
            messages=[{"role": "user", "content": prompt}],
            grammar=grammar, max_tokens=40, temperature=0,
        )  # fmt: skip
        outputs.append(reply["choices"][0]["message"]["content"])
        llm.close()
    plain, fast = outputs
    assert fast == plain
    # The grammar fixes the opening whatever was sampled; only the optional spaces vary.
    assert re.match(r'\{ ?"action" ?: ?"', fast)


JSON_SCHEMA = {"type": "json_schema", "json_schema": {"name": "action", "schema": SCHEMA}}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_sampled_reply_is_whole_json_or_says_length(pool: LlamaPool, seed: int) -> None:
    choice = ask(pool, PROMPTS[0], 200, response_format=JSON_SCHEMA, temperature=1.0, seed=seed)
    text = choice["message"]["content"]
    assert choice["finish_reason"] in ("stop", "length")
    if choice["finish_reason"] == "stop":
        assert keeps_to_the_schema(text), text
    else:
        assert text.startswith("{")


@pytest.mark.parametrize("seed", [1, 2])
def test_a_reply_cut_by_max_tokens_says_length(pool: LlamaPool, seed: int) -> None:
    choice = ask(
        pool, PROMPTS[1], FEWEST_TOKENS, response_format=JSON_SCHEMA, temperature=1.0, seed=seed
    )
    assert choice["finish_reason"] == "length"
    assert not keeps_to_the_schema(choice["message"]["content"])


def test_a_cut_tool_call_comes_back_as_text_that_says_length(pool: LlamaPool) -> None:
    choice = ask(
        pool, PROMPTS[1], FEWEST_TOKENS, tools=[SEARCH_TOOL], tool_choice="required", seed=1
    )
    assert choice["finish_reason"] == "length"
    assert "tool_calls" not in choice["message"]
    assert choice["message"]["content"].startswith("{")
