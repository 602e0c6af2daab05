"""Offline fact-checking against the knowledge graph."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import datetime

import pytest

from mempald.features.factcheck import Issue, extract_claims, extract_triples, fact_check
from mempald.features.kg import KnowledgeGraph

TODAY = "2026-03-01"


@pytest.fixture
def kg() -> Iterator[KnowledgeGraph]:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    graph = KnowledgeGraph(conn, clock=lambda: datetime.fromisoformat("2026-03-01T12:00:00+00:00"))
    graph.ensure_schema()
    yield graph
    conn.close()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Alice is Bob's manager.", [("Alice", "manager_of", "Bob")]),
        ("Alice is Bob\u2019s manager", [("Alice", "manager_of", "Bob")]),
        ("James is Chris' brother, and that is that.", [("James", "brother_of", "Chris")]),
        ("Yesterday Alice Smith is Bob's manager at Acme.", [("Alice Smith", "manager_of", "Bob")]),
        ("Alice works at Acme Corp since 2020.", [("Alice", "works_at", "Acme Corp")]),
        ("Dana works for the Foo Group.", [("Dana", "works_at", "Foo Group")]),
        ("Alice is the manager of Bob.", [("Alice", "manager_of", "Bob")]),
        ("Eve is a sister of Frank.", [("Eve", "sister_of", "Frank")]),
        ("Carol is CTO of Acme.", [("Carol", "cto_of", "Acme")]),
        ("Carol is the CTO of Acme.", [("Carol", "cto_of", "Acme")]),
        (
            "Alice is Bob's manager. Alice works at Acme. Alice is Bob's manager!",
            [("Alice", "manager_of", "Bob"), ("Alice", "works_at", "Acme")],
        ),
    ],
)
def test_extract_triples(text: str, expected: list[tuple[str, str, str]]) -> None:
    assert extract_triples(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "She is Bob's manager.",  # pronoun, not a name
        "Alice is not Bob's manager.",
        "Alice is no longer Bob's manager.",
        "Alice is proud of Bob.",  # no article: adjective, not a role
        "Alice is Bob's older brother.",  # two-word role: not one of the shapes
        "Alice managed Bob for years.",
        "Alice worked at Acme.",
        "alice is bob's manager.",
        "Alice is Alice's friend.",
        "",
    ],
)
def test_unknown_shapes_are_ignored(text: str) -> None:
    assert extract_triples(text) == []


def test_claim_span_and_position() -> None:
    text = "Notes. Today Alice is Bob's manager."
    (claim,) = extract_claims(text)
    assert claim.span == "Alice is Bob's manager"
    assert text[claim.start :].startswith("Alice")


def test_similar_name_is_flagged(kg: KnowledgeGraph) -> None:
    kg.add("Alice", "works_at", "Acme")
    issues = fact_check("I talked to Alcie about it.", kg, today=TODAY)
    assert issues == [
        Issue("name", "'Alcie' is not a known entity but is 2 edit(s) from 'Alice'", "Alcie", None)
    ]


def test_name_check_skips_exact_short_far_lowercase_and_common_words(kg: KnowledgeGraph) -> None:
    kg.add("Alice", "works_at", "Acme")
    kg.add("Theo", "knows", "Alice")
    text = "Alice and ALICE met Bob at Acme. Then Xavier came. alcie. Acm left."
    assert fact_check(text, kg, today=TODAY) == []


def test_name_check_uses_words_of_known_names_and_extra_entities(kg: KnowledgeGraph) -> None:
    kg.add("Margaret Hamilton", "works_at", "MIT")
    issues = fact_check("Margret wrote it; Lindsey reviewed.", kg, today=TODAY, known_entities=["Lindsay"])
    assert [(i.kind, i.span) for i in issues] == [("name", "Margret"), ("name", "Lindsey")]
    assert "Margaret" in issues[0].message and "1 edit" in issues[0].message


def test_relation_contradiction(kg: KnowledgeGraph) -> None:
    t = kg.add("Alice", "reports_to", "Bob", valid_from="2025-01-01")
    issues = fact_check("Alice is Bob's manager.", kg, today=TODAY)
    assert len(issues) == 1
    issue = issues[0]
    assert issue.kind == "contradiction" and issue.triple_id == t.id
    assert issue.span == "Alice is Bob's manager"
    assert "reports_to" in issue.message


def test_reversed_relation_contradiction(kg: KnowledgeGraph) -> None:
    t = kg.add("Bob", "manager_of", "Alice")
    issues = fact_check("Alice is the manager of Bob.", kg, today=TODAY)
    assert [(i.kind, i.triple_id) for i in issues] == [("contradiction", t.id)]


@pytest.mark.parametrize(
    ("known", "text"),
    [
        (("Ann", "parent_of", "Ben"), "Ann is Ben's child."),
        (("Ann", "child_of", "Ben"), "Ann is Ben's mother."),
        (("Ann", "sister_of", "Ben"), "Ann is Ben's brother."),
        (("Ann", "brother_of", "Ben"), "Ann is Ben's wife."),
        (("Ben", "father_of", "Ann"), "Ann is Ben's parent."),
        (("Ann", "report_of", "Ben"), "Ann is the boss of Ben."),
    ],
)
def test_incompatible_relations(kg: KnowledgeGraph, known: tuple[str, str, str], text: str) -> None:
    t = kg.add(*known)
    issues = fact_check(text, kg, today=TODAY)
    assert [(i.kind, i.triple_id) for i in issues] == [("contradiction", t.id)]


@pytest.mark.parametrize(
    ("known", "text"),
    [
        (("Bob", "reports_to", "Alice"), "Alice is Bob's manager."),  # the same fact, other direction
        (("Alice", "manager_of", "Bob"), "Alice is Bob's manager."),
        (("Ann", "sister_of", "Ben"), "Ben is Ann's brother."),
        (("Ann", "sibling_of", "Ben"), "Ann is Ben's sister."),
        (("Ann", "mentor_of", "Ben"), "Ann is Ben's manager."),  # not in the table: no opinion
        (("Alice", "works_at", "Acme"), "Alice works at Acme."),
        (("Alice", "works_at", "Acme"), "Bob works at Initech."),
    ],
)
def test_compatible_relations_are_not_flagged(kg: KnowledgeGraph, known: tuple[str, str, str], text: str) -> None:
    kg.add(*known)
    assert fact_check(text, kg, today=TODAY) == []


def test_single_valued_conflict(kg: KnowledgeGraph) -> None:
    t = kg.add("Alice", "works_at", "Acme", valid_from="2024-01-01")
    issues = fact_check("Alice works for Initech.", kg, today=TODAY)
    assert [(i.kind, i.triple_id) for i in issues] == [("contradiction", t.id)]
    assert issues[0].message.startswith("conflict:")


def test_stale_fact(kg: KnowledgeGraph) -> None:
    t = kg.add("Carol", "manager_of", "Dave", valid_from="2020-01-01")
    kg.invalidate(t.id, ended="2024-06-01")
    issues = fact_check("Carol is Dave's manager.", kg, today=TODAY)
    assert [(i.kind, i.triple_id, i.span) for i in issues] == [("stale", t.id, "Carol is Dave's manager")]
    assert "2024-06-01" in issues[0].message
    # Before the end date the fact was current: nothing to report.
    assert fact_check("Carol is Dave's manager.", kg, today="2024-05-31") == []


def test_stale_uses_aliases_and_is_cleared_by_a_current_copy(kg: KnowledgeGraph) -> None:
    t = kg.add("Alice", "works_for", "Acme", valid_from="2019-01-01")
    kg.invalidate(t.id, ended="2023-01-01")
    assert [i.kind for i in fact_check("Alice works at Acme.", kg, today=TODAY)] == ["stale"]
    kg.add("Alice", "works_at", "Acme", valid_from="2025-01-01")  # she came back
    assert fact_check("Alice works at Acme.", kg, today=TODAY) == []


def test_expired_triples_do_not_contradict(kg: KnowledgeGraph) -> None:
    t = kg.add("Alice", "works_at", "Acme", valid_from="2020-01-01")
    kg.invalidate(t.id, ended="2025-01-01")
    r = kg.add("Alice", "reports_to", "Bob", valid_from="2020-01-01")
    kg.invalidate(r.id, ended="2025-01-01")
    assert fact_check("Alice works at Initech. Alice is Bob's manager.", kg, today=TODAY) == []


def test_issues_come_in_text_order_and_graph_is_untouched(kg: KnowledgeGraph) -> None:
    kg.add("Alice", "reports_to", "Bob")
    old = kg.add("Carol", "manager_of", "Dave", valid_from="2020-01-01")
    kg.invalidate(old.id, ended="2021-01-01")
    before = kg.stats()
    text = "Carol is Dave's manager. Later Alcie said Alice is Bob's manager."
    issues = fact_check(text, kg, today=TODAY)
    assert [i.kind for i in issues] == ["stale", "name", "contradiction"]
    assert kg.stats() == before


def test_unknown_shapes_produce_no_relation_issues(kg: KnowledgeGraph) -> None:
    kg.add("Alice", "reports_to", "Bob")
    assert fact_check("Alice manages Bob these days. Alice is proud of Bob.", kg, today=TODAY) == []


def test_issue_to_dict() -> None:
    issue = Issue("stale", "m", "s", 3)
    assert issue.to_dict() == {"kind": "stale", "message": "m", "span": "s", "triple_id": 3}
