"""How the reference agents cite: the lines they read that their answer draws on.

Every passage a search returned and every file read is kept as a source. At the end,
each source line that shares a distinctive word (or a number) with the answer is a
candidate; the best-matching lines are cited verbatim, with their file, so the harness
can verify each quote against the starting workspace.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

MAX_CITATIONS = 3
_BLOCK = re.compile(r"^--- (.+?)(?: > .*)? ---$")
_TRUNCATED = re.compile(r"^\[\.\.\. truncated")
_WORD = re.compile(r"[a-z0-9][a-z0-9:._-]*")
COMMON = frozenset(
    ("the", "and", "for", "are", "was", "with", "from", "that", "this", "which", "what",
     "when", "where", "who", "how", "does", "not", "yes", "answer", "documents", "document",
     "say", "says")
)  # fmt: skip
"""Words too common to tie an answer to a line (shorter words are dropped anyway)."""


def _words(text: str) -> set[str]:
    found = {w.strip(".:_-") for w in _WORD.findall(text.lower())}
    return {w for w in found if w not in COMMON and (len(w) > 2 or w.isdigit())}


@dataclass
class Sources:
    """The lines an attempt has seen, by file, in the order it saw them."""

    lines: dict[str, list[str]] = field(default_factory=dict)

    def add_observation(self, tool: str, args: dict[str, Any], result: str) -> None:
        """Keep what a successful search or read showed the agent."""
        if tool == "read_file" and isinstance(args.get("path"), str):
            self._add(args["path"], result.splitlines())
        elif tool == "search_documents":
            current: str | None = None
            for line in result.splitlines():
                header = _BLOCK.match(line)
                if header:
                    current = header.group(1)
                elif current is not None:
                    self._add(current, [line])

    def _add(self, file: str, lines: list[str]) -> None:
        kept = self.lines.setdefault(file, [])
        for line in lines:
            text = line.strip()
            if text and not _TRUNCATED.match(text) and text not in kept:
                kept.append(text)

    def cite(self, answer: str) -> list[dict[str, str]]:
        """The lines that share the most distinctive words with ``answer``, best first."""
        wanted = _words(answer)
        scored = []
        for file, lines in self.lines.items():
            for order, line in enumerate(lines):
                shared = len(wanted & _words(line))
                if shared:
                    scored.append((-shared, order, file, line))
        scored.sort()
        return [{"file": file, "quote": line} for _, _, file, line in scored[:MAX_CITATIONS]]
