"""Split workspace documents into passages, the unit that search_documents ranks.

A Markdown document is cut at its headings, so each section becomes one passage that
carries its heading and file name. Plain text is cut at blank lines. A very long section
is cut again at paragraph breaks, so one passage never drowns the others in the ranking
or in the agent's context.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from agent_eval.tools.paths import iter_files, workspace_root

DOCUMENT_SUFFIXES: tuple[str, ...] = (".md", ".markdown", ".txt", ".rst")
MAX_PASSAGE_CHARS = 1500

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Passage:
    """One searchable piece of one document."""

    file: str
    """The document's path relative to the folder it was read from."""
    heading: str
    """The heading of the section the passage comes from, or "" for plain text."""
    text: str
    """The passage's own text, without its heading."""

    def searchable(self) -> str:
        """The text BM25 indexes: file name words and heading count as passage words."""
        stem = Path(self.file).stem.replace("-", " ").replace("_", " ")
        return f"{stem}\n{self.heading}\n{self.text}"


def _paragraphs(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]


def _pack(file: str, heading: str, body: str) -> list[Passage]:
    """Cut one section into passages of at most about MAX_PASSAGE_CHARS characters."""
    if len(body) <= MAX_PASSAGE_CHARS:
        return [Passage(file, heading, body)] if body else []
    passages: list[Passage] = []
    chunk = ""
    for paragraph in _paragraphs(body):
        if chunk and len(chunk) + len(paragraph) + 2 > MAX_PASSAGE_CHARS:
            passages.append(Passage(file, heading, chunk))
            chunk = ""
        chunk = f"{chunk}\n\n{paragraph}" if chunk else paragraph
    if chunk:
        passages.append(Passage(file, heading, chunk))
    return passages


def split_markdown(file: str, text: str) -> list[Passage]:
    """Cut a Markdown document at its headings, ignoring '#' lines inside code fences."""
    sections: list[tuple[str, list[str]]] = [("", [])]
    in_fence = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        if match:
            sections.append((match.group(2), []))
        else:
            sections[-1][1].append(line)
    if len(sections) == 1:
        return split_plain(file, text)
    passages: list[Passage] = []
    for heading, lines in sections:
        passages.extend(_pack(file, heading, "\n".join(lines).strip()))
    return passages


def split_plain(file: str, text: str) -> list[Passage]:
    """Cut plain text into passages, one per paragraph."""
    return [Passage(file, "", paragraph) for paragraph in _paragraphs(text)]


def split_document(file: str, text: str) -> list[Passage]:
    """Passages of one document, by headings for Markdown and by paragraphs otherwise."""
    if file.lower().endswith((".md", ".markdown")):
        return split_markdown(file, text)
    return split_plain(file, text)


def load_passages(folder: Path) -> list[Passage]:
    """Every passage of every document under ``folder``, in a stable order.

    Files are found with the workspace confinement rule, so a symlink that points out of
    ``folder`` contributes nothing.
    """
    root = workspace_root(folder)
    passages: list[Passage] = []
    for path in iter_files(root, DOCUMENT_SUFFIXES):
        text = path.read_text(encoding="utf-8", errors="replace")
        passages.extend(split_document(path.relative_to(root).as_posix(), text))
    return passages
