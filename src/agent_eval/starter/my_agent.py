"""my_agent.py: your agent, measured by agent-eval. Edit it, and measure it again.

agent-eval calls ``run_task(task, options)`` once per attempt and scores what it returns:

- ``task`` is the question, as the suite writes it;
- ``options`` carries ``base_url`` and ``model`` (from ``--base-url`` and ``--model``),
  ``api_key``, ``workspace`` (a fresh copy of the documents, for this attempt only),
  ``limits``, and every ``--option KEY=VALUE``.

It returns a dict with at least ``answer`` (str), ``steps`` (int) and ``tokens`` (int).
``trajectory`` is the list of what happened: the harness keeps it for each attempt, and
a task's ``expect_tool`` check reads the ``tool`` key of its records.

This agent retrieves, then reads: it searches the documents for the passages that share
the most words with the task (or reads the file the task names), then asks the model
once to answer from them. That works even with a small model that cannot yet drive a
tool loop; letting the model choose its own searches is the next step. It needs only
Python's standard library and speaks to any OpenAI-compatible endpoint
(``POST {base_url}/chat/completions``).
"""

from __future__ import annotations

import json
import math
import re
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

SCAFFOLD_NAME = "my-agent"
"""Your agent's name in reports and in the names of its files."""

TOP_PASSAGES = 3
"""How many passages the model reads."""
REPLY_TOKENS = 96
"""The longest answer the model may write: a short answer needs a few dozen tokens, and a
small model left without a cap can ramble for minutes."""
INSTRUCTIONS = (
    "Answer the question from the passages, in one full sentence. Use the exact words, "
    "names, numbers and dates of the passages. If the passages do not contain the answer, "
    "say: The answer is not in the passages."
)
# One worked example, about invented facts, shows a small model the shape of an answer.
EXAMPLE_PASSAGES = (
    "--- garden-handbook.md > Watering ---\n"
    "The vegetable beds are watered every Tuesday and Friday from 06:30 to 07:15."
)
EXAMPLE_QUESTION = "On which days, and at what times, are the vegetable beds watered?"
EXAMPLE_ANSWER = "The vegetable beds are watered on Tuesday and Friday from 06:30 to 07:15."


def run_task(task: str, options: dict[str, Any]) -> dict[str, Any]:
    """Answer one task: search the workspace, then ask the model; the result dict."""
    started = time.perf_counter()
    workspace = Path(options["workspace"])
    named = [f for f in sorted(workspace.rglob("*")) if f.is_file() and f.name in task]
    if named:  # the task names a file: read it, and search only what it says
        tool, args = "read_file", {"path": named[0].relative_to(workspace).as_posix()}
        passages = search_passages(split_passages(named[0], workspace), task)
    else:
        tool, args = "search_documents", {"query": task}
        passages = search_documents(workspace, task)
    found = "\n\n".join(passages) or "(no passages found)"
    trajectory: list[dict[str, Any]] = [
        {"type": "tool", "tool": tool, "args": args, "error": False, "result": found[:2000]},
    ]
    messages = [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": question(EXAMPLE_PASSAGES, EXAMPLE_QUESTION)},
        {"role": "assistant", "content": EXAMPLE_ANSWER},
        {"role": "user", "content": question(found, task)},
    ]
    reply = chat(options, messages)
    answer = (reply["content"] or "").strip().split("\n\n")[0].strip()
    trajectory.append(
        {"type": "model", "role": "agent", "model": options["model"], "tool_calls": [],
         "prompt_tokens": reply["prompt_tokens"], "completion_tokens": reply["completion_tokens"],
         "seconds": reply["seconds"], "content": answer[:2000]}
    )  # fmt: skip
    return {
        "answer": answer,
        "steps": len(trajectory),  # one per tool result and one per model reply
        "tokens": reply["prompt_tokens"] + reply["completion_tokens"],
        "prompt_tokens": reply["prompt_tokens"],
        "completion_tokens": reply["completion_tokens"],
        "seconds": round(time.perf_counter() - started, 3),
        "trajectory": trajectory,
    }


def question(passages: str, text: str) -> str:
    return f"Passages:\n{passages}\n\nQuestion: {text.strip()}"


