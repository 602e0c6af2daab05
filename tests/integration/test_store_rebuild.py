"""The embedded store in its child process, and the index rebuild that swaps a built shard in.

Real processes throughout: ``python -m mempald.store.host serve`` owns the shard, ``... build`` builds the
indexes on a copy. A few thousand random points are enough for Qdrant to build real HNSW and sparse indexes
(the builder's indexing threshold is 1 KB).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
import qdrant_edge as qe

from mempald.config import data_dir
from mempald.store import hosted
from mempald.store.base import DELETED, Filters, PointData, SparseVec, StoreError
from mempald.store.edge import CURRENT_FILE, EdgeStore, current_shard
from mempald.store.field_index import INDEX_MEMORY, indexed_fields
from mempald.store.gateway import StoreGateway
from mempald.store.hosted import HostedEdgeStore, rebuild_index
from tests.conftest import Daemon

pytestmark = pytest.mark.anyio
DIM = 384
N = 1200


def pid(i: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"rebuild-{i}"))


def vec(i: int) -> list[float]:
    rng = random.Random(i)
    return [rng.gauss(0.0, 1.0) for _ in range(DIM)]


def point(i: int, dense: bool = True) -> PointData:
    payload = {"wing": f"w{i % 4}", "text": f"drawer {i}", "status": "live", "ts": float(i)}
    return PointData(pid(i), payload, SparseVec((i % 97, 1000 + i), (1.0, 0.5)), vec(i) if dense else None)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[HostedEdgeStore]:
    s = HostedEdgeStore(tmp_path / "store", DIM)
    for start in range(0, N, 500):
        s.upsert([point(i) for i in range(start, min(N, start + 500))])
    yield s
    s.close()


def top_ids(s: HostedEdgeStore, i: int) -> list[str]:
    dense, _ = s.query(vec(i), None, Filters(), 3)
    return [h.id for h in dense]


def place_in_memory(shard_dir: Path) -> None:
    """Re-create every field index the way releases before ``field_index`` made them (no placement given:
    held in memory), on a shard no process has open."""
    shard = qe.EdgeShard.load(str(shard_dir))
    try:
        for name, kind in indexed_fields().items():
            shard.update(qe.UpdateOperation.delete_field_index(name))
            shard.update(qe.UpdateOperation.create_field_index(name, kind))
        shard.flush()
    finally:
        shard.close()


def placements(shard_dir: Path) -> set[str]:
    shard = qe.EdgeShard.load(str(shard_dir))
    try:
        schema = shard.info().payload_schema
        assert set(schema) >= set(indexed_fields())
        return {str(getattr(schema[name].params, "memory", None)) for name in indexed_fields()}
    finally:
        shard.close()


def filtered_ids(s: HostedEdgeStore, i: int) -> list[list[str]]:
    found = []
    for f in (Filters(), Filters(wing=("w1",)), Filters(wing=("w2", "w3"), since=300.0, until=900.0)):
        dense, sparse = s.query(vec(i), SparseVec((i % 97, 1000 + i), (1.0, 0.5)), f, 5)
        found += [[h.id for h in dense], [h.id for h in sparse], [str(s.count(f))]]
    return found


def test_a_new_store_places_its_field_indexes_on_disk(tmp_path: Path) -> None:
    s = EdgeStore(tmp_path / "store", DIM)
    try:
        assert s.misplaced_indexes() == []
    finally:
        s.close()
    assert placements(tmp_path / "store" / "shard") == {str(INDEX_MEMORY)}


async def test_a_rebuild_moves_field_indexes_held_in_memory(tmp_path: Path) -> None:
    path = tmp_path / "store"
    first = HostedEdgeStore(path, DIM)
    first.upsert([point(i) for i in range(N)])
    await rebuild_index(StoreGateway(first), first)  # built segments, as an earlier release left them...
    first.close()
    place_in_memory(path / current_shard(path))  # ...with their field indexes held in memory
    assert placements(path / current_shard(path)) == {"None"}
    store = HostedEdgeStore(path, DIM)
    try:
        assert store.misplaced_indexes() == sorted(indexed_fields())
        before = [filtered_ids(store, i) for i in (0, 7, 500)]
        res = await rebuild_index(StoreGateway(store), store)
        assert store.misplaced_indexes() == [] and res["shard"] == current_shard(path)
        assert [filtered_ids(store, i) for i in (0, 7, 500)] == before  # the same hits, filters and counts
    finally:
        store.close()
    assert placements(path / current_shard(path)) == {str(INDEX_MEMORY)}


async def test_rebuild_indexes_and_keeps_every_write_made_meanwhile(store: HostedEdgeStore) -> None:
    gateway = StoreGateway(store)
    assert store.index_state() == (N, N)  # sparse vectors are indexed as they come, dense ones are not
    old_shard = current_shard(store.path)
    old_pid = store.pids[0]

    async def write_while_building() -> None:
        await anyio.sleep(0.3)  # after the copy, during the build
        await gateway.upsert([point(i, dense=False) for i in range(N, N + 50)])
        await gateway.set_dense([(pid(i), vec(i)) for i in range(N, N + 25)])
        await gateway.set_payload([pid(1)], {"status": DELETED})
        await gateway.delete(Filters(wing=("w3",)))

    async with anyio.create_task_group() as tg:
        tg.start_soon(write_while_building)
        res = await rebuild_index(gateway, store)

    assert res["replayed_writes"] == 4
    new_shard = current_shard(store.path)
    assert new_shard != old_shard and new_shard == res["shard"]
    assert sorted(p.name for p in store.path.iterdir() if p.is_dir()) == [new_shard]
    assert store.pids[0] != old_pid
    kept = N + 50 - sum(1 for i in range(N + 50) if i % 4 == 3)
    assert store.count(Filters(include_deleted=True)) == kept
    assert store.count(Filters()) == kept - 1
    points, unindexed = store.index_state()
    assert points == kept
    assert unindexed < 100  # only the points written after the copy (and the 25 without a dense vector)
    assert top_ids(store, 0)[0] == pid(0)  # the built HNSW index finds an exact vector first
    assert top_ids(store, N + 2)[0] == pid(N + 2)  # a replayed dense vector
    assert store.retrieve([pid(N + 40)])[0].dense is None  # replayed in order: no dense vector yet

    store.close()
    again = EdgeStore(store.path, DIM)  # the CLI's in-process view reads CURRENT too
    try:
        assert again.count(Filters(include_deleted=True)) == kept
    finally:
        again.close()


async def test_failed_build_leaves_the_old_shard_current(
    store: HostedEdgeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    fail = "import sys; print('no disk', file=sys.stderr); sys.exit(3)"
    monkeypatch.setattr(hosted, "build_command", lambda d, segments: [sys.executable, "-c", fail])
    gateway = StoreGateway(store)
    before = current_shard(store.path)
    with pytest.raises(StoreError, match="index build failed: no disk"):
        await rebuild_index(gateway, store)
    assert current_shard(store.path) == before
    assert sorted(p.name for p in store.path.iterdir() if p.is_dir()) == [before]
    store.upsert([point(N)])  # writes go on, and are no longer journaled
    assert store.count(Filters()) == N + 1


async def test_cancelled_build_is_cleaned_up(store: HostedEdgeStore) -> None:
    gateway = StoreGateway(store)
    before = current_shard(store.path)
    with anyio.move_on_after(0.5):
        await rebuild_index(gateway, store)
    assert current_shard(store.path) == before
    assert sorted(p.name for p in store.path.iterdir() if p.is_dir()) == [before]
    assert store.count(Filters()) == N


async def test_too_many_writes_during_a_build_drop_it(
    store: HostedEdgeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hosted, "JOURNAL_MAX_POINTS", 10)
    gateway = StoreGateway(store)

    async def flood() -> None:
        await anyio.sleep(0.3)
        await gateway.upsert([point(i) for i in range(N, N + 20)])

    async with anyio.create_task_group() as tg:
        tg.start_soon(flood)
        with pytest.raises(StoreError, match="too many writes"):
            await rebuild_index(gateway, store)
    assert store.count(Filters()) == N + 20
    assert len([p for p in store.path.iterdir() if p.is_dir()]) == 1


def test_a_killed_store_process_is_restarted(store: HostedEdgeStore) -> None:
    store.flush()
    os.kill(store.pids[0], signal.SIGKILL)
    assert store.count(Filters()) == N  # restarted on the same shard, nothing lost
    store.upsert([point(N)])
    assert store.count(Filters()) == N + 1


def test_leftovers_of_an_interrupted_rebuild_are_removed(tmp_path: Path) -> None:
    path = tmp_path / "store"
    s = HostedEdgeStore(path, DIM)
    s.upsert([point(i) for i in range(10)])
    s.close()
    (path / "shard-1.building" / "segments").mkdir(parents=True)
    (path / "shard-2").mkdir()
    s = HostedEdgeStore(path, DIM)
    try:
        assert sorted(p.name for p in path.iterdir() if p.is_dir()) == ["shard"]
        assert not (path / CURRENT_FILE).exists()
        assert s.count(Filters()) == 10
    finally:
        s.close()


def test_a_store_that_cannot_open_says_why(tmp_path: Path) -> None:
    path = tmp_path / "store"
    path.mkdir()
    (path / CURRENT_FILE).write_text("../elsewhere\n")
    with pytest.raises(StoreError, match="names no shard folder"):
        HostedEdgeStore(path, DIM)


@pytest.mark.timeout(240)
def test_daemon_builds_the_index_when_idle_and_keeps_serving(daemon: Daemon, home: Path) -> None:
    cfg = home / ".config" / "mempald" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text("[store]\nindex_after = 20\nindex_quiet_s = 0.5\n")
    daemon.start()
    topics = ["postgres migrations", "redis cache eviction", "kubernetes ingress", "terraform state lock",
              "react hydration error", "rust borrow checker", "python asyncio cancellation", "nginx timeouts"]
    for i in range(32):
        daemon.call("ingest", {"text": f"Note {i}: we fixed the {topics[i % 8]} problem by step {i}.", "wing": "ops"})
    daemon.idle()
    before = daemon.call("search", {"query": "redis cache eviction", "wing": "ops", "limit": 3})["hits"]
    first_pids = daemon.call("status")["index"]["store_pids"]
    st = daemon.wait_for(lambda: (s := daemon.call("status"))["index"]["builds"] >= 1 and s, timeout=120)
    assert st["index"]["state"] == "idle" and not st["index"]["last_error"]
    assert st["index"]["store_pids"] != first_pids and st["drawers"] == 32
    after = daemon.call("search", {"query": "redis cache eviction", "wing": "ops", "limit": 3})["hits"]
    assert [h["drawer_id"] for h in after] == [h["drawer_id"] for h in before]
    assert "index_built" in daemon.logs()
    daemon.call("ingest", {"text": "A new note after the build about grafana alerts.", "wing": "ops"})
    assert daemon.call("search", {"query": "grafana alerts", "wing": "ops", "limit": 1})["hits"]
    assert daemon.stop() == 0
    for p in st["index"]["store_pids"]:  # the store process closed with the daemon
        assert not Path(f"/proc/{p}").exists() or "zombie" in Path(f"/proc/{p}/status").read_text().lower()
    status_line = subprocess.run([sys.executable, "-m", "mempal.cli.main", "status"], capture_output=True, text=True,
                                 env=daemon.env, timeout=30)
    assert status_line.returncode == 3  # daemon down


@pytest.mark.timeout(240)
def test_daemon_moves_an_earlier_palaces_field_indexes_when_idle(daemon: Daemon, home: Path) -> None:
    cfg = home / ".config" / "mempald" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text("[store]\nindex_after = 1000000\nindex_quiet_s = 0.5\n")  # nothing to build but the move
    daemon.start()
    for i in range(12):
        daemon.call("ingest", {"text": f"Note {i}: the deploy of service {i} needed a config flag.", "wing": "ops"})
    daemon.idle()
    query = {"query": "deploy of service 3 config flag", "wing": "ops", "limit": 3}
    before = [h["drawer_id"] for h in daemon.call("search", query)["hits"]]
    assert before and daemon.call("status")["index"]["builds"] == 0
    assert daemon.stop() == 0
    store_dir = data_dir() / "store"
    place_in_memory(store_dir / current_shard(store_dir))  # as a release before the placement left it
    daemon.start()
    st = daemon.wait_for(lambda: (s := daemon.call("status"))["index"]["builds"] >= 1 and s, timeout=120)
    assert not st["index"]["last_error"] and st["drawers"] == 12
    assert [h["drawer_id"] for h in daemon.call("search", query)["hits"]] == before
    assert "misplaced_indexes" in daemon.logs()
    assert daemon.stop() == 0
    assert placements(store_dir / current_shard(store_dir)) == {str(INDEX_MEMORY)}


def test_a_pointer_to_a_missing_shard_is_an_error_not_an_empty_store(tmp_path: Path) -> None:
    path = tmp_path / "store"
    path.mkdir()
    (path / CURRENT_FILE).write_text("shard-42\n")
    with pytest.raises(StoreError, match="names shard-42, which is missing"):
        EdgeStore(path, DIM)
    assert not (path / "shard-42").exists()
    (path / "shard").mkdir()  # the daemon's cleanup must not remove anything of a damaged store either
    with pytest.raises(StoreError, match="which is missing"):
        HostedEdgeStore(path, DIM)
    assert (path / "shard").is_dir()


def test_a_closed_store_stays_closed(tmp_path: Path) -> None:
    s = HostedEdgeStore(tmp_path / "store", DIM)
    s.upsert([point(1)])
    pid_before = s.pids[0]
    s.close()
    with pytest.raises(StoreError, match="closed"):
        s.count(Filters())
    assert s.pids == [pid_before]  # no new store process was started behind the caller's back
