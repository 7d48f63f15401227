"""A BM25 index over passages, built with the ``bm25s`` library, that can be saved and loaded.

A saved index is a folder: bm25s's own matrix and vocabulary files, plus
``passages.json``, which holds the passages themselves and a format marker. The passages
are stored by us rather than as a bm25s corpus so that loading never depends on how a
bm25s version chose to serialise arbitrary objects.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from agent_eval.errors import ConfigError
from agent_eval.tools.passages import Passage

INDEX_FORMAT = "agent-eval-passages"
INDEX_VERSION = 1
PASSAGES_FILE = "passages.json"
_STOPWORDS = "english"


def bm25s_library() -> Any:
    """The bm25s module, imported only where an index is used, and without scipy.

    bm25s uses scipy.sparse, when it can import it, only to lay out the matrix it
    builds; its numpy layout ranks the same (and every index is built with it, so
    rankings never depend on what else was imported). Without scipy.sparse, a worker
    holds about 10 MB and 90 memory mappings less, which every attempt's copy of it (a
    fork) would otherwise copy and tear down."""
    if "bm25s" in sys.modules:
        return sys.modules["bm25s"]
    # the outermost of the two not loaded yet: None there makes its import fail
    blocked = next((name for name in ("scipy", "scipy.sparse") if name not in sys.modules), None)
    if blocked is not None:
        sys.modules[blocked] = None  # type: ignore[assignment]
    try:
        import bm25s
    finally:
        if blocked is not None:
            del sys.modules[blocked]
    return bm25s


def _tokens(texts: list[str]) -> list[list[str]]:
    tokenized: list[list[str]] = bm25s_library().tokenize(
        texts, stopwords=_STOPWORDS, return_ids=False, show_progress=False
    )
    return tokenized


class PassageIndex:
    """Ranks a fixed list of passages against free-text queries with BM25."""

    def __init__(self, passages: list[Passage], retriever: Any | None) -> None:
        self.passages = passages
        """The passages, in the order the retriever numbers them."""
        self._retriever = retriever

    @classmethod
    def build(cls, passages: list[Passage]) -> PassageIndex:
        """Index ``passages``; an empty list gives an index that finds nothing."""
        if not passages:
            return cls([], None)
        bm25s = bm25s_library()
        retriever = bm25s.BM25(csc_backend="numpy")
        corpus = bm25s.tokenize(
            [p.searchable() for p in passages], stopwords=_STOPWORDS, show_progress=False
        )
        retriever.index(corpus, show_progress=False)
        return cls(list(passages), retriever)

    def search(self, query: str, k: int) -> list[tuple[Passage, float]]:
        """The best ``k`` passages for ``query`` with their scores, best first.

        Passages that share no word with the query are left out, so a query about
        something the documents never mention returns nothing rather than noise.
        """
        if self._retriever is None or k < 1:
            return []
        vocabulary: dict[str, int] = self._retriever.vocab_dict
        words = [w for w in _tokens([query])[0] if w in vocabulary]
        if not words:
            return []
        found = self._retriever.retrieve([words], k=min(k, len(self.passages)), show_progress=False)
        hits: list[tuple[Passage, float]] = []
        for number, score in zip(found.documents[0], found.scores[0], strict=True):
            if float(score) > 0.0:
                hits.append((self.passages[int(number)], float(score)))
        return hits

    def save(self, out: Path) -> None:
        """Write the index into the folder ``out``, creating it if needed."""
        out.mkdir(parents=True, exist_ok=True)
        if self._retriever is not None:
            self._retriever.save(str(out), show_progress=False)
        document = {
            "format": INDEX_FORMAT,
            "version": INDEX_VERSION,
            "passages": [asdict(p) for p in self.passages],
        }
        (out / PASSAGES_FILE).write_text(json.dumps(document, indent=1), encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> PassageIndex:
        """Read an index written by :meth:`save`; raise ConfigError if it is not one."""
        marker = path / PASSAGES_FILE
        hint = "build one with 'agent-eval index DOCS -o INDEX'"
        try:
            document = json.loads(marker.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise ConfigError(f"index {path}: no {PASSAGES_FILE} in it; {hint}") from exc
        except (OSError, ValueError) as exc:
            raise ConfigError(f"index {path}: cannot read {PASSAGES_FILE}: {exc}") from exc
        if not isinstance(document, dict) or document.get("format") != INDEX_FORMAT:
            raise ConfigError(f"index {path}: not an agent-eval passage index; {hint}")
        if document.get("version") != INDEX_VERSION:
            raise ConfigError(
                f"index {path}: format version {document.get('version')!r} is not "
                f"{INDEX_VERSION}; rebuild it with this version of agent-eval"
            )
        try:
            passages = [Passage(**item) for item in document["passages"]]
        except (KeyError, TypeError) as exc:
            raise ConfigError(f"index {path}: malformed passages ({exc}); {hint}") from exc
        if not passages:
            return cls([], None)
        try:
            retriever = bm25s_library().BM25.load(str(path), show_progress=False)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"index {path}: cannot load the BM25 matrices: {exc}") from exc
        return cls(passages, retriever)
