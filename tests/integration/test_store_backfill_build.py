"""Index builds during a backfill: while files are still being read, the store's unbuilt drawers are built and
swapped in each time ``store.index_during_backfill`` of them were written, so the store process's memory stays
bounded; the writes made meanwhile are kept in a journal file (not in the daemon's memory) and replayed by the
new store process. Real store processes, a real build process, the real maintainer loop."""

from __future__ import annotations

import json
import random
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from mempald.config import SettingsRef, parse_settings
from mempald.store import hosted
from mempald.store.base import Filters, PointData, SparseVec, StoreError
from mempald.store.edge import EdgeStore, current_shard
from mempald.store.gateway import StoreGateway
from mempald.store.hosted import HostedEdgeStore
from mempald.store.index_build import BACKFILL_SEGMENTS, BUILD_SEGMENTS, build_index
from mempald.store.journal import SUFFIX
from mempald.store.maintenance import IndexMaintainer

pytestmark = pytest.mark.anyio
DIM = 384


def point(i: int) -> PointData:
    """A drawer as a keyword pass writes it: payload and keyword vector, no dense vector yet."""
    rng = random.Random(i)
    terms = sorted(rng.sample(range(5000), 12))
    payload = {"wing": f"w{i % 3}", "text": f"drawer {i}", "status": "live", "ts": float(i)}
    return PointData(str(uuid.uuid5(uuid.NAMESPACE_URL, f"bf-{i}")), payload,
                     SparseVec(tuple(terms), tuple(1.0 for _ in terms)), None)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[HostedEdgeStore]:
    s = HostedEdgeStore(tmp_path / "store", DIM)
    yield s
    s.close()


def journals(s: HostedEdgeStore) -> list[str]:
    return sorted(p.name for p in s.path.glob("*" + SUFFIX))


def segments(s: HostedEdgeStore) -> int:
    s.flush()
    return len([p for p in (s.path / current_shard(s.path) / "segments").iterdir() if p.is_dir()])


async def test_a_backfill_is_built_in_parts_while_it_is_written(store: HostedEdgeStore) -> None:
    gateway = StoreGateway(store)
    settings = SettingsRef(parse_settings({"store": {"index_during_backfill": 300, "index_quiet_s": 3600}},
                                          env={}))
    maintainer = IndexMaintainer(settings, gateway, store, idle=lambda: False)  # files are being read throughout
    written = 0
    shards = {current_shard(store.path)}
    async with anyio.create_task_group() as tg:
        tg.start_soon(maintainer.run)
        with anyio.fail_after(240):
            while maintainer.report["builds"] < 2:
                await gateway.upsert([point(i) for i in range(written, written + 50)])
                written += 50
                shards.add(current_shard(store.path))
                await anyio.sleep(0.05)
        tg.cancel_scope.cancel()
    assert maintainer.report["last"]["reason"] == "backfill"
    assert maintainer.report["last_error"] == ""
    assert len(shards) >= 3  # two built shards swapped in
    assert store.count(Filters()) == written  # every drawer, whether written before, during or after a build
    assert store.written_since_build < written
    got = store.retrieve([point(0).id, point(written - 1).id])
    assert [p.payload["text"] for p in got] == ["drawer 0", f"drawer {written - 1}"]
    assert journals(store) == []  # each build's journal is gone once replayed
    assert segments(store) <= BUILD_SEGMENTS + 1


def hold_build(monkeypatch: pytest.MonkeyPatch, gate: Path) -> Path:
    """The real build, started only once ``gate`` exists: a test's writes during the build are made before it
    can end, however loaded the machine."""
    build = hosted.build_command

    def held(shard_dir: Path, segments: int) -> list[str]:
        wait = f"import os, subprocess, sys, time\nwhile not os.path.exists({str(gate)!r}): time.sleep(0.01)\n"
        return [sys.executable, "-c", wait + f"sys.exit(subprocess.call({build(shard_dir, segments)!r}))"]

    monkeypatch.setattr(hosted, "build_command", held)
    return gate


