"""How fast, how big and how obedient the embedded local model is on this machine.

Starts ``LocalModelServer`` in this process on a free loopback port and measures, over a
few bounded requests through HTTP, as an agent would see them:

- load time and resident memory of the loaded model;
- prompt tokens/s (long unique prompts, one generated token);
- generation tokens/s, free and under a JSON-schema grammar;
- how well the model follows a generic JSON-action schema, with and without the
  ``response_format`` constraint (invented tasks, unrelated to any shipped suite).

Run: ``python benchmarks/local_model.py [--requests 3] [--threads N] [--model-path F]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from agent_eval.models.local_server import LocalModelServer

ACTIONS = ["search_documents", "read_file", "run_command", "finish"]
SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ACTIONS},
        "args": {"type": "object"},
        "answer": {"type": "string"},
    },
    "required": ["action", "args", "answer"],
}
# The same actions, each with its own argument shape, so the grammar also fixes the keys.
STRICT = {
    "anyOf": [
        {
            "type": "object",
            "properties": {
                "action": {"const": name},
                "args": {
                    "type": "object",
                    "properties": {key: {"type": "string"}} if key else {},
                    "required": [key] if key else [],
                    "additionalProperties": False,
                },
                "answer": {"type": "string"},
            },
            "required": ["action", "args", "answer"],
            "additionalProperties": False,
        }
        for name, key in (
            ("search_documents", "query"),
            ("read_file", "path"),
            ("run_command", "command"),
            ("finish", None),
        )
    ]
}
SYSTEM = (
    "You are an agent that works in a folder of text documents. Each turn, reply with one "
    'JSON object: {"action": ..., "args": {...}, "answer": "..."}. Actions: '
    'search_documents with args {"query": words} searches the documents; read_file with '
    'args {"path": file name} reads one file; run_command with args {"command": a read-only '
    "shell command such as ls or wc} runs it; finish with args {} ends, giving the final "
    'answer in "answer". Leave "answer" empty until you finish.'
)
# (task, expected action, expected args key or the word the final answer must hold)
ONE_TURN = [
    ("List the files in the folder.", "run_command", "command"),
    ("Count the lines of data.csv.", "run_command", "command"),
    ("Read the file README.md.", "read_file", "path"),
    ("Open notes/todo.txt and tell me what it says.", "read_file", "path"),
    ("Which document talks about the holiday rota?", "search_documents", "query"),
    ("Search the documents for the word invoice.", "search_documents", "query"),
    ("What is 2 + 3? Answer directly.", "finish", "5"),
    ("Say hello, then stop.", "finish", "hello"),
]
# (task, the action taken, its observation, the word the final answer must hold)
TWO_TURN = [
    ("What colour is the car in car.txt?", "read_file", "The car is red.", "red"),
    ("Who signs the invoices?", "search_documents", "invoices.md: Maria Lopez signs.", "Maria"),
    ("How many files are there?", "run_command", "a.txt\nb.txt\nc.txt", "3"),
    ("When does the shop open?", "search_documents", "hours.md: opens at 9 am.", "9"),
]


def memory_mib() -> dict[str, float]:
    """Resident memory of this process, split into anonymous and file-backed, where /proc has it.

    The file-backed part is mostly the memory-mapped GGUF, shared by every instance and
    process that maps it; the anonymous part is the KV cache, buffers and Python.
    """
    status = Path("/proc/self/status")
    if not status.exists():
        return {}
    text = status.read_text()
    found = {k: re.search(rf"{k}:\s+(\d+) kB", text) for k in ("VmRSS", "RssAnon", "RssFile")}
    return {k: int(m.group(1)) / 1024 for k, m in found.items() if m}


def post(http: httpx.Client, **body: Any) -> tuple[dict[str, Any], float]:
    body = {"model": "local/chat", "temperature": 0, **body}
    started = time.perf_counter()
    reply = http.post("/chat/completions", json=body)
    reply.raise_for_status()
    return reply.json(), time.perf_counter() - started


def throughput(http: httpx.Client, requests: int) -> dict[str, float]:
    """Prompt and generation tokens per second, end to end through HTTP."""
    filler = " ".join(f"Line {i}: the quick brown fox jumps over the lazy dog." for i in range(50))
    p_tok = p_sec = 0.0
    for _ in range(requests):
        # A unique first line defeats llama.cpp's prefix cache, so every token is evaluated.
        text = f"{uuid.uuid4().hex}\n{filler}"
        out, sec = post(http, messages=[{"role": "user", "content": text}], max_tokens=1)
        p_tok, p_sec = p_tok + out["usage"]["prompt_tokens"], p_sec + sec
    prompt_rate = p_tok / p_sec
    rates: dict[str, float] = {"prompt_tokens_per_s": prompt_rate, "prompt_tokens": p_tok}
    for label, extra in (("free", {}), ("json_schema", {"response_format": json_format()})):
        g_tok = g_sec = 0.0
        for i in range(requests):
            ask = [{"role": "user", "content": f"Write a long story about a lighthouse ({i})."}]
            out, sec = post(http, messages=ask, max_tokens=128, **extra)
            usage = out["usage"]
            g_tok += usage["completion_tokens"] - 1
            g_sec += max(sec - usage["prompt_tokens"] / prompt_rate, 1e-6)
        rates[f"generation_tokens_per_s_{label}"] = g_tok / g_sec
        rates[f"generation_tokens_{label}"] = g_tok
    return rates


def json_format(schema: dict[str, Any] = SCHEMA) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "action", "schema": schema}}


def first_object(text: str) -> Any:
    start = text.find("{")
    while start != -1:
        try:
            return json.JSONDecoder().raw_decode(text[start:])[0]
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
    return None


def action_probe(http: httpx.Client, schema: dict[str, Any] | None) -> dict[str, Any]:
    """Score the JSON actions the model gives for invented tasks."""
    extra = {"response_format": json_format(schema)} if schema else {}
    scores = {"json": 0, "schema": 0, "right_action": 0, "right_args_or_answer": 0, "n": 0}
    samples: list[str] = []
    cases = [([("user", t)], act, key) for t, act, key in ONE_TURN]
    for task, act, seen, word in TWO_TURN:
        step = json.dumps({"action": act, "args": {}, "answer": ""})
        turns = [("user", task), ("assistant", step), ("user", f"Observation: {seen}")]
        cases.append((turns, "finish", word))
    for turns, want, key in cases:
        messages = [{"role": "system", "content": SYSTEM}]
        messages += [{"role": role, "content": text} for role, text in turns]
        out, _ = post(http, messages=messages, max_tokens=96, **extra)
        text = out["choices"][0]["message"]["content"] or ""
        samples.append(text.replace("\n", " ")[:120])
        got = first_object(text)
        scores["n"] += 1
        if not isinstance(got, dict):
            continue
        scores["json"] += 1
        if got.get("action") in ACTIONS and isinstance(got.get("args"), dict):
            scores["schema"] += 1
        if got.get("action") == want:
            scores["right_action"] += 1
            if want == "finish":
                scores["right_args_or_answer"] += key.lower() in str(got.get("answer")).lower()
            else:
                scores["right_args_or_answer"] += bool(got["args"].get(key))
    return {**scores, "samples": samples}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3, help="requests per measurement")
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads")
    parser.add_argument("--model-path", type=Path, default=None, help="GGUF file to serve")
    args = parser.parse_args()
    before, load_before = memory_mib(), os.getloadavg()[0]
    started = time.perf_counter()
    server = LocalModelServer(model_path=args.model_path, port=0, n_threads=args.threads)
    with server.start(), httpx.Client(base_url=server.base_url, timeout=600) as http:
        load = time.perf_counter() - started
        after = memory_mib()
        info = http.get(server.base_url.removesuffix("/v1") + "/health").json()
        rates = throughput(http, args.requests)
        peak = memory_mib()
        variants: dict[str, dict[str, Any] | None] = {
            "schema": SCHEMA,
            "strict schema": STRICT,
            "no schema": None,
        }
        probes = {name: action_probe(http, schema) for name, schema in variants.items()}
    print(f"model      {info['model_file']} ({info['quant']}, {info['parameters']:,} params)")
    print(
        f"engine     {info['engine']} via {info['engine_binding']} {info['engine_version']}, "
        f"{info['n_threads']} thread(s), n_ctx {info['n_ctx']}"
    )
    print(
        f"machine    {platform.machine()}, {os.cpu_count()} cpu(s), "
        f"load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after (other work)"
    )
    print(f"load       {load:.2f} s (first start assembles the file once)")
    for label, now in (("after load", after), (f"after {args.requests * 3} requests", peak)):
        if before and now:
            grown = {k: now[k] - before[k] for k in now}
            print(
                f"memory     {grown['VmRSS']:.0f} MiB resident {label}: "
                f"{grown['RssFile']:.0f} file-backed (mapped model), "
                f"{grown['RssAnon']:.0f} anonymous"
            )
    print(
        f"prompt     {rates['prompt_tokens_per_s']:.0f} tokens/s "
        f"({rates['prompt_tokens']:.0f} tokens)"
    )
    for label in ("free", "json_schema"):
        print(
            f"generation {rates[f'generation_tokens_per_s_{label}']:.1f} tokens/s {label} "
            f"({rates[f'generation_tokens_{label}']:.0f} tokens)"
        )
    for name, probe in probes.items():
        n = probe["n"]
        print(
            f"actions    {name:13} json {probe['json']}/{n}, schema {probe['schema']}/{n}, "
            f"right action {probe['right_action']}/{n}, right args or answer "
            f"{probe['right_args_or_answer']}/{n}"
        )
    for name, probe in probes.items():
        for sample in probe["samples"]:
            print(f"  {name[:6]:6}  {sample}")


if __name__ == "__main__":
    main()
