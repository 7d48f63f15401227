"""Grammar-first sampling chooses exactly what the full grammar test chooses."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("llama_cpp", reason="the local extra is not installed")

import llama_cpp

from agent_eval.models.local_sampling import grammar_first_llama
from agent_eval.models.local_server import locate_default_model

SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["search_documents", "read_file", "finish"]},
        "args": {"type": "object", "properties": {"query": {"type": "string"}},
                 "required": ["query"]},
    },
    "required": ["action", "args"],
}  # fmt: skip
PROMPTS = [
    "You are an agent. Reply with one JSON action to find the backup window.",
    "Reply with one JSON action. The user asks which port the gateway uses.",
]


@pytest.mark.parametrize("prompt", PROMPTS)
def test_greedy_output_is_the_same_as_the_full_grammar_test(prompt: str) -> None:
    path = str(locate_default_model())
    outputs = []
    for make in (llama_cpp.Llama, grammar_first_llama(llama_cpp)):
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
    assert fast.lstrip().startswith('{ "action": "') or fast.lstrip().startswith('{"action": "')


def test_sampled_output_keeps_to_the_grammar() -> None:
    llm = grammar_first_llama(llama_cpp)(
        model_path=str(locate_default_model()), n_ctx=1024, n_threads=1, verbose=False, seed=7
    )
    for _ in range(3):
        grammar = llama_cpp.LlamaGrammar.from_json_schema(json.dumps(SCHEMA), verbose=False)
        reply = llm.create_chat_completion(
            messages=[{"role": "user", "content": PROMPTS[0]}],
            grammar=grammar, max_tokens=200, temperature=1.0,
        )  # fmt: skip
        action = json.loads(reply["choices"][0]["message"]["content"])
        assert action["action"] in ("search_documents", "read_file", "finish")
        assert isinstance(action["args"]["query"], str)
    llm.close()
