"""One contract, every backend: Qdrant Edge (embedded) and qdrant-client (``:memory:`` and ``path:``).

The server adapter runs against qdrant-client's in-process mode, which speaks the same API as a server.
"""

from __future__ import annotations

import math
import random
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mempald.embed.sparse import Bm25Encoder
from mempald.store.base import DELETED, LIVE, Filters, PointData, SparseVec, Store, StoreError
from mempald.store.edge import EdgeStore
from mempald.store.hosted import HostedEdgeStore
from mempald.store.server import ServerStore

DIM = 8
# "hosted" is the embedded store kept in a child process, as the daemon runs it (mempald.store.hosted).
BACKENDS = ["edge", "hosted", "memory", "path"]
ON_DISK = ["edge", "hosted", "path"]

TEXTS = [
    ("alpha", "auth", "decision", "laptop", "We decided to use JWT tokens for the login service"),
    ("alpha", "auth", "problem", "laptop", "The login service crashed because the token cache was empty"),
    ("alpha", "db", "decision", "laptop", "Postgres migrations run with alembic before every deploy"),
    ("alpha", "db", "none", "desktop", "Vacuum the postgres tables weekly to keep the planner happy"),
    ("beta", "ui", "preference", "desktop", "The user prefers dark mode and compact tables in the dashboard"),
    ("beta", "ui", "milestone", "desktop", "Shipped the new dashboard with charts and dark mode"),
    ("beta", "api", "problem", "laptop", "Rate limiting returned 429 errors from the billing api"),
    ("beta", "api", "none", "desktop", "The billing api now retries with exponential backoff"),
    ("gamma", "ops", "decision", "server", "Backups are copied to object storage every night"),
    ("gamma", "ops", "emotional", "server", "Relieved that the restore drill finally worked"),
]

BM25 = Bm25Encoder()


def pid(n: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"contract-{n}"))


def rand_vec(rng: random.Random) -> list[float]:
    return [rng.uniform(-1.0, 1.0) for _ in range(DIM)]


def unit(v: list[float]) -> list[float]:
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def corpus(seed: int = 7) -> list[PointData]:
    rng = random.Random(seed)
    out = []
    for i, (wing, room, mtype, machine, text) in enumerate(TEXTS):
        payload = {"wing": wing, "room": room, "memory_type": mtype, "machine": machine, "user": "ada",
                   "source_kind": "claude_code", "agent": "claude", "ts": 1000.0 + i * 100, "importance": i % 6,
                   "position": float(i), "deleted": False, "status": LIVE, "content": text, "tags": ["t", str(i)]}
        out.append(PointData(pid(i), payload, BM25.document(text), rand_vec(rng)))
    return out


Opener = Callable[[], Store]


def make_store(kind: str, folder: Path) -> Store:
    if kind == "edge":
        return EdgeStore(folder / "edge", DIM)
    if kind == "hosted":
        return HostedEdgeStore(folder / "edge", DIM)
    if kind == "memory":
        return ServerStore(":memory:", DIM)
    return ServerStore(f"path:{folder / 'qdrant'}", DIM)


@pytest.fixture(params=BACKENDS)
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    kind: str = request.param
    opened: list[Store] = []

    def open_store() -> Store:
        if kind == "memory" and opened:
            pytest.skip(":memory: keeps nothing across a reopen")
        store = make_store(kind, tmp_path)
        opened.append(store)
        return store

    yield open_store
    if opened:
        opened[-1].close()  # earlier ones were closed by the test that reopened


@pytest.fixture
def store(opener: Opener) -> Store:
    return opener()


@pytest.fixture
def filled(store: Store) -> Store:
    store.upsert(corpus())
    return store


