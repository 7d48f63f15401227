"""How much of an answer is copied verbatim from the task's own text or the documents.

An answer can pass a string check by containing the source text instead of answering:
an agent that echoes its prompt and dumps the documents "mentions" every expected
string. The measure is the share of the answer's words that lie in a run of RUN_WORDS
consecutive words found in the task text or a document (case and punctuation ignored):
shingle coverage, as text-reuse and contamination checks use it. Eight words in the same
order are very unlikely to be shared by chance, while an answer of one's own may reuse
a short phrase.

A pass is flagged as copied when the share is at least MOSTLY (more than half of the
answer is copy) and the copied words number at least AT_LENGTH (two runs' worth: more
than quoting one sentence that holds the answer, which an extractive answer may do).
The flag is a warning to look at the attempt, not a verdict: the checks still decide.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

RUN_WORDS = 8
"""Consecutive words shared with a source that count as copied."""
MOSTLY = 0.5
"""The copied share from which a pass is flagged."""
AT_LENGTH = 16
"""Copied words a flagged pass has at least: a quoted sentence is not a copied answer."""
MAX_FILE_BYTES = 1_000_000
MAX_SOURCE_BYTES = 8_000_000
"""Documents read for the measure: files past 1 MB, and anything past 8 MB in all, are
left out (a data file is not prose an answer could quote)."""
_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """The words of ``text``, lower-cased, punctuation dropped."""
    return _WORD.findall(text.lower())


def _key(run: Sequence[str]) -> int:
    """A run's key: a digest, the same in every process (a run's set may be computed in
    one process and used in another)."""
    return int.from_bytes(hashlib.blake2b(" ".join(run).encode(), digest_size=8).digest(), "big")


def word_runs(texts: Iterable[str]) -> frozenset[int]:
    """Every run of RUN_WORDS consecutive words of ``texts``, as keys (a run never spans
    two texts)."""
    runs: set[int] = set()
    for text in texts:
        found = words(text)
        runs.update(_key(found[i : i + RUN_WORDS]) for i in range(len(found) - RUN_WORDS + 1))
    return frozenset(runs)


def covered_words(answer: list[str], runs: frozenset[int]) -> int:
    """How many of ``answer``'s words lie in a run found in ``runs``."""
    covered = [False] * len(answer)
    for start in range(len(answer) - RUN_WORDS + 1):
        if _key(answer[start : start + RUN_WORDS]) in runs:
            covered[start : start + RUN_WORDS] = [True] * RUN_WORDS
    return sum(covered)


def copied_share(answer: str, task: str, documents: frozenset[int]) -> float | None:
    """The share of ``answer``'s words copied from ``task`` or the documents' runs, to 3
    decimals; None for an answer with no words."""
    found = words(answer)
    if not found:
        return None
    copied = covered_words(found, documents | word_runs([task]))
    return round(copied / len(found), 3)


def is_copied_pass(passed: bool, answer: str, share: float | None) -> bool:
    """Whether a passing attempt is flagged: mostly copy, and copy at length."""
    if not passed or share is None or share < MOSTLY:
        return False
    return share * len(words(answer)) >= AT_LENGTH - 0.5  # the share is rounded


def document_runs(folder: Path | None) -> frozenset[int]:
    """The word runs of every text file under ``folder`` (symbolic links not followed)."""
    if folder is None or not folder.is_dir():
        return frozenset()
    texts, budget = [], MAX_SOURCE_BYTES
    for path in sorted(folder.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        size = path.stat().st_size
        if size > MAX_FILE_BYTES or size > budget:
            continue
        raw = path.read_bytes()
        if b"\0" in raw[:4096]:  # binary
            continue
        budget -= size
        texts.append(raw.decode("utf-8", errors="replace"))
    return word_runs(texts)
