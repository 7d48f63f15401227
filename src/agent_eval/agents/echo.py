"""Catch a reply that reproduces the agent's own instructions instead of answering.

A small model given a long prompt often copies it back. Such a reply can pass a check by
accident (a prompt that says "if the documents do not contain the answer" matches a
refusal check), so the reference agents never submit it. The test is verbatim runs of
words: an honest answer may reuse a short phrase of its instructions, never a long
stretch of them. What the instructions quote (a sentence to answer with, a JSON shape)
is the agent's to say, so quoted text does not count.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from agent_eval.score import RUN_WORDS, covered_words, word_runs, words

LONG_COPY = 16
"""Copied words that make a reply an echo however long the rest of it is."""
_QUOTED = re.compile(r'"[^"\n]*"')


def copied_words(reply: str, instructions: Iterable[str]) -> int:
    """How many words of ``reply`` lie in a run of RUN_WORDS words copied from
    ``instructions``, ignoring case and punctuation."""
    found = words(reply)
    if len(found) < RUN_WORDS:
        return 0
    parts = [part for text in instructions for part in _QUOTED.split(text.lower())]
    return covered_words(found, word_runs(parts))


def echoed_words(reply: str, instructions: Iterable[str]) -> int:
    """The words ``reply`` copied when it is mostly, or at length, a copy of the
    instructions; 0 when it is an answer of its own."""
    copied = copied_words(reply, instructions)
    if copied >= LONG_COPY or (copied > 0 and 2 * copied >= len(words(reply))):
        return copied
    return 0