# --- the tool: a word-overlap search over the workspace's text files -------------------


def search_documents(workspace: Path, query: str) -> list[str]:
    """The passages that best match ``query``, best first, each headed by its file and
    section. Scoring: each query word a passage holds counts, rare words most (IDF)."""
    passages = [p for file in sorted(workspace.rglob("*")) for p in split_passages(file, workspace)]
    return search_passages(passages, query)


def search_passages(passages: list[str], query: str) -> list[str]:
    """The TOP_PASSAGES of ``passages`` that share the most words with ``query``."""
    wanted = set(words(query))
    if not passages or not wanted:
        return []
    held = [set(words(p)) for p in passages]
    weight = {w: math.log(1 + len(passages) / (1 + sum(w in h for h in held))) for w in wanted}
    scores = [sum(weight[w] for w in wanted & h) for h in held]
    ranked = sorted(range(len(passages)), key=lambda i: -scores[i])
    return [passages[i] for i in ranked[:TOP_PASSAGES] if scores[i] > 0]


def split_passages(file: Path, workspace: Path) -> list[str]:
    """A text file's paragraphs, each headed with ``--- file > section ---``."""
    if not file.is_file() or file.suffix not in (".md", ".txt", ".toml", ".py", ".json"):
        return []
    name, section, found = file.relative_to(workspace).as_posix(), "", []
    for block in re.split(r"\n\s*\n", file.read_text(encoding="utf-8", errors="replace")):
        block = block.strip()
        if block.startswith("#"):  # a heading names the section of what follows
            heading, _, block = block.partition("\n")
            section = heading.lstrip("#").strip()
        if block.strip():
            found.append(f"--- {name} > {section} ---\n{block.strip()}" if section else
                         f"--- {name} ---\n{block.strip()}")  # fmt: skip
    return found


STOP_WORDS = frozenset(
    ("a", "an", "and", "are", "as", "at", "be", "by", "does", "do", "for", "from", "how",
     "in", "is", "it", "its", "of", "on", "or", "say", "the", "this", "to", "what", "when",
     "which", "who", "why", "with", "you", "your", "give", "answer", "name")
)  # fmt: skip
"""Words too common to tell one passage from another."""


def words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9][a-z0-9:._-]*", text.lower()) if w not in STOP_WORDS]


# --- the model: one chat request to an OpenAI-compatible endpoint -----------------------


def chat(options: dict[str, Any], messages: list[dict[str, str]]) -> dict[str, Any]:
    """Send one chat request; the reply's text, token counts and seconds.

    An HTTP error is raised with the server's own message, which usually names the fix
    (a wrong model name, a wrong key). Connection failures and HTTP 429 or 5xx propagate
    as urllib's errors, which the harness counts as endpoint failures and retries.
    """
    body: dict[str, Any] = {"model": options["model"], "messages": messages,
                            "max_tokens": REPLY_TOKENS}  # fmt: skip
    if options.get("temperature") is not None:  # --option temperature=0.2
        body["temperature"] = float(options["temperature"])
    if options.get("seed") is not None:  # --seed: repeatable sampling where the server can
        body["seed"] = int(options["seed"])
    headers = {"Content-Type": "application/json"}
    if options.get("api_key"):
        headers["Authorization"] = f"Bearer {options['api_key']}"
    url = str(options["base_url"]).rstrip("/") + "/chat/completions"
    request = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            data = json.load(response)
    except urllib.error.HTTPError as exc:
        raise RuntimeError(f"{url} answered HTTP {exc.code}: {server_message(exc)}") from exc
    usage = data.get("usage") or {}
    return {
        "content": data["choices"][0]["message"].get("content"),
        "prompt_tokens": int(usage.get("prompt_tokens") or 0),
        "completion_tokens": int(usage.get("completion_tokens") or 0),
        "seconds": round(time.perf_counter() - started, 3),
    }


def server_message(exc: urllib.error.HTTPError) -> str:
    """The ``error.message`` of an OpenAI-style error body, else the body's start."""
    text = exc.read().decode("utf-8", errors="replace")
    try:
        return str(json.loads(text)["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return text[:300] or str(exc.reason)
