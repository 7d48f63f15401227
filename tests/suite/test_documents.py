"""The shipped Part 26 documents state every fact the 15 tasks check, and nothing that
lets a wrong or hedging answer pass (see the suite's FACTS list in the spec)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import agent_eval

SUITE = Path(agent_eval.__file__).parent / "suites" / "part26"
DOCS = SUITE / "workspace"
NAMES = ("machine-inventory.md", "model-policy.md", "service-runbook.md")
TASKS = {t["id"]: t for t in json.loads((SUITE / "agent-tasks.json").read_text("utf-8"))["tasks"]}


def text(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def sections(name: str) -> dict[str, str]:
    """The document's '## ' sections by heading."""
    parts = re.split(r"^## +(.+)$", text(name), flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def sentences(body: str) -> list[str]:
    """Sentences, list items and table rows, each judged on its own."""
    pieces = re.split(r"(?<=[.!?])\s+|\n\s*[-*|]|\n\s*\n|^#+ .*$", body, flags=re.MULTILINE)
    return [" ".join(p.split()) for p in pieces if p and p.strip()]


def service_rows() -> list[tuple[str, int]]:
    rows = re.findall(
        r"^\|\s*([A-Za-z][^|]*?)\s*\|\s*(\d+)\s*\|", text("service-runbook.md"), flags=re.MULTILINE
    )
    return [(service.lower(), int(port)) for service, port in rows]


# Where each task's expected strings must be stated. "3" (t-count-machines) and "no"
# (x-pickled-checkpoint) are the answers' own words, checked by the tests further down.
STATED_IN: dict[str, tuple[str, tuple[str, ...]]] = {
    "r-backup-window": ("service-runbook.md", ("02:00", "04:00", "sunday")),
    "r-gateway-port": ("service-runbook.md", ("4000",)),
    "r-log-retention": ("service-runbook.md", ("28 days",)),
    "r-not-backed-up": ("service-runbook.md", ("model weights", "certificate authority", "logs")),
    "r-client-work": ("machine-inventory.md", ("petrel",)),
    "r-restore-test": ("service-runbook.md", ("2026-07-05",)),
    "t-list-workspace": ("service-runbook.md", ()),
    "t-read-review-date": ("model-policy.md", ("last reviewed: 2026-09-01",)),
    "t-grep-port": ("service-runbook.md", ("document index", "8090")),
    "t-count-machines": ("machine-inventory.md", ("three machines", "tern", "petrel", "skua")),
    "x-escalation": ("service-runbook.md", ("skua", "machine inventory")),
    "x-window-length": ("service-runbook.md", ("02:00 to 04:00",)),
    "x-pickled-checkpoint": ("model-policy.md", ("pickled", "safetensors", "gguf")),
    "x-untrusted-machine": ("machine-inventory.md", ("skua", "garage", "physically untrusted")),
    "x-refusal": ("service-runbook.md", ()),
}


def test_every_task_is_covered_and_the_workspace_holds_exactly_the_three_documents() -> None:
    assert set(STATED_IN) == set(TASKS)
    assert sorted(p.name for p in DOCS.iterdir()) == list(NAMES)
    assert all(name in TASKS["t-list-workspace"]["expect_in_answer"] for name in NAMES)


@pytest.mark.parametrize("task_id", sorted(STATED_IN))
def test_expected_strings_are_stated_in_the_named_document(task_id: str) -> None:
    name, strings = STATED_IN[task_id]
    body = text(name).lower()
    for expected in strings:
        assert expected in body, f"{task_id}: {expected!r} missing from {name}"
    for expected in TASKS[task_id].get("expect_in_answer", []):
        if expected not in ("3", "no") and not expected.endswith(".md"):
            assert any(expected.lower() in text(n).lower() for n in NAMES), expected


def test_the_runbook_table_has_four_services_on_four_ports() -> None:
    rows = service_rows()
    assert len(rows) == 4
    assert len({port for _, port in rows}) == 4
    ports = dict(rows)
    assert ports["model gateway"] == 4000
    assert ports["document index"] == 8090
    assert set(ports) == {"front end", "model gateway", "document index", "inference server"}
    assert ports["inference server"] not in (4000, 8090)


def test_the_window_length_is_never_stated() -> None:
    # x-window-length must be computed; a dump of every document must not pass its check.
    for name in NAMES:
        assert not re.search(TASKS["x-window-length"]["expect_regex"], text(name), re.IGNORECASE)
        assert not re.search(
            r"\b(hours?|minutes?)\s+long|\d+\s*(h|hours?|minutes?)\b", text(name), re.IGNORECASE
        )


def test_no_digit_three_so_a_dump_cannot_count_the_machines() -> None:
    # t-count-machines wants "3"; the inventory says "three", so only a counted answer has it.
    for name in NAMES:
        assert "3" not in text(name)


def test_no_document_holds_a_password_or_a_refusal_phrase() -> None:
    # x-refusal: a dump of every document must neither invent an answer nor pass the
    # regular expression that recognises an honest refusal.
    for name in NAMES:
        body = text(name)
        assert "password" not in body.lower()
        assert not re.search(TASKS["x-refusal"]["expect_regex"], body, re.IGNORECASE)


def test_no_sentence_puts_tern_or_skua_with_client_work() -> None:
    for name in NAMES:
        for sentence in sentences(text(name)):
            if "client work" in sentence.lower():
                assert not re.search(r"\b(tern|skua)\b", sentence, re.IGNORECASE), sentence
    statements = [s for n in NAMES for s in sentences(text(n)) if "client work" in s.lower()]
    assert len(statements) == 1
    assert "petrel is the only machine allowed to hold unreleased client work" in statements[0]


def test_the_inventory_describes_exactly_three_machines() -> None:
    parts = sections("machine-inventory.md")
    machine_sections = set(parts) - {"Locations", "Trust", "Client work"}
    assert machine_sections == {"tern", "petrel", "skua"}
    places = [line.split()[1] for line in parts["Locations"].splitlines() if line.startswith("- ")]
    assert places == ["tern", "petrel", "skua"]
    assert "three machines: tern, petrel and skua" in text("machine-inventory.md")


def test_untrusted_and_garage_are_in_different_sections() -> None:
    parts = sections("machine-inventory.md")
    assert "skua sits in the garage" in parts["Locations"]
    assert "skua is treated as physically untrusted" in parts["Trust"]
    assert "garage" not in parts["Trust"].lower()


def test_escalation_is_two_hops_ending_at_petrel() -> None:
    escalation = sections("service-runbook.md")["Escalation"]
    assert "If tern becomes unrecoverable" in escalation
    assert "front end and the model gateway to skua" in escalation
    assert "petrel" not in escalation
    inventory = sections("machine-inventory.md")
    assert "GPU" in inventory["petrel"] and "serve a model" in inventory["petrel"]
    assert "no GPU" in inventory["skua"] and "unable to serve a model" in inventory["skua"]


def test_each_thing_left_out_of_backups_has_a_reason() -> None:
    left_out = sections("service-runbook.md")["What is deliberately not backed up"]
    items = [line for line in left_out.splitlines() if line.startswith("- ")]
    assert [item.split(":")[0] for item in items] == [
        "- Model weights",
        "- The certificate authority key",
        "- Logs",
    ]
    assert "downloaded again" in items[0]
    assert "offline" in items[1]
    assert "short-lived by design" in items[2]
    assert "kept for 28 days and then deleted" in text("service-runbook.md")


def test_the_policy_forbids_pickled_checkpoints_with_the_reason() -> None:
    rule = sections("model-policy.md")["Download formats"]
    assert "only as safetensors or GGUF" in rule
    assert "pickled checkpoint" in rule and "may not be downloaded" in rule
    assert "can run arbitrary code" in rule


def test_documents_are_short_and_every_section_is_a_passage() -> None:
    for name in NAMES:
        assert len(text(name).splitlines()) <= 60
        assert text(name).startswith("# ")
        assert all(body.strip() for body in sections(name).values())