@pytest.fixture(scope="module", params=BACKENDS)
def shared(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """One filled store per backend for the tests that only read (opening an Edge shard costs fsyncs)."""
    kind: str = request.param
    store = make_store(kind, tmp_path_factory.mktemp(f"shared-{kind}"))
    store.upsert(corpus())
    yield store
    store.close()


def ids_of(items: list[Any]) -> set[str]:
    return {x.id for x in items}


def test_upsert_sparse_only_then_set_dense(store: Store) -> None:
    pts = [PointData(p.id, p.payload, p.sparse) for p in corpus()[:4]]
    store.upsert(pts)
    assert store.count(Filters(missing_dense=True)) == 4
    got = store.retrieve([pts[0].id], with_vectors=True)[0]
    assert got.dense is None
    assert got.sparse is not None
    assert dict(zip(got.sparse.indices, got.sparse.values, strict=True)) == pytest.approx(
        dict(zip(pts[0].sparse.indices, pts[0].sparse.values, strict=True)))

    rng = random.Random(1)
    vecs = {p.id: rand_vec(rng) for p in pts[:3]}
    store.set_dense(list(vecs.items()))
    assert store.count(Filters(missing_dense=True)) == 1
    assert ids_of(store.scroll(Filters(missing_dense=True), 10)[0]) == {pts[3].id}
    for rec in store.retrieve(list(vecs), with_vectors=True):
        assert rec.dense is not None
        assert list(rec.dense) == pytest.approx(unit(vecs[rec.id]), abs=1e-5)  # cosine: stored normalized
        assert rec.sparse is not None
    # The payload is untouched by the vector update.
    assert store.retrieve([pts[0].id])[0].payload == dict(pts[0].payload)


def test_clear_dense(filled: Store) -> None:
    store = filled
    store.clear_dense([pid(0), pid(1)])
    assert ids_of(store.scroll(Filters(missing_dense=True), 10)[0]) == {pid(0), pid(1)}
    rec = store.retrieve([pid(0)], with_vectors=True)[0]
    assert rec.dense is None
    assert rec.sparse is not None and rec.sparse.indices


def test_retrieve(shared: Store) -> None:
    store = shared
    missing = str(uuid.uuid4())
    got = store.retrieve([pid(2), missing, pid(5)])
    assert ids_of(got) == {pid(2), pid(5)}
    assert store.retrieve([]) == []
    rec = next(r for r in got if r.id == pid(2))
    assert rec.payload["content"] == TEXTS[2][4]
    assert rec.payload["tags"] == ["t", "2"]
    assert rec.dense is None and rec.sparse is None  # no vectors unless asked
    bare = store.retrieve([pid(2)], with_vectors=True, with_payload=False)[0]  # vectors only (ranking's IDF)
    assert bare.payload == {} and bare.dense is not None and bare.sparse is not None and bare.sparse.indices


def test_query_returns_both_lists(shared: Store) -> None:
    store = shared
    pts = corpus()
    dense_hits, sparse_hits = store.query(pts[4].dense, BM25.query("dark mode dashboard"), Filters(), 5)
    assert dense_hits[0].id == pid(4)
    assert dense_hits[0].score == pytest.approx(1.0, abs=1e-4)
    assert dense_hits[0].payload["wing"] == "beta"
    assert {h.id for h in sparse_hits[:2]} == {pid(4), pid(5)}
    assert all(h.score > 0 for h in sparse_hits)
    assert len(dense_hits) == 5
    assert [h.score for h in dense_hits] == sorted((h.score for h in dense_hits), reverse=True)

    only_dense = store.query(pts[0].dense, None, Filters(), 3)
    assert len(only_dense[0]) == 3 and only_dense[1] == []
    only_sparse = store.query(None, BM25.query("postgres"), Filters(), 3)
    assert only_dense[0][0].id == pid(0)
    assert only_sparse[0] == [] and ids_of(only_sparse[1]) == {pid(2), pid(3)}
    assert store.query(None, None, Filters(), 3) == ([], [])
    assert store.query(None, SparseVec((), ()), Filters(), 3) == ([], [])


def test_reads_of_some_fields_return_those_keys_only(shared: Store) -> None:
    """The ranking reads six keys of its 200 candidates, not all of them: every read takes ``fields``."""
    store = shared
    pts = corpus()
    wanted = ("wing", "content", "position")
    dense_hits, sparse_hits = store.query(pts[4].dense, BM25.query("dark mode dashboard"), Filters(), 3,
                                          fields=wanted)
    assert dense_hits[0].id == pid(4) and {h.id for h in sparse_hits[:2]} == {pid(4), pid(5)}
    for h in dense_hits + sparse_hits:
        assert set(h.payload) == set(wanted)
    assert dense_hits[0].payload == {"wing": "beta", "content": TEXTS[4][4], "position": 4.0}
    page, _ = store.scroll(Filters(wing=("alpha",)), 10, fields=("room",))
    assert sorted(p.payload["room"] for p in page) == ["auth", "auth", "db", "db"]
    assert all(set(p.payload) == {"room"} for p in page)
    got = store.retrieve([pid(2), pid(9)], with_vectors=True, fields=("memory_type", "tags"))
    assert {p.id: p.payload for p in got} == {pid(2): {"memory_type": "decision", "tags": ["t", "2"]},
                                               pid(9): {"memory_type": "emotional", "tags": ["t", "9"]}}
    assert all(p.dense is not None for p in got)
    assert store.retrieve([pid(2)], with_payload=False, fields=("wing",))[0].payload == {}


FILTER_CASES: list[tuple[Filters, set[int]]] = [
    (Filters(wing=("alpha",)), {0, 1, 2, 3}),
    (Filters(wing=("beta", "gamma")), {4, 5, 6, 7, 8, 9}),
    (Filters(room=("api",)), {6, 7}),
    (Filters(wing=("alpha",), room=("db",)), {2, 3}),
    (Filters(memory_type=("decision",)), {0, 2, 8}),
    (Filters(source_kind=("claude_code",), agent=("claude",)), set(range(10))),
    (Filters(since=1200.0), {2, 3, 4, 5, 6, 7, 8, 9}),
    (Filters(until=1200.0), {0, 1, 2}),
    (Filters(since=1300.0, until=1500.0), {3, 4, 5}),
    (Filters(machine=("laptop",)), {0, 1, 2, 6}),
    (Filters(machine=("desktop", "server")), {3, 4, 5, 7, 8, 9}),
    (Filters(machine=("laptop",), since=1500.0), {6}),
    (Filters(min_importance=4), {4, 5}),
    (Filters(position_min=8.0), {8, 9}),
    (Filters(position_min=2.0, position_max=3.0), {2, 3}),
    (Filters(ids=(pid(1), pid(7))), {1, 7}),
    (Filters(wing=("nope",)), set()),
]


def test_filters(shared: Store) -> None:
    store = shared
    q = BM25.query("the api dashboard postgres login backups service")
    for filters, expected in FILTER_CASES:
        want = {pid(i) for i in expected}
        assert ids_of(store.scroll(filters, 100)[0]) == want, filters
        assert store.count(filters) == len(want), filters
        dense_hits, sparse_hits = store.query(corpus()[0].dense, q, filters, 20)
        assert ids_of(dense_hits) == want, filters  # every point has a dense vector
        assert ids_of(sparse_hits) <= want, filters


def test_tenancy_machine_scope(shared: Store) -> None:
    store = shared
    everyone = store.facet("machine", Filters())
    assert everyone == {"laptop": 4, "desktop": 4, "server": 2}
    assert store.facet("user", Filters(machine=("server",))) == {"ada": 2}
    dense_hits, _ = store.query(corpus()[3].dense, None, Filters(machine=("laptop",)), 10)
    assert {h.payload["machine"] for h in dense_hits} == {"laptop"}
    dense_hits, _ = store.query(corpus()[3].dense, None, Filters(), 10)
    assert dense_hits[0].id == pid(3)  # a desktop point, found when searching across machines


def test_facet_and_count(shared: Store) -> None:
    store = shared
    assert store.count(Filters()) == 10
    assert store.facet("wing", Filters()) == {"alpha": 4, "beta": 4, "gamma": 2}
    assert store.facet("room", Filters(wing=("alpha",))) == {"auth": 2, "db": 2}
    assert store.facet("wing", Filters(), limit=1) == {"alpha": 4} or store.facet("wing", Filters(), limit=1) == {
        "beta": 4}
    assert store.facet("wing", Filters(wing=("none",))) == {}


def test_scroll_paging(store: Store) -> None:
    rng = random.Random(3)
    pts = [PointData(pid(100 + i), {"wing": "w", "n": i}, BM25.document(f"note number {i}"), rand_vec(rng))
           for i in range(25)]
    store.upsert(pts)
    seen: list[str] = []
    offset: str | None = None
    pages = 0
    while True:
        page, offset = store.scroll(Filters(), 10, offset)
        pages += 1
        seen += [p.id for p in page]
        assert len(page) <= 10
        if offset is None:
            break
        assert isinstance(offset, str)
    assert pages == 3
    assert len(seen) == len(set(seen)) == 25
    assert set(seen) == {p.id for p in pts}
    page, _ = store.scroll(Filters(), 5, with_vectors=True)
    assert all(p.dense is not None and p.sparse is not None for p in page)


def test_delete_by_filter(filled: Store) -> None:
    store = filled
    store.delete(Filters(wing=("gamma",)))
    assert store.count(Filters()) == 8
    assert store.facet("wing", Filters()) == {"alpha": 4, "beta": 4}
    store.delete(Filters(ids=(pid(0),), include_deleted=True))
    assert store.retrieve([pid(0)]) == []
    assert store.count(Filters(include_deleted=True)) == 7
    with pytest.raises(StoreError, match="without a filter"):
        store.delete(Filters(include_deleted=True))
    assert store.count(Filters(include_deleted=True)) == 7


def test_a_drawer_deleted_after_a_search_is_hidden_from_the_next(filled: Store) -> None:
    """The embedded store leaves the deleted-drawer condition out while it holds none: a delete between two
    searches must bring it back at once (and an undelete lift it again)."""
    store = filled
    query = (corpus()[4].dense, BM25.query("dark mode dashboard"), Filters(), 10)
    dense_hits, sparse_hits = store.query(*query)
    assert dense_hits[0].id == pid(4) and pid(4) in ids_of(sparse_hits)
    assert pid(4) in ids_of(store.scroll(Filters(), 100)[0])
    store.set_payload([pid(4)], {"deleted": True, "status": DELETED})
    dense_hits, sparse_hits = store.query(*query)
    assert pid(4) not in ids_of(dense_hits) and pid(4) not in ids_of(sparse_hits)
    assert pid(4) not in ids_of(store.scroll(Filters(), 100)[0])
    assert pid(4) not in ids_of(store.scroll(Filters(any_of=(Filters(ids=(pid(4), pid(3))),)), 100)[0])
    store.set_payload([pid(4)], {"deleted": False, "status": LIVE})
    assert store.query(*query)[0][0].id == pid(4)


def test_soft_deleted_hidden_by_default(filled: Store) -> None:
    store = filled
    store.set_payload([pid(4), pid(5)], {"deleted": True, "status": DELETED, "deleted_by": "test"})
    assert store.count(Filters()) == 8
    assert store.count(Filters(include_deleted=True)) == 10
    assert store.count(Filters(only_deleted=True)) == 2
    assert ids_of(store.scroll(Filters(only_deleted=True), 10)[0]) == {pid(4), pid(5)}
    assert pid(4) not in ids_of(store.scroll(Filters(), 100)[0])
    dense_hits, sparse_hits = store.query(corpus()[4].dense, BM25.query("dark mode dashboard"), Filters(), 10)
    assert pid(4) not in ids_of(dense_hits) and pid(4) not in ids_of(sparse_hits)
    assert pid(5) not in ids_of(sparse_hits)
    dense_hits, _ = store.query(corpus()[4].dense, None, Filters(include_deleted=True), 10)
    assert dense_hits[0].id == pid(4)
    assert store.facet("wing", Filters()) == {"alpha": 4, "beta": 2, "gamma": 2}
    # retrieve by id always answers, deleted or not
    assert store.retrieve([pid(4)])[0].payload["deleted"] is True
    # undelete
    store.set_payload([pid(4)], {"deleted": False, "status": LIVE})
    assert store.count(Filters()) == 9


def test_set_payload_merges(filled: Store) -> None:
    store = filled
    store.set_payload([pid(1)], {"room": "security", "extra": {"k": [1, 2]}})
    rec = store.retrieve([pid(1)])[0]
    assert rec.payload["room"] == "security"
    assert rec.payload["extra"] == {"k": [1, 2]}
    assert rec.payload["wing"] == "alpha" and rec.payload["content"] == TEXTS[1][4]
    assert store.count(Filters(room=("security",))) == 1
    store.set_payload([], {"room": "x"})  # no-op


def test_upsert_overwrites(filled: Store) -> None:
    store = filled
    p = corpus()[0]
    store.upsert([PointData(p.id, {"wing": "delta"}, BM25.document("replaced text"), None)])
    assert store.count(Filters(include_deleted=True)) == 10
    rec = store.retrieve([p.id], with_vectors=True)[0]
    assert rec.payload == {"wing": "delta"}
    assert rec.dense is None  # an upsert replaces the whole point


def test_meta_round_trip(store: Store) -> None:
    assert store.get_meta() == {}
    meta = {"model": "minilm", "dim": DIM, "schema": 1, "created_at": 123.5}
    store.set_meta(meta)
    assert store.get_meta() == meta
    store.set_meta({"model": "other", "dim": DIM})
    assert store.get_meta() == {"model": "other", "dim": DIM}
    # metadata is never a point
    assert store.count(Filters(include_deleted=True)) == 0
    assert store.scroll(Filters(include_deleted=True), 10) == ([], None)


@pytest.mark.parametrize("kind", BACKENDS)
def test_close_is_idempotent(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    store = make_store(kind, tmp_path)
    store.upsert(corpus()[:1])
    store.flush()
    store.close()
    store.close()


@pytest.mark.parametrize("opener", ON_DISK, indirect=True)
def test_reopen_keeps_data(opener: Opener) -> None:
    store = opener()
    store.upsert(corpus())
    store.set_payload([pid(9)], {"deleted": True, "status": DELETED})
    store.set_meta({"model": "minilm", "dim": DIM})
    store.flush()
    store.close()
    again = opener()
    assert again.count(Filters(include_deleted=True)) == 10
    assert again.count(Filters()) == 9
    assert again.get_meta() == {"model": "minilm", "dim": DIM}
    dense_hits, sparse_hits = again.query(corpus()[2].dense, BM25.query("alembic migrations"), Filters(), 3)
    assert dense_hits[0].id == pid(2) and sparse_hits[0].id == pid(2)


def test_an_embedded_store_made_by_an_older_release_gets_the_new_field_indexes(tmp_path: Path) -> None:
    """A payload field indexed since a later release (``files``) is indexed when an older store is opened."""
    import qdrant_edge as qe

    from mempald.store.base import KEYWORD_FIELDS
    from mempald.store.edge import EdgeStore

    store = EdgeStore(tmp_path / "store", 8)
    store.close()
    shard = tmp_path / "store" / "shard"
    old = qe.EdgeShard.load(str(shard))  # an older release had no index on "files"
    assert "files" in old.info().payload_schema
    old.update(qe.UpdateOperation.delete_field_index("files"))
    assert "files" not in old.info().payload_schema
    old.flush()
    old.close()
    reopened = EdgeStore(tmp_path / "store", 8)
    try:
        assert set(KEYWORD_FIELDS) <= set(reopened._shard.info().payload_schema)
    finally:
        reopened.close()
