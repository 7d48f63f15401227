"""The model side of the embedded local server: llama.cpp instances and request translation.

``LlamaPool`` loads one GGUF file into ``parallel`` llama-cpp-python ``Llama`` objects and
lends each to one request at a time, because a ``Llama`` is not thread-safe.
``chat_completion`` turns an OpenAI chat request into a llama-cpp-python call and the
result back into an OpenAI reply: ``response_format`` becomes a GBNF grammar, and
``tools`` are served in llama.cpp's generic JSON tool-call form (see ``_tool_schema``).
``text_completion`` does the same for a plain prompt (``/v1/completions``), the way a
base model is best asked.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

from agent_eval.errors import ConfigError, ExtraMissingError
from agent_eval.models.local_sampling import GenerationStopped, grammar_first_llama

INSTALL_ADVICE = "pip install -e '.[local]' in the agent-eval clone"
MAX_TOKENS_CAP = 4096
"""The most tokens one reply may generate unless the server is given another cap: at the
shipped model's 40-50 tokens/s on one core, about a minute and a half."""


class RequestError(Exception):
    """A chat request the server refuses; carries the HTTP status and an OpenAI error code."""

    def __init__(self, status: int, message: str, code: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.param = status, message, code, param


def import_llama_cpp() -> ModuleType:
    """Import llama_cpp, or say in one line which extra to install."""
    try:
        import llama_cpp
    except ImportError as exc:
        raise ExtraMissingError(
            f"the local model server needs llama-cpp-python, which is not installed: "
            f"{INSTALL_ADVICE}"
        ) from exc
    module: ModuleType = llama_cpp
    return module


def _quant_names(llama_cpp: ModuleType) -> dict[int, str]:
    # Names come from the engine's own file-type enum, so a new quant needs no edit here.
    prefix = "LLAMA_FTYPE_"
    return {
        value: name.removeprefix(prefix).removeprefix("MOSTLY_")
        for name, value in vars(llama_cpp).items()
        if name.startswith(prefix) and isinstance(value, int) and name != "LLAMA_FTYPE_GUESSED"
    }


def describe_model(llm: Any, path: Path, llama_cpp: ModuleType) -> dict[str, Any]:
    """What is being served, read from the GGUF file's metadata and the engine itself."""
    meta: dict[str, str] = dict(llm.metadata)
    names = _quant_names(llama_cpp)
    quant = "unknown"
    if meta.get("general.file_type", "").isdigit():
        quant = names.get(int(meta["general.file_type"]), "unknown")
    if quant == "unknown":
        for name in sorted(names.values(), key=len, reverse=True):
            if re.search(rf"(?<![A-Z0-9]){re.escape(name)}(?![A-Z0-9])", path.name.upper()):
                quant = name
                break
    return {
        "model": path.stem,
        "model_file": path.name,
        "model_name": meta.get("general.name", path.stem),
        "architecture": meta.get("general.architecture", "unknown"),
        "quant": quant,
        "parameters": int(llama_cpp.llama_model_n_params(llm.model)),
        "file_bytes": path.stat().st_size,
        "engine": "llama.cpp",
        "engine_binding": "llama-cpp-python",
        "engine_version": str(llama_cpp.__version__),
        "chat_format": str(llm.chat_format),
        "chat_template": "tokenizer.chat_template" in meta,
    }


class LlamaPool:
    """``parallel`` instances of one GGUF model, each lent to one request at a time."""

    def __init__(
        self, model_path: Path, parallel: int = 1, n_ctx: int = 8192, n_threads: int | None = None
    ) -> None:
        llama_cpp = import_llama_cpp()
        if parallel < 1:
            raise ConfigError(f"--parallel {parallel}: need at least 1 model instance")
        if not model_path.is_file():
            raise ConfigError(f"model file {model_path} does not exist; give a GGUF file")
        # Half the cores, shared between instances: llama.cpp's threads wait on each other at
        # every layer, so one busy core (the harness, the agent) stalls them all; measured on
        # 2 shared cores, 1 thread kept ~48 tokens/s where 2 threads fell to 3-6.
        threads = n_threads or max(1, (os.cpu_count() or 2) // 2 // parallel)
        self.n_ctx = n_ctx
        self.stopping = threading.Event()
        """Set to cut every running generation short at its next token."""
        self._free: list[Any] = []
        self._served: dict[int, str] = {}
        """What each instance last read: its KV cache still holds that prompt's tokens."""
        self._changed = threading.Condition()
        self._all: list[Any] = []
        for _ in range(parallel):
            try:
                llm = grammar_first_llama(llama_cpp)(
                    model_path=str(model_path),
                    n_ctx=n_ctx,
                    n_threads=threads,
                    n_threads_batch=threads,
                    verbose=False,
                )
            except ValueError as exc:
                self.close()
                raise ConfigError(f"model file {model_path} is not a loadable GGUF: {exc}") from exc
            llm.stop_requested = self.stopping
            self._all.append(llm)
            self._free.append(llm)
        first = self._all[0]
        # A GGUF without a chat template gets llama-cpp-python's llama-2 format, which a Gemma
        # model never saw; its own turn format is the honest choice.
        if "tokenizer.chat_template" not in first.metadata and str(
            first.metadata.get("general.architecture", "")
        ).startswith("gemma"):
            for llm in self._all:
                llm.chat_format = "gemma"
        # llama-cpp-python's gemma format drops system turns; Gemma's own template folds
        # them into the first user turn, and so do we.
        self.fold_system = first.chat_format == "gemma"
        self.info = describe_model(first, model_path, llama_cpp)
        self.info.update(parallel=parallel, n_ctx=n_ctx, n_threads=threads)

    @contextmanager
    def instance(self, prompt: str = "") -> Iterator[Any]:
        """Borrow a free instance; blocks while all are busy.

        Of the free instances, the one whose last prompt shares the longest start with
        ``prompt`` is lent: llama.cpp then evaluates only the new tokens. An agent's next
        turn extends its last one, so with attempts side by side this keeps each
        conversation on the instance that already read it.
        """
        with self._changed:
            self._changed.wait_for(lambda: bool(self._free))
            llm = max(self._free, key=lambda m: _shared_start(self._served.get(id(m), ""), prompt))
            self._free.remove(llm)
        try:
            yield llm
        finally:
            with self._changed:
                self._served[id(llm)] = prompt
                self._free.append(llm)
                self._changed.notify()

    def close(self) -> None:
        """Free every instance's memory."""
        for llm in self._all:
            llm.close()
        self._all.clear()


def _shared_start(a: str, b: str) -> int:
    """How many leading characters two texts share."""
    return len(os.path.commonprefix([a, b]))  # noqa: RUF071 (characters are what is meant)


@lru_cache(maxsize=64)
def _grammar(schema_json: str | None) -> Any:
    # Agents send the same schema every turn; converting it to GBNF once is enough. The key
    # is the schema text as sent: property order decides the order the model writes keys in.
    from llama_cpp.llama_grammar import JSON_GBNF, LlamaGrammar

    if schema_json is None:
        return LlamaGrammar.from_string(JSON_GBNF, verbose=False)
    try:
        return LlamaGrammar.from_json_schema(schema_json, verbose=False)
    except Exception as exc:
        raise RequestError(
            400,
            f"response schema cannot be turned into a grammar: {exc}",
            "invalid_schema",
            "response_format",
        ) from exc


def _response_grammar(response_format: Any) -> Any:
    if response_format is None:
        return None
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        schema = response_format.get("schema")
        return _grammar(json.dumps(schema) if schema is not None else None)
    if kind == "json_schema":
        spec = response_format.get("json_schema")
        if not isinstance(spec, dict) or not isinstance(spec.get("schema"), dict):
            raise RequestError(
                400,
                "response_format json_schema needs json_schema.schema, an object",
                "invalid_request_error",
                "response_format",
            )
        return _grammar(json.dumps(spec["schema"]))
    raise RequestError(
        400,
        f"response_format type {kind!r} is not one of text, json_object, json_schema",
        "invalid_request_error",
        "response_format",
    )


def _tool_schema(tools: list[Any], tool_choice: Any) -> tuple[dict[str, Any], str]:
    # llama-cpp-python parses tool calls only for a few fixed chat formats, so, as llama.cpp's
    # own server does for templates without tool support, the model answers one JSON object:
    # {"tool_call": {"name", "arguments"}} or {"response": text}, enforced by a grammar.
    listed = tools if isinstance(tools, list) else [None]
    functions: list[Any] = [t.get("function") if isinstance(t, dict) else None for t in listed]
    if not all(isinstance(f, dict) and isinstance(f.get("name"), str) for f in functions):
        raise RequestError(
            400,
            "tools must be a list of {type: function, function: {name, parameters}}",
            "invalid_request_error",
            "tools",
        )
    if isinstance(tool_choice, dict):
        wanted = tool_choice.get("function", {}).get("name")
        functions = [f for f in functions if f.get("name") == wanted]
        if not functions:
            raise RequestError(
                400,
                f"tool_choice names {wanted!r}, which is not in tools",
                "invalid_request_error",
                "tool_choice",
            )
    calls = [
        {
            "type": "object",
            "required": ["name", "arguments"],
            "properties": {
                "name": {"const": f["name"]},
                "arguments": f.get("parameters") or {"type": "object"},
            },
        }
        for f in functions
    ]
    call = {
        "type": "object",
        "required": ["tool_call"],
        "properties": {"tool_call": {"anyOf": calls}},
    }
    answer = {
        "type": "object",
        "required": ["response"],
        "properties": {"response": {"type": "string"}},
    }
    forced = tool_choice == "required" or isinstance(tool_choice, dict)
    listing = json.dumps(
        [{k: f[k] for k in ("name", "description", "parameters") if k in f} for f in functions]
    )
    prompt = (
        f"You can call these tools:\n{listing}\nTo call a tool, reply with "
        '{"tool_call": {"name": "<tool name>", "arguments": {...}}}.'
    )
    if not forced:
        prompt += ' To answer without a tool, reply with {"response": "<your answer>"}.'
    return (call if forced else {"anyOf": [call, answer]}), prompt + " Reply with one JSON object."


def _text(content: Any) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list) and all(
        isinstance(p, dict) and p.get("type") == "text" for p in content
    ):
        return "".join(str(p.get("text", "")) for p in content)
    raise RequestError(400, "message content must be text", "invalid_request_error", "messages")


def _arguments(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw or {}
    try:
        return json.loads(raw or "{}")
    except json.JSONDecodeError:
        return raw


def _messages(raw: list[Any], tool_prompt: str | None, fold_system: bool) -> list[dict[str, str]]:
    # Many chat templates (Gemma's among them) accept one leading system turn and strictly
    # alternating user/assistant turns, so tool turns become user turns and neighbours merge.
    names: dict[str, str] = {}
    turns: list[dict[str, str]] = []
    for i, msg in enumerate(raw):
        if not isinstance(msg, dict) or not isinstance(msg.get("role"), str):
            raise RequestError(
                400, f"messages[{i}] needs a role", "invalid_request_error", "messages"
            )
        role, text = msg["role"], _text(msg.get("content"))
        role = "system" if role == "developer" else role
        if role == "system" and turns and turns[-1]["role"] != "system":
            role = "user"  # a late instruction still reaches the model, as a user turn
        if role == "assistant" and msg.get("tool_calls"):
            for call in msg["tool_calls"]:
                fn = call.get("function", {})
                names[str(call.get("id"))] = str(fn.get("name"))
                call_json = {"name": fn.get("name"), "arguments": _arguments(fn.get("arguments"))}
                text += ("\n" if text else "") + json.dumps({"tool_call": call_json})
        elif role in ("tool", "function"):
            name = names.get(str(msg.get("tool_call_id")), str(msg.get("name", "tool")))
            role, text = "user", json.dumps({"tool_response": {"name": name, "content": text}})
        elif role not in ("system", "user", "assistant"):
            raise RequestError(
                400, f"messages[{i}] has unknown role {role!r}", "invalid_request_error", "messages"
            )
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += "\n\n" + text
        else:
            turns.append({"role": role, "content": text})
    if tool_prompt:
        if turns and turns[0]["role"] == "system":
            turns[0]["content"] += "\n\n" + tool_prompt
        else:
            turns.insert(0, {"role": "system", "content": tool_prompt})
    if fold_system and turns and turns[0]["role"] == "system":
        system = turns.pop(0)["content"]
        if turns and turns[0]["role"] == "user":
            turns[0]["content"] = f"{system}\n\n{turns[0]['content']}"
        else:
            turns.insert(0, {"role": "user", "content": system})
    return turns


_SAMPLING = (
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "presence_penalty",
    "frequency_penalty",
    "repeat_penalty",
    "seed",
)


def _sampling(body: dict[str, Any], max_tokens: int, cap: int, n_ctx: int) -> dict[str, Any]:
    """The request's sampling parameters, reply cap and stop strings, checked; the cap asked
    for is clamped to the server's cap and the context window."""
    kwargs: dict[str, Any] = {k: body[k] for k in _SAMPLING if body.get(k) is not None}
    if any(not isinstance(v, int | float) for v in kwargs.values()):
        raise RequestError(400, "sampling parameters must be numbers", "invalid_request_error")
    asked = body.get("max_completion_tokens") or body.get("max_tokens") or max_tokens
    if not isinstance(asked, int) or asked < 1:
        raise RequestError(
            400, "max_tokens must be a positive integer", "invalid_request_error", "max_tokens"
        )
    # A reply of 10^8 tokens would hold an instance for minutes while other requests wait;
    # a clamped reply ends with finish_reason "length", as any reply cut at its cap does.
    kwargs["max_tokens"] = min(asked, cap, n_ctx)
    stop = body.get("stop") or []
    stop = [stop] if isinstance(stop, str) else stop
    if not isinstance(stop, list) or not all(isinstance(x, str) for x in stop):
        raise RequestError(
            400, "stop must be a string or a list of strings", "invalid_request_error", "stop"
        )
    kwargs["stop"] = stop
    return kwargs


@contextmanager
def _generating(what: str) -> Iterator[None]:
    """Turn the engine's refusals into RequestErrors: a prompt over the context window (400)
    and a generation cut short because the server is stopping (503)."""
    try:
        yield
    except ValueError as exc:
        code = "context_length_exceeded" if "context window" in str(exc) else "invalid_request"
        raise RequestError(400, str(exc), code, what) from exc
    except GenerationStopped:
        raise RequestError(503, "the server is stopping", "unavailable") from None


def _usage(out: dict[str, Any]) -> dict[str, int]:
    usage = out["usage"]
    return {k: usage[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")}


def text_completion(
    pool: LlamaPool, body: dict[str, Any], max_tokens: int, cap: int = MAX_TOKENS_CAP
) -> dict[str, Any]:
    """Answer one OpenAI ``/v1/completions`` request: the model continues a plain prompt.

    This is how a base model without a chat template is best asked: a document to go on
    with, not turns it never saw in training.
    """
    prompt = body.get("prompt")
    if not isinstance(prompt, str) or not prompt:
        raise RequestError(
            400, "prompt must be a non-empty string", "invalid_request_error", "prompt"
        )
    if body.get("n", 1) != 1:
        raise RequestError(400, "only n=1 is supported", "invalid_request_error", "n")
    kwargs = _sampling(body, max_tokens, cap, pool.n_ctx)
    with pool.instance(prompt) as llm, _generating("prompt"):
        out = llm.create_completion(prompt=prompt, **kwargs)
    choice0 = out["choices"][0]
    return {
        "id": f"cmpl-{uuid.uuid4().hex}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": body["model"],
        "choices": [
            {
                "index": 0,
                "text": choice0.get("text") or "",
                "finish_reason": choice0.get("finish_reason") or "stop",
                "logprobs": None,
            }
        ],
        "usage": _usage(out),
    }


def chat_completion(
    pool: LlamaPool, body: dict[str, Any], max_tokens: int, cap: int = MAX_TOKENS_CAP
) -> dict[str, Any]:
    """Answer one OpenAI chat request (already checked for model and stream) with one instance."""
    if not isinstance(body.get("messages"), list) or not body["messages"]:
        raise RequestError(
            400, "messages must be a non-empty list", "invalid_request_error", "messages"
        )
    if body.get("n", 1) != 1:
        raise RequestError(400, "only n=1 is supported", "invalid_request_error", "n")
    tools, choice = body.get("tools") or [], body.get("tool_choice", "auto")
    use_tools = bool(tools) and choice != "none"
    tool_prompt = None
    grammar = _response_grammar(body.get("response_format"))
    if use_tools and grammar is not None:
        raise RequestError(
            400,
            "tools and a JSON response_format cannot be combined here",
            "invalid_request_error",
            "response_format",
        )
    if use_tools:
        schema, tool_prompt = _tool_schema(tools, choice)
        grammar = _grammar(json.dumps(schema))
    kwargs = _sampling(body, max_tokens, cap, pool.n_ctx)
    messages = _messages(body["messages"], tool_prompt, pool.fold_system)
    with pool.instance(json.dumps(messages)) as llm, _generating("messages"):
        out = llm.create_chat_completion(messages=messages, grammar=grammar, **kwargs)
    choice0 = out["choices"][0]
    text = choice0["message"].get("content") or ""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    finish = choice0.get("finish_reason") or "stop"
    if use_tools:
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            parsed = None  # cut off by max_tokens: hand back the raw text with finish "length"
        if isinstance(parsed, dict) and isinstance(parsed.get("tool_call"), dict):
            call = parsed["tool_call"]
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{uuid.uuid4().hex[:24]}",
                        "type": "function",
                        "function": {
                            "name": call["name"],
                            "arguments": json.dumps(call["arguments"]),
                        },
                    }
                ],
            }
            finish = "tool_calls"
        elif isinstance(parsed, dict) and isinstance(parsed.get("response"), str):
            message["content"] = parsed["response"]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": _usage(out),
    }
