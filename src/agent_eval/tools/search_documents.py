"""The ``search_documents`` tool: BM25 search over the workspace's documents.

With no saved index, the workspace's documents are split into passages and indexed in
memory. That index is cached per workspace and keyed on every document's size and
modification time, so repeated searches cost one folder scan and an edit made with
write_file is seen by the next search. With ``ToolContext.index_path``, the saved index
that ``agent-eval index`` wrote is used instead, as the course's Part 10 index is.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

from agent_eval.errors import ConfigError
from agent_eval.tools.base import (
    Observation,
    ToolArgumentError,
    ToolContext,
    ok,
    refuse,
    string_arg,
    truncate,
)
from agent_eval.tools.bm25_index import PASSAGES_FILE, PassageIndex
from agent_eval.tools.passages import DOCUMENT_SUFFIXES, load_passages
from agent_eval.tools.paths import PathRefused, iter_files, workspace_root

NAME = "search_documents"
DESCRIPTION = (
    "Search the documents in your workspace and return the best-matching passages, "
    "each with the name of the file it comes from. Use specific words from the question."
)
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": "Words to search for, for example 'backup window Sunday'.",
        }
    },
    "required": ["query"],
    "additionalProperties": False,
}

TOP_K = 3
"""Passages returned per search: enough for a two-part question, few enough to read."""
MAX_SHOWN_CHARS = 1200
"""Characters shown per passage; read_file gives the rest."""
_CACHE_SIZE = 64
# Attempts run side by side in threads and each has its own workspace; a small LRU keeps
# memory flat however many attempts a run makes.
_cache: OrderedDict[Hashable, PassageIndex] = OrderedDict()
_lock = threading.Lock()


_HEADER = re.compile(r"\n\n(?=--- [^\n]* ---\n)")


def split_passages(result: str) -> list[str]:
    """The passages of a search result, best first, each with its ``--- file ---`` header."""
    return [block for block in _HEADER.split(result.strip()) if block]


def build_index(docs_dir: Path, out: Path) -> int:
    """Index the documents under ``docs_dir`` into the folder ``out``; return the passage count.

    This is what ``agent-eval index DIR -o INDEX`` runs. Raises ConfigError when
    ``docs_dir`` is missing or holds no documents.
    """
    try:
        passages = load_passages(docs_dir)
    except PathRefused as exc:
        raise ConfigError(f"index: {exc}; give a folder of documents") from exc
    if not passages:
        kinds = ", ".join(DOCUMENT_SUFFIXES)
        raise ConfigError(f"index: no documents ({kinds}) with any text under {docs_dir}")
    PassageIndex.build(passages).save(out)
    return len(passages)


def load_index(path: Path) -> PassageIndex:
    """Load a saved index, from the cache when its files have not changed."""
    marker = path / PASSAGES_FILE
    try:
        stamp = marker.stat().st_mtime_ns
    except OSError as exc:
        raise ConfigError(f"index {path}: no {PASSAGES_FILE} in it ({exc.strerror})") from exc
    return _cached(("saved", str(path.resolve()), stamp), lambda: PassageIndex.load(path))


def workspace_index(workspace: Path) -> PassageIndex:
    """The in-memory index of a workspace's documents, rebuilt only when they change.

    Keyed by content, not by folder: every attempt gets a fresh copy of the same
    documents, and hashing them costs far less than indexing them again.
    """
    root = workspace_root(workspace)
    digest = hashlib.sha256()
    for file in iter_files(root, DOCUMENT_SUFFIXES):
        digest.update(file.relative_to(root).as_posix().encode() + b"\0")
        digest.update(file.read_bytes() + b"\0")
    key = ("workspace", digest.hexdigest())
    return _cached(key, lambda: PassageIndex.build(load_passages(root)))


def _cached(key: Hashable, make: Callable[[], PassageIndex]) -> PassageIndex:
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    # Built outside the lock so one slow build does not hold up other workspaces.
    index = make()
    with _lock:
        _cache[key] = index
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return index


def run(ctx: ToolContext, args: dict[str, Any]) -> Observation:
    """Return the top passages for ``args["query"]``, each headed by its file name."""
    try:
        query = string_arg(args, "query")
        if ctx.index_path is not None:
            index = load_index(ctx.index_path)
        else:
            index = workspace_index(ctx.workspace)
    except (ToolArgumentError, ConfigError) as exc:
        return refuse(f"search_documents: {exc}")
    if not index.passages:
        return refuse("search_documents: there are no documents to search in the workspace")
    hits = index.search(query, TOP_K)
    if not hits:
        return ok(f"No passage matches {query!r}. Try other words, or list the files.")
    # Best first, with no rank numbers or scores: digits the tool adds would hand free
    # matches to checks that look for numbers in an answer that echoes the passage.
    blocks = []
    for passage, _score in hits:
        where = f"{passage.file} > {passage.heading}" if passage.heading else passage.file
        text = truncate(passage.text, MAX_SHOWN_CHARS)
        blocks.append(f"--- {where} ---\n{text}")
    return ok("\n\n".join(blocks))
