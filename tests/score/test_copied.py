"""The copied share of an answer, and which passes it flags."""

from __future__ import annotations

from pathlib import Path

from agent_eval.score.copied import (
    AT_LENGTH,
    MOSTLY,
    copied_share,
    document_runs,
    is_copied_pass,
    word_runs,
)

DOC = (
    "The model gateway listens on port 4000 and forwards every request to the lab's "
    "inference server, which keeps its weights on the shared disk in the study. Backups "
    "run every Sunday, in a window from 02:00 to 04:00, and nothing is restarted then."
)
TASK = "Which port does the model gateway listen on? Answer with the number."
RUNS = word_runs([DOC])


def test_a_dump_of_the_documents_is_all_copy_and_flagged() -> None:
    share = copied_share(DOC, TASK, RUNS)
    assert share == 1.0
    assert is_copied_pass(True, DOC, share)
    assert not is_copied_pass(False, DOC, share)  # only passes are flagged


def test_the_task_echoed_back_counts_as_copied() -> None:
    answer = f"{TASK} {TASK} 4000"
    share = copied_share(answer, TASK, frozenset())
    assert share is not None and share > MOSTLY
    assert is_copied_pass(True, answer, share)


def test_an_answer_of_its_own_copies_nothing() -> None:
    answer = "It is 4000, according to the service table in the runbook I searched."
    assert copied_share(answer, TASK, RUNS) == 0.0
    assert not is_copied_pass(True, answer, 0.0)


def test_one_quoted_sentence_is_copy_but_not_flagged() -> None:
    answer = "Backups run every Sunday, in a window from 02:00 to 04:00."  # 12 words, verbatim
    share = copied_share(answer, TASK, RUNS)
    assert share == 1.0 and len(answer.split()) < AT_LENGTH
    assert not is_copied_pass(True, answer, share)


def test_case_and_punctuation_do_not_hide_a_copy() -> None:
    shouted = DOC.upper().replace(",", " ;").replace(".", "!")
    assert copied_share(shouted, TASK, RUNS) == 1.0


def test_half_copied_at_length_is_flagged_and_less_than_half_is_not() -> None:
    own = " ".join(f"word{i}" for i in range(40))
    mostly = DOC + " " + own[: len(own) // 3]
    barely = DOC[:200] + " " + own + " " + own
    assert is_copied_pass(True, mostly, copied_share(mostly, TASK, RUNS))
    assert not is_copied_pass(True, barely, copied_share(barely, TASK, RUNS))


def test_no_words_no_share() -> None:
    assert copied_share("", TASK, RUNS) is None
    assert copied_share(" ... ", TASK, RUNS) is None


def test_documents_are_read_from_a_folder_without_following_links(tmp_path: Path) -> None:
    (tmp_path / "runbook.md").write_text(DOC, encoding="utf-8")
    (tmp_path / "blob.bin").write_bytes(b"\0" * 10 + DOC.encode())
    outside = tmp_path.parent / f"{tmp_path.name}-outside.md"
    outside.write_text("secret words " * 20, encoding="utf-8")
    (tmp_path / "link.md").symlink_to(outside)
    runs = document_runs(tmp_path)
    assert copied_share(DOC, TASK, runs) == 1.0
    assert copied_share("secret words " * 20, TASK, runs) == 0.0
    assert document_runs(None) == frozenset() and document_runs(tmp_path / "nope") == frozenset()
