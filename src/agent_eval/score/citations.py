"""Verified citations: every quote an answer cites must be in the file it names.

Citations are judged against the attempt's *starting* workspace, so an agent cannot make
a quote true by writing it into a file first. A quote matches when it appears in the
file after both are lowered and every run of whitespace is made one space. A fabricated
or misattributed quote is a bad citation on any task; on a task with
``expect_citations`` it fails the attempt, which must also cite one of the files named.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from agent_eval.records import BadCitation, Citation

QUOTE_SHOWN = 200
"""Characters of a bad quote kept in the checks."""


@dataclass(frozen=True)
class CitationVerdict:
    """What the citation checks found for one attempt."""

    ok: bool | None
    """Every citation held and one named an expected file; None when none was expected."""
    bad: list[BadCitation]
    """The citations that did not hold."""


def normalise(text: str) -> str:
    """Lower case, with every run of whitespace one space: the form quotes are matched in."""
    return " ".join(text.split()).lower()


def cited_file(file: str) -> str:
    """A cited path in one canonical form ('./a.md' and 'a.md' are the same file)."""
    return PurePosixPath(file.replace("\\", "/")).as_posix()


def read_cited(source: Path | None, citations: Sequence[Citation]) -> dict[str, str | None]:
    """The normalised text of every cited file in ``source``; None for a file that is not
    there, not text, or outside the folder (a '..' or a symlink out)."""
    texts: dict[str, str | None] = {}
    root = source.resolve() if source is not None else None
    for citation in citations:
        name = cited_file(citation.file)
        if name in texts:
            continue
        texts[name] = None
        if root is None:
            continue
        path = (root / name).resolve()
        if path.is_relative_to(root) and path.is_file():
            with contextlib.suppress(OSError, UnicodeDecodeError):
                texts[name] = normalise(path.read_text(encoding="utf-8"))
    return texts


def judge_citations(
    expected: Sequence[str] | None,
    citations: Sequence[Citation],
    texts: Mapping[str, str | None],
) -> CitationVerdict:
    """Check each citation against ``texts`` (normalised file texts by canonical name)."""
    bad: list[BadCitation] = []
    held: set[str] = set()
    for citation in citations:
        name = cited_file(citation.file)
        text = texts.get(name)
        quote = normalise(citation.quote)
        if text is None:
            reason = "no such file in the starting workspace"
        elif not quote:
            reason = "the quote is empty"
        elif quote not in text:
            reason = f"the quote is not in {name}"
        else:
            held.add(name)
            continue
        bad.append(BadCitation(file=citation.file, quote=citation.quote[:QUOTE_SHOWN],
                               reason=reason))  # fmt: skip
    return _verdict(expected, held, bad)


def rejudge(
    expected: Sequence[str] | None, citations: Sequence[Citation], bad: Sequence[BadCitation]
) -> CitationVerdict:
    """The verdict again from a saved attempt, whose workspace is gone: the recorded bad
    citations stand, and every other citation held."""
    failed = {(cited_file(b.file), b.quote) for b in bad}
    held = {cited_file(c.file) for c in citations
            if (cited_file(c.file), c.quote[:QUOTE_SHOWN]) not in failed}  # fmt: skip
    return _verdict(expected, held, list(bad))


def _verdict(
    expected: Sequence[str] | None, held: set[str], bad: list[BadCitation]
) -> CitationVerdict:
    if expected is None:
        return CitationVerdict(None, bad)
    wanted = {cited_file(file) for file in expected}
    return CitationVerdict(not bad and bool(held & wanted), bad)
