"""The store process's ownership of its shard: one close, never in the middle of a call."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from mempald.store.base import Filters, PointData, SparseVec, StoreError
from mempald.store.edge import EdgeStore
from mempald.store.host import _Owner

DIM = 4


def test_a_close_from_the_parent_watcher_waits_for_the_call_in_progress_and_happens_once(tmp_path: Path) -> None:
    owner = _Owner(EdgeStore(tmp_path / "store", DIM))
    point = PointData("00000000-0000-4000-8000-000000000001", {"text": "kept"}, SparseVec((1,), (1.0,)),
                      [0.1, 0.2, 0.3, 0.4])
    owner.lock.acquire()  # a call in progress (as ``apply`` holds it)
    closer = threading.Thread(target=owner.close)
    closer.start()
    closer.join(timeout=0.2)
    assert closer.is_alive() and not owner.closed  # the watcher waits for the call
    owner.store.upsert([point])  # the call in progress finishes its write
    owner.lock.release()
    closer.join(timeout=30)
    assert not closer.is_alive() and owner.closed
    owner.close()  # a second close (the serving loop's) is a no-op
    with pytest.raises(StoreError, match="closing"):
        owner.apply("count", (Filters(),), {})
    reopened = EdgeStore(tmp_path / "store", DIM)  # flushed and unlocked: the write is there
    try:
        assert [p.payload["text"] for p in reopened.retrieve([point.id])] == ["kept"]
    finally:
        reopened.close()
