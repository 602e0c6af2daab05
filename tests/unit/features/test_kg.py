"""Temporal knowledge graph on SQLite."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from mempald.features.kg import KGError, KnowledgeGraph, Triple, normalize_date, normalize_predicate


class Clock:
    def __init__(self, now: str) -> None:
        self.now = datetime.fromisoformat(now)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def conn() -> Iterator[sqlite3.Connection]:
    c = sqlite3.connect(":memory:", isolation_level=None)
    yield c
    c.close()


@pytest.fixture
def clock() -> Clock:
    return Clock("2026-03-01T12:00:00+00:00")


@pytest.fixture
def kg(conn: sqlite3.Connection, clock: Clock) -> KnowledgeGraph:
    graph = KnowledgeGraph(conn, clock=clock)
    graph.ensure_schema()
    return graph


def row_count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM kg_triples").fetchone()[0])


def test_ensure_schema_is_idempotent(kg: KnowledgeGraph) -> None:
    kg.ensure_schema()
    kg.ensure_schema()
    assert kg.stats()["triples"] == 0


def test_add_normalises_and_stamps(kg: KnowledgeGraph) -> None:
    t = kg.add("  Alice \n Smith ", "Works   At", " Acme\tCorp ", valid_from="2024-01-15T09:30:00+02:00",
               confidence=0.8, source_drawer="drawer-1")
    assert (t.subject, t.predicate, t.object) == ("Alice Smith", "works_at", "Acme Corp")
    assert t.valid_from == "2024-01-15T07:30:00"
    assert t.valid_to is None
    assert t.confidence == 0.8 and t.source_drawer == "drawer-1"
    assert t.created_at == "2026-03-01T12:00:00"
    assert t.to_dict() == {
        "id": t.id, "subject": "Alice Smith", "predicate": "works_at", "object": "Acme Corp",
        "valid_from": "2024-01-15T07:30:00", "valid_to": None, "confidence": 0.8,
        "source_drawer": "drawer-1", "created_at": "2026-03-01T12:00:00",
    }


def test_same_open_triple_returns_existing(kg: KnowledgeGraph, conn: sqlite3.Connection) -> None:
    a = kg.add("Kai", "recommends", "Clerk")
    b = kg.add("kai ", "Recommends", "clerk", confidence=0.5)
    assert b == a
    assert row_count(conn) == 1
    kg.invalidate(a.id)
    c = kg.add("Kai", "recommends", "Clerk")
    assert c.id != a.id
    assert row_count(conn) == 2


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("", "p", "o"), {}),
        (("s", "  ", "o"), {}),
        (("s", "p", "\n"), {}),
        (("s", "p", "o"), {"confidence": 1.5}),
        (("s", "p", "o"), {"confidence": -0.1}),
        (("s", "p", "o"), {"valid_from": "last tuesday"}),
    ],
)
def test_add_rejects_bad_input(kg: KnowledgeGraph, args: tuple[str, str, str], kwargs: dict[str, object]) -> None:
    with pytest.raises(KGError):
        kg.add(*args, **kwargs)  # type: ignore[arg-type]


def test_invalidate_keeps_rows(kg: KnowledgeGraph, conn: sqlite3.Connection) -> None:
    t = kg.add("Alice", "works_at", "Acme", valid_from="2020-01-01")
    kg.add("Alice", "lives_in", "Paris")
    assert kg.invalidate(t.id, ended="2025-06-30") == 1
    assert row_count(conn) == 2  # nothing deleted
    assert [x.predicate for x in kg.query("Alice")] == ["lives_in"]
    expired = kg.query("Alice", include_expired=True)
    assert len(expired) == 2
    closed = next(x for x in expired if x.id == t.id)
    assert closed.valid_to == "2025-06-30"
    # Already closed: invalidating again changes nothing.
    assert kg.invalidate(t.id) == 0
    assert kg.query(include_expired=True, subject="Alice")[0].valid_to == "2025-06-30"


def test_invalidate_by_fields_and_default_end(kg: KnowledgeGraph, clock: Clock) -> None:
    kg.add("Alice", "works_at", "Acme")
    kg.add("Bob", "works_at", "Acme")
    kg.add("Bob", "likes", "tea")
    assert kg.invalidate(object="acme") == 2
    assert kg.invalidate(subject="Bob", predicate="likes") == 1
    assert all(t.valid_to == "2026-03-01T12:00:00" for t in kg.query(include_expired=True))
    assert kg.query() == []


def test_invalidate_needs_a_selector_and_a_sane_end(kg: KnowledgeGraph) -> None:
    t = kg.add("Alice", "works_at", "Acme", valid_from="2024-01-01")
    with pytest.raises(KGError):
        kg.invalidate()
    with pytest.raises(KGError):
        kg.invalidate(t.id, ended="2023-12-31")
    assert kg.query()[0].valid_to is None


def test_query_as_of_half_open_interval(kg: KnowledgeGraph) -> None:
    t = kg.add("Carol", "manager_of", "Dave", valid_from="2020-01-01")
    kg.invalidate(t.id, ended="2024-06-01")
    assert kg.query("Carol", as_of="2019-12-31") == []
    assert [x.id for x in kg.query("Carol", as_of="2020-01-01")] == [t.id]
    assert [x.id for x in kg.query("Carol", as_of="2024-05-31T23:59:59")] == [t.id]
    assert kg.query("Carol", as_of="2024-06-01") == []
    assert kg.query("Carol", as_of="2024-06-01T00:00:00Z") == []
    # 23:30 at UTC-1 is already 00:30 UTC on the end date.
    assert kg.query("Carol", as_of="2024-05-31T23:30:00-01:00") == []
    assert kg.query("Carol") == []
    assert [x.id for x in kg.query("Carol", as_of="2030-01-01", include_expired=True)] == [t.id]
    assert kg.query("Carol", as_of="2019-01-01", include_expired=True) == []


def test_query_filters_and_future_facts(kg: KnowledgeGraph) -> None:
    a = kg.add("Alice", "works_at", "Acme")
    kg.add("Bob", "works_at", "Initech")
    future = kg.add("Alice", "works_at", "Globex", valid_from="2027-01-01")
    assert [t.id for t in kg.query(predicate="works at")] == [a.id, a.id + 1]
    assert [t.id for t in kg.query(object="ACME")] == [a.id]
    assert [t.id for t in kg.query("alice", as_of="2027-02-01")] == [a.id, future.id]
    assert future.id not in [t.id for t in kg.query("Alice")]


def test_timeline_is_ordered_by_valid_from(kg: KnowledgeGraph) -> None:
    c = kg.add("Alice", "works_at", "Globex", valid_from="2023-05-01T10:00:00")
    a = kg.add("Alice", "studied_at", "MIT", valid_from="2015-09-01")
    undated = kg.add("Bob", "mentors", "Alice")  # recorded 2026-03-01: placed then
    b = kg.add("Alice", "works_at", "Acme", valid_from="2019-02-01")
    kg.invalidate(b.id, ended="2023-04-30")
    kg.add("Carol", "likes", "Dave")
    timeline = kg.timeline(" alice ")
    assert [t.id for t in timeline] == [a.id, b.id, c.id, undated.id]
    assert timeline[1].valid_to == "2023-04-30"


def test_stats_and_entities(kg: KnowledgeGraph) -> None:
    t = kg.add("Alice", "works_at", "Acme")
    kg.add("alice", "knows", "Bob")
    kg.add("Bob", "works_at", "acme corp")
    kg.invalidate(t.id, ended="2026-01-01")
    kg.add("Zed", "joins", "Acme", valid_from="2030-01-01")
    assert kg.entities() == ["Acme", "acme corp", "Alice", "Bob", "Zed"]
    assert kg.stats() == {"triples": 4, "current": 2, "expired": 1, "entities": 5, "predicates": 3}


def test_joins_the_callers_transaction(kg: KnowledgeGraph, conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN")
    kg.add("Alice", "works_at", "Acme")
    assert conn.in_transaction
    conn.rollback()
    assert row_count(conn) == 0


def test_works_with_legacy_isolation_and_row_factory(clock: Clock) -> None:
    conn = sqlite3.connect(":memory:")  # implicit transactions
    conn.row_factory = sqlite3.Row
    try:
        kg = KnowledgeGraph(conn, clock=clock)
        kg.ensure_schema()
        t = kg.add("Alice", "works_at", "Acme")
        assert isinstance(t, Triple)
        assert not conn.in_transaction
        assert kg.query("Alice") == [t]
        assert kg.stats()["triples"] == 1
    finally:
        conn.close()


def test_failed_write_rolls_back(kg: KnowledgeGraph, conn: sqlite3.Connection) -> None:
    kg.add("Alice", "works_at", "Acme", valid_from="2024-01-01")
    kg.add("Bob", "works_at", "Acme", valid_from="2026-01-01")
    with pytest.raises(KGError):
        kg.invalidate(object="Acme", ended="2025-01-01")  # Bob's starts later: refuse the whole update
    assert not conn.in_transaction
    assert all(t.valid_to is None for t in kg.query(include_expired=True))


def test_normalize_helpers() -> None:
    assert normalize_date("2026-03-15") == "2026-03-15"
    assert normalize_date("2026-03-15T00:00:00") == "2026-03-15"
    assert normalize_date("2026-03-15T01:00:00+01:00") == "2026-03-15"
    assert normalize_date("2026-03-15 10:20:30Z") == "2026-03-15T10:20:30"
    assert normalize_date("2026-03-15T10:20:30.5") == "2026-03-15T10:20:30.500000"
    assert normalize_date(datetime(2026, 3, 15, 10, tzinfo=UTC)) == "2026-03-15T10:00:00"
    for bad in ("2026-13-01", "15/03/2026", "", "soon"):
        with pytest.raises(KGError):
            normalize_date(bad)
    assert normalize_predicate("  Reports   To ") == "reports_to"
