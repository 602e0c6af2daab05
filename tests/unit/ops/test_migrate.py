"""mempal migrate: embedded store <-> server, in batches, resumable, verified."""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest

from mempald.embed.sparse import Bm25Encoder
from mempald.ops.migrate import MigrateReport, migrate, same_point
from mempald.store.base import DELETED, LIVE, Filters, PointData, SparseVec, Store, StoredPoint, StoreError
from mempald.store.edge import EdgeStore
from mempald.store.server import ServerStore

DIM = 8
BM25 = Bm25Encoder()
WORDS = ["alpha", "beta", "gamma", "delta", "login", "token", "cache", "postgres", "deploy", "dashboard", "billing",
         "backup", "restore"]
META = {"model": "test/minilm", "dim": DIM, "schema": 1, "created_at": 1.5}


def make_points(n: int, seed: int = 11) -> list[PointData]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS) for _ in range(8)) + f" note{i}"
        payload = {"wing": rng.choice(["a", "b", "c"]), "room": f"r{i % 4}", "ts": 1000.0 + i, "machine": "m1",
                   "user": "ada", "content": text, "importance": i % 6, "status": LIVE, "deleted": False,
                   "nested": {"k": [i, str(i)], "f": i / 3}}
        dense = [rng.uniform(-1, 1) for _ in range(DIM)] if i % 5 else None  # every fifth: sparse only
        out.append(PointData(str(uuid.uuid5(uuid.NAMESPACE_URL, f"mig-{i}")), payload, BM25.document(text), dense))
    return out


def fill(store: Store, n: int) -> list[PointData]:
    pts = make_points(n)
    store.upsert(pts)
    store.set_payload([pts[3].id], {"status": DELETED, "deleted": True})  # soft-deleted points travel too
    store.set_meta(META)
    return pts


def everything(store: Store) -> dict[str, StoredPoint]:
    out: dict[str, StoredPoint] = {}
    offset: str | None = None
    while True:
        page, offset = store.scroll(Filters(include_deleted=True), 100, offset, with_vectors=True)
        out.update({p.id: p for p in page})
        if offset is None:
            return out


def assert_same_contents(a: Store, b: Store) -> None:
    pa, pb = everything(a), everything(b)
    assert pa.keys() == pb.keys()
    for pid, p in pa.items():
        q = pb[pid]
        assert q.payload == p.payload
        assert (p.dense is None) == (q.dense is None)
        if p.dense is not None and q.dense is not None:
            assert list(q.dense) == pytest.approx(list(p.dense), abs=1e-5)
        assert p.sparse is not None and q.sparse is not None
        assert dict(zip(q.sparse.indices, q.sparse.values, strict=True)) == pytest.approx(
            dict(zip(p.sparse.indices, p.sparse.values, strict=True)))
        assert same_point(p, q)


def test_round_trip_edge_server_edge(tmp_path: Path) -> None:
    edge = EdgeStore(tmp_path / "edge", DIM)
    server = ServerStore(":memory:", DIM)
    back = EdgeStore(tmp_path / "edge2", DIM)
    try:
        fill(edge, 40)
        seen: list[tuple[int, int]] = []
        report = migrate(edge, server, batch=16, progress=lambda d, t: seen.append((d, t)), sample=40, seed=1)
        assert report.ok, report
        assert (report.source_count, report.target_count, report.copied, report.missing) == (40, 40, 40, 0)
        assert report.sampled == 40 and report.mismatched == ()
        assert seen == [(16, 40), (32, 40), (40, 40)]
        assert server.get_meta() == META
        assert server.count(Filters()) == 39 and server.count(Filters(only_deleted=True)) == 1
        assert server.count(Filters(missing_dense=True, include_deleted=True)) == 8

        report = migrate(server, back, batch=7, sample=10)
        assert report.ok and report.copied == 40 and report.target_count == 40
        assert back.get_meta() == META
        assert_same_contents(edge, back)
        assert_same_contents(edge, server)
        # The copy searches like the original (same IDF statistics; ties may come back in another order).
        q = BM25.query("postgres deploy")
        want = [h.score for h in edge.query(None, q, Filters(), 10)[1]]
        assert [h.score for h in back.query(None, q, Filters(), 10)[1]] == pytest.approx(want, rel=1e-5)
    finally:
        for s in (edge, server, back):
            s.close()