async def test_the_journal_is_a_file_replayed_by_the_new_store_process(
    store: HostedEdgeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    gateway = StoreGateway(store)
    await gateway.upsert([point(i) for i in range(400)])
    seen: list[list[str]] = []
    written = hold_build(monkeypatch, store.path.parent / "written")

    async def write_while_building() -> None:
        while store._journal is None:  # noqa: ASYNC110 (the rebuild's first step opens it)
            await anyio.sleep(0.01)
        for start in range(400, 700, 100):
            await gateway.upsert([point(i) for i in range(start, start + 100)])
        seen.append(journals(store))
        written.touch()

    async with anyio.create_task_group() as tg:
        tg.start_soon(write_while_building)
        res = await hosted.rebuild_index(gateway, store)
    assert seen and len(seen[0]) == 1  # the writes went to a journal file beside the store
    assert res["replayed_writes"] == 3
    assert store.count(Filters()) == 700
    assert journals(store) == []


class FullDisk:
    def write(self, data: bytes) -> int:
        raise OSError(28, "No space left on device")

    def close(self) -> None:
        pass


async def test_a_journal_that_cannot_be_written_drops_the_build_not_the_write(
    store: HostedEdgeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    gateway = StoreGateway(store)
    await gateway.upsert([point(i) for i in range(50)])
    written = hold_build(monkeypatch, store.path.parent / "written")

    async def write_while_building() -> None:
        while store._journal is None:  # noqa: ASYNC110 (the rebuild's first step opens it)
            await anyio.sleep(0.01)
        journal = store._journal
        real, journal._fh = journal._fh, FullDisk()  # the next append fails, as on a full disk
        real.close()
        await gateway.upsert([point(i) for i in range(50, 60)])
        written.touch()

    async with anyio.create_task_group() as tg:
        tg.start_soon(write_while_building)
        with pytest.raises(StoreError, match=r"could not be kept .*No space left"):
            await hosted.rebuild_index(gateway, store)
    assert store.count(Filters()) == 60
    assert journals(store) == []


def test_a_journal_left_by_a_crash_is_removed(tmp_path: Path) -> None:
    path = tmp_path / "store"
    s = HostedEdgeStore(path, DIM)
    s.upsert([point(i) for i in range(10)])
    s.close()
    (path / ("shard-1" + SUFFIX)).write_bytes(b"\x80\x05half a pickle")
    s = HostedEdgeStore(path, DIM)
    try:
        assert journals(s) == []
        assert s.count(Filters()) == 10
    finally:
        s.close()


def built_segments(shard: Path) -> set[str]:
    """The shard's built segments (the unbuilt, appendable one keeps a plain dense index)."""
    return {p.name for p in (shard / "segments").iterdir()
            if json.loads((p / "segment.json").read_text())["config"]["vector_data"]["dense"]["index"]["type"]
            == "hnsw"}


def test_a_build_leaves_built_segments_alone(tmp_path: Path) -> None:
    """Each build indexes the new drawers only: the segments built before are not merged again (up to
    ``BUILD_SEGMENTS``), so a build during a backfill costs what was written since the last one."""
    s = HostedEdgeStore(tmp_path / "store", DIM)
    try:
        before: set[str] = set()
        for part in range(3):
            s.upsert([point(i) for i in range(part * 200, part * 200 + 200)])
            anyio.run(hosted.rebuild_index, StoreGateway(s), s)
            built = built_segments(s.path / current_shard(s.path))
            assert len(built) == part + 1
            assert before <= built  # every segment built before is still there, as it was
            before = built
        assert s.count(Filters()) == 600
    finally:
        s.close()


def test_builds_during_a_backfill_merge_nothing_and_an_idle_build_merges_them(tmp_path: Path) -> None:
    """A build while a backfill is written leaves every built segment alone (up to ``BACKFILL_SEGMENTS``), so it
    writes one segment of what was written since the last; an idle build then merges them back to
    ``BUILD_SEGMENTS``. The real builder on a real shard, part after part."""
    path = tmp_path / "store"
    for part in range(BUILD_SEGMENTS + 2):
        s = EdgeStore(path, DIM)
        s.upsert([point(i) for i in range(part * 60, part * 60 + 60)])
        shard = s.shard_dir
        s.close()
        assert build_index(shard, segments=BACKFILL_SEGMENTS)
        assert len(built_segments(shard)) == part + 1
    assert build_index(shard)  # idle: merged
    assert len(built_segments(shard)) <= BUILD_SEGMENTS
    s = EdgeStore(path, DIM)
    try:
        assert s.count(Filters()) == (BUILD_SEGMENTS + 2) * 60
    finally:
        s.close()


async def test_the_idle_build_after_a_backfill_merges_what_its_builds_left(store: HostedEdgeStore) -> None:
    gateway = StoreGateway(store)
    busy = [True]
    settings = SettingsRef(parse_settings({"store": {"index_during_backfill": 200, "index_quiet_s": 0.3,
                                                     "index_after": 1_000_000}}, env={}))
    maintainer = IndexMaintainer(settings, gateway, store, idle=lambda: not busy[0])
    written = 0
    async with anyio.create_task_group() as tg:
        tg.start_soon(maintainer.run)
        with anyio.fail_after(240):
            while maintainer.report["builds"] < 1:
                await gateway.upsert([point(i) for i in range(written, written + 50)])
                written += 50
                await anyio.sleep(0.05)
            assert maintainer.report["last"]["reason"] == "backfill"
            busy[0] = False  # the backfill is over: far fewer than index_after unindexed, yet a merge is due
            while maintainer.report["last"]["reason"] != "idle":  # noqa: ASYNC110 (the maintainer's own loop)
                await anyio.sleep(0.05)
        tg.cancel_scope.cancel()
    assert maintainer.report["builds"] >= 2
    assert maintainer.report["last_error"] == ""
    assert store.count(Filters()) == written
