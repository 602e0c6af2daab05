"""The store's written file pages handed back to the kernel (``mempald.store.file_pages``): a real Qdrant Edge
shard in this process and a real store process; what was written reads back the same, before and after the
shard is closed and opened again, and a built segment's pages are left alone."""

from __future__ import annotations

import random
import sys
import time
import uuid
from pathlib import Path

import pytest

from mempald.store.base import Filters, PointData, SparseVec
from mempald.store.edge import EdgeStore, current_shard
from mempald.store.file_pages import BUDGET, WrittenPages, unbuilt
from mempald.store.hosted import HostedEdgeStore
from mempald.store.index_build import build_index

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="MADV_PAGEOUT and /proc are Linux's")
DIM = 384


def point(i: int, text_kb: int = 3) -> PointData:
    rng = random.Random(i)
    terms = sorted(rng.sample(range(5000), 12))
    dense = [rng.uniform(-1, 1) for _ in range(DIM)]
    text = f"drawer {i} " + "".join(rng.choice("abcdefgh ") for _ in range(text_kb * 1024))
    return PointData(str(uuid.uuid5(uuid.NAMESPACE_URL, f"pages-{i}")),
                     {"wing": f"w{i % 3}", "text": text, "status": "live", "ts": float(i)},
                     SparseVec(tuple(terms), tuple(1.0 for _ in terms)), dense)


def write(store: EdgeStore | HostedEdgeStore, start: int, stop: int) -> None:
    for lo in range(start, stop, 250):
        store.upsert([point(i) for i in range(lo, min(stop, lo + 250))])


def texts(store: EdgeStore | HostedEdgeStore, ids: list[int]) -> list[str]:
    return [p.payload["text"] for p in store.retrieve([point(i).id for i in ids])]


def test_written_pages_are_handed_back_and_read_back_the_same(tmp_path: Path) -> None:
    store = EdgeStore(tmp_path / "store", DIM)
    try:
        write(store, 0, 3000)
        pages = WrittenPages(store.shard_dir)
        before = pages.resident()
        assert before > 8 << 20  # the WAL and the unbuilt segment, as written
        assert pages.release() >= before // 2
        assert pages.released == 1
        assert pages.resident() < before // 4
        assert store.count(Filters()) == 3000
        sample = [0, 1, 1499, 2999]
        assert texts(store, sample) == [point(i).payload["text"] for i in sample]
        dense, sparse = store.query(point(7).dense, point(7).sparse, Filters(), 3)  # through the page cache
        assert dense[0].id == point(7).id and sparse[0].id == point(7).id
        store.set_payload([point(5).id], {"room": "after"})  # a write after the pages were handed back
        write(store, 3000, 3100)
        pages.release()
    finally:
        store.close()
    again = EdgeStore(tmp_path / "store", DIM)
    try:
        assert again.count(Filters()) == 3100
        assert again.retrieve([point(5).id])[0].payload["room"] == "after"
        assert texts(again, [0, 3099]) == [point(0).payload["text"], point(3099).payload["text"]]
    finally:
        again.close()


def test_a_built_segment_is_left_alone(tmp_path: Path) -> None:
    store = EdgeStore(tmp_path / "store", DIM)
    write(store, 0, 1500)
    store.close()
    shard = tmp_path / "store" / current_shard(tmp_path / "store")
    assert build_index(shard)
    kinds = sorted(unbuilt(seg) for seg in (shard / "segments").iterdir())
    assert kinds[0] is False and kinds[-1] is True  # a built segment and the new unbuilt one
    store = EdgeStore(tmp_path / "store", DIM)
    try:
        write(store, 1500, 1800)
        for i in range(0, 1500, 50):  # searches read the built segment's pages
            store.query(point(i).dense, point(i).sparse, Filters(), 5)
        pages = WrittenPages(store.shard_dir)
        built_before = pages.resident(everything=True) - pages.resident()
        assert built_before > 0
        pages.release()
        assert pages.resident(everything=True) - pages.resident() >= built_before * 0.9
        assert store.count(Filters()) == 1800
    finally:
        store.close()


def test_the_store_process_keeps_its_written_pages_under_the_budget(tmp_path: Path) -> None:
    store = HostedEdgeStore(tmp_path / "store", DIM)
    try:
        write(store, 0, 9000)
        shard = tmp_path / "store" / current_shard(tmp_path / "store")
        wal = sum(p.stat().st_size for p in (shard / "wal").iterdir())
        assert wal > BUDGET  # more than the budget was written through the mappings
        seen = WrittenPages(shard, pid=store.pids[0])
        n = 9000
        deadline = time.monotonic() + 60
        while seen.resident() > BUDGET:  # checked after a write, at most once a second
            write(store, n, n + 1)
            n += 1
            assert time.monotonic() < deadline, "the store process never handed its written pages back"
        assert store.count(Filters()) == n
        assert texts(store, [0, 4500, n - 1]) == [point(i).payload["text"] for i in (0, 4500, n - 1)]
    finally:
        store.close()