def test_interrupted_then_resumed(tmp_path: Path) -> None:
    src = EdgeStore(tmp_path / "edge", DIM)
    dst = ServerStore(f"path:{tmp_path / 'qdrant'}", DIM)
    ckpt = tmp_path / "migrate.json"
    try:
        fill(src, 50)

        def boom(done: int, total: int) -> None:
            if done >= 14:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            migrate(src, dst, batch=7, progress=boom, checkpoint=ckpt)
        state = json.loads(ckpt.read_text())
        assert state["copied"] == 14 and state["offset"] and state["done"] is False
        assert dst.count(Filters(include_deleted=True)) == 14

        seen: list[tuple[int, int]] = []
        report = migrate(src, dst, batch=7, progress=lambda d, t: seen.append((d, t)), checkpoint=ckpt)
        assert report.ok, report
        assert report.resumed_from == 14 and report.copied == 36
        assert report.source_count == report.target_count == 50
        assert seen[0] == (21, 50) and seen[-1] == (50, 50)
        assert dst.count(Filters(include_deleted=True)) == 50
        assert dst.count(Filters(only_deleted=True)) == 1
        assert not ckpt.exists()
        assert_same_contents(src, dst)
    finally:
        src.close()
        dst.close()


def test_checkpoint_of_another_migration_is_ignored(tmp_path: Path) -> None:
    src = ServerStore(":memory:", DIM)
    dst = ServerStore(f"path:{tmp_path / 'q'}", DIM)
    ckpt = tmp_path / "ck.json"
    ckpt.write_text(json.dumps({"version": 1, "source": "edge:/elsewhere", "target": dst.location,
                                "offset": str(uuid.uuid4()), "copied": 999, "done": False}))
    try:
        fill(src, 12)
        report = migrate(src, dst, batch=5, checkpoint=ckpt)
        assert report.ok and report.resumed_from == 0 and report.copied == 12
    finally:
        src.close()
        dst.close()


def test_refuses_a_target_from_another_model(tmp_path: Path) -> None:
    src = ServerStore(":memory:", DIM)
    dst = ServerStore(":memory:", DIM, collection="other")
    try:
        fill(src, 5)
        dst.set_meta({"model": "another/model", "dim": DIM})
        with pytest.raises(StoreError, match="another/model"):
            migrate(src, dst)
        assert dst.count(Filters(include_deleted=True)) == 0
    finally:
        src.close()
        dst.close()


def test_refuses_same_store(tmp_path: Path) -> None:
    store = ServerStore(":memory:", DIM)
    try:
        with pytest.raises(StoreError, match="same store"):
            migrate(store, store)
    finally:
        store.close()


class LossyStore:
    """A target that silently drops one point and corrupts another: verification must notice both."""

    def __init__(self, inner: ServerStore, drop: str, corrupt: str) -> None:
        self.inner = inner
        self.location = "lossy:" + inner.location
        self.drop = drop
        self.corrupt = corrupt

    def upsert(self, points: Sequence[PointData]) -> None:
        out = []
        for p in points:
            if p.id == self.drop:
                continue
            out.append(PointData(p.id, {**p.payload, "wing": "zzz"}, p.sparse, p.dense) if p.id == self.corrupt else p)
        self.inner.upsert(out)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def test_verification_reports_missing_and_different_points() -> None:
    src = ServerStore(":memory:", DIM)
    inner = ServerStore(":memory:", DIM)
    try:
        pts = fill(src, 20)
        lossy = LossyStore(inner, drop=pts[2].id, corrupt=pts[7].id)
        report: MigrateReport = migrate(src, lossy, batch=6, sample=20)  # type: ignore[arg-type]
        assert not report.ok
        assert report.missing == 1
        assert report.mismatched == (pts[7].id,)
        assert report.target_count == 19
    finally:
        src.close()
        inner.close()


def test_same_point_tolerances() -> None:
    sv = SparseVec((1, 5), (0.5, 2.0))
    a = StoredPoint("x", {"a": 1, "b": [1, 2]}, [0.1, 0.2], sv)
    assert same_point(a, StoredPoint("x", {"b": [1, 2], "a": 1}, [0.1 + 5e-6, 0.2], SparseVec((5, 1), (2.0, 0.5))))
    assert not same_point(a, StoredPoint("x", {"a": 1, "b": [1, 2]}, [0.1 + 1e-3, 0.2], sv))
    assert not same_point(a, StoredPoint("x", {"a": 1, "b": [1, 2]}, None, sv))
    assert not same_point(a, StoredPoint("x", {"a": 2, "b": [1, 2]}, [0.1, 0.2], sv))
    assert not same_point(a, StoredPoint("x", {"a": 1, "b": [1, 2]}, [0.1, 0.2], SparseVec((1,), (0.5,))))
