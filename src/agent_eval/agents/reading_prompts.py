"""The retrieve-read prompts: passages and a question, read by a small model.

Nothing here knows any suite's questions or documents. The worked examples are about an
invented community garden; they teach the shape of an answer (one full sentence in the
passage's own words, a table row read across, yes or no with the rule, and a plain
statement when the passages do not hold the answer) without leaking any answer. The
examples come first, so the part of the prompt that never changes is a prefix the
server can cache between attempts.

Passages are shown best last, next to the question: a small model attends most to what
it read most recently. On the embedded 270M model, sampled over six seeds, best last
passed about 4 of the shipped part26 suite's 15 tasks, best first about 2.5.
"""

from __future__ import annotations

from typing import Any

from agent_eval.tools import split_passages

INSTRUCTIONS = (
    "Answer each question from the passages above it, in one full sentence. Use the exact "
    "words, names, numbers and dates of the passages. If the passages do not contain the "
    "answer, say: The answer is not in the passages."
)
NO_PASSAGES = "(the search found no passages)"

_EXAMPLES: tuple[tuple[str, str, str], ...] = (
    # (passages as the search returns them, best first; question; answer)
    (
        "--- garden-handbook.md > Watering ---\n"
        "The vegetable beds are watered every Tuesday and Friday from 06:30 to 07:15.\n"
        "The greenhouse has its own drip line.\n\n"
        "--- garden-handbook.md > Tools ---\n"
        "The shed holds four spades, two rakes and one hose reel.",
        "On which days, and at what times, are the vegetable beds watered?",
        "The vegetable beds are watered on Tuesday and Friday from 06:30 to 07:15.",
    ),
    (
        "--- garden-handbook.md > Plots ---\n"
        "| Plot | Holder  | Size  |\n"
        "|------|---------|-------|\n"
        "| A1   | Okafor  | 40 m2 |\n"
        "| A2   | Lindqvist | 25 m2 |\n"
        "| B1   | Moreau  | 60 m2 |\n\n"
        "--- plot-rules.md > Keys ---\n"
        "Each plot holder gets one gate key, numbered G-17 to G-52.",
        "Who holds plot A2, and how big is it?",
        "Plot A2 is held by Lindqvist and is 25 m2.",
    ),
    (
        "--- plot-rules.md > Bonfires ---\n"
        "Bonfires are not allowed on any plot, because the smoke reaches the school next "
        "door. Green waste goes to the compost bays.",
        "May a plot holder burn garden waste on their plot? Answer yes or no, and give the rule.",
        "No. Bonfires are not allowed on any plot, because the smoke reaches the school next door.",
    ),
    (
        "--- garden-handbook.md > Tools ---\n"
        "The shed holds four spades, two rakes and one hose reel.",
        "What is the code of the shed's padlock?",
        "The answer is not in the passages.",
    ),
)

STOPS = ("\n\n", "\nPassages:", "\nQuestion:", "<end_of_turn>")
"""Where a completion's answer ends: a blank line, or the start of another example."""


def _block(passages: str, question: str) -> str:
    shown = "\n\n".join(reversed(split_passages(passages))) or NO_PASSAGES
    return f"Passages:\n{shown}\n\nQuestion: {question.strip()}"


def completion_prompt(passages: str, question: str) -> str:
    """A plain document for a base model to continue: the examples, then this question.

    ``passages`` is a search result as the tool returns it, best first.
    """
    shots = [f"{_block(p, q)}\nAnswer: {a}" for p, q, a in _EXAMPLES]
    return "\n\n".join([INSTRUCTIONS, *shots, f"{_block(passages, question)}\nAnswer:"])


def chat_messages(passages: str, question: str) -> list[dict[str, Any]]:
    """The same content as chat turns, for a model with a chat template."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": INSTRUCTIONS}]
    for p, q, a in _EXAMPLES:
        messages.append({"role": "user", "content": _block(p, q)})
        messages.append({"role": "assistant", "content": a})
    messages.append({"role": "user", "content": _block(passages, question)})
    return messages


def clean_answer(text: str) -> str:
    """The answer without the padding a completion brings: spaces, and anything after a
    blank line (a base model goes on to invent the next example)."""
    return text.strip().split("\n\n", 1)[0].strip()
