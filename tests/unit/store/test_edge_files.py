"""A real Qdrant Edge shard's files read without Qdrant (``mempald.store.edge_files``): the same payloads and
dense vectors the store returns, deletes and payload updates honoured, a truncated id tracker found."""

from __future__ import annotations

import math
import random
import uuid
from pathlib import Path

import pytest

from mempald.store.base import Filters, PointData, SparseVec
from mempald.store.edge import EdgeStore
from mempald.store.edge_files import id_mappings, lz4_block, read_raw, segments, tracker_problems

DIM = 8


def pid(i: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"files-{i}"))


def unit(i: int) -> list[float]:
    rng = random.Random(i)
    v = [rng.gauss(0.0, 1.0) for _ in range(DIM)]
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def by_id(payload: dict[str, object]) -> str | None:
    return None  # only the id tracker names these points


def test_the_files_read_without_qdrant_match_the_store(tmp_path: Path) -> None:
    path = tmp_path / "store"
    store = EdgeStore(path, DIM)
    rng = random.Random(47)
    texts = {i: " ".join(rng.choice(["alpha", "beta", "gamma", "aaaa"]) for _ in range(20 + 30 * i)) for i in range(40)}
    store.upsert([PointData(pid(i), {"text": texts[i], "status": "live", "n": i}, SparseVec((i,), (1.0,)), unit(i))
                  for i in range(40)])
    store.set_payload([pid(3)], {"status": "deleted"})
    store.delete(Filters(ids=(pid(5),), include_deleted=True))
    store.close()

    shard = path / "shard"
    assert tracker_problems(shard) == []
    raw = read_raw(shard, by_id)
    assert set(raw.points) == {pid(i) for i in range(40)} - {pid(5)}
    assert raw.unreadable == 0 and raw.unnamed == 0 and raw.tracker_damaged == []
    assert raw.points[pid(3)].payload["status"] == "deleted"

    store = EdgeStore(path, DIM)
    try:
        stored = {p.id: p for p in store.retrieve(list(raw.points), with_vectors=True)}
    finally:
        store.close()
    for point_id, p in raw.points.items():
        assert p.payload == stored[point_id].payload
        dense = stored[point_id].dense
        assert p.dense is not None and dense is not None
        assert max(abs(a - b) for a, b in zip(p.dense, dense, strict=True)) < 1e-6


def test_a_truncated_id_tracker_is_found_and_its_points_still_read(tmp_path: Path) -> None:
    path = tmp_path / "store"
    store = EdgeStore(path, DIM)
    store.upsert([PointData(pid(i), {"text": f"drawer {i}", "status": "live"}, SparseVec((i,), (1.0,)), unit(i))
                  for i in range(12)])
    store.close()
    (seg,) = segments(path / "shard")
    mappings = seg / "mutable_id_tracker.mappings"
    whole = mappings.read_bytes()
    mappings.write_bytes(whole[: 5 * 21 + 7])  # cut inside the sixth entry

    named, clean = id_mappings(seg)
    assert len(named) == 5 and not clean
    assert tracker_problems(path / "shard")
    raw = read_raw(path / "shard", lambda payload: pid(int(str(payload["text"]).split()[-1])))
    assert set(raw.points) == {pid(i) for i in range(12)} and raw.tracker_damaged == [seg.name]


def test_lz4_stops_at_the_declared_size_and_refuses_bad_blocks() -> None:
    # literals "abc", then a match of 6 bytes 3 back (overlapping: "abcabc"), then trailing bytes of the page
    block = bytes([0x32]) + b"abc" + bytes([3, 0]) + bytes([0x10]) + b"!" + b"\x00" * 20
    assert lz4_block(block, 9) == b"abcabcabc"
    with pytest.raises(ValueError, match="before the start"):
        lz4_block(bytes([0x10]) + b"a" + bytes([9, 0]), 10)
    with pytest.raises(ValueError, match="ends early"):
        lz4_block(bytes([0x50]) + b"ab", 5)
