"""The store process: its ownership of its shard (one close, never in the middle of a call), and the daemon's
wait for it to open."""

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


def test_a_shard_is_opened_by_one_store_at_a_time_until_its_close_has_returned(tmp_path: Path) -> None:
    """The shard's own lock, beside it: Qdrant Edge's WAL lock goes before a closing shard's last files are
    written, and a store opened in that moment damaged sparse vectors (seen after a daemon was killed: its
    store process was still closing when the next opener got in). Another process is refused until the
    first store's close returns, then opens."""
    import subprocess
    import sys

    path = tmp_path / "store"
    first = EdgeStore(path, DIM)
    first.upsert([PointData("00000000-0000-4000-8000-000000000002", {"text": "one"}, SparseVec((3,), (1.0,)),
                            [0.4, 0.3, 0.2, 0.1])])
    code = ("import sys\nfrom pathlib import Path\nfrom mempald.store.edge import EdgeStore\n"
            "from mempald.store.base import StoreError\n"
            "try:\n    s = EdgeStore(Path(sys.argv[1]), 4)\nexcept StoreError as e:\n    print('refused:', e)\n"
            "else:\n    print('opened', s.count(__import__('mempald.store.base', fromlist=['Filters']).Filters()))\n"
            "    s.close()\n")

    def other() -> str:
        return subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                              timeout=60).stdout.strip()

    refused = other()
    assert refused.startswith("refused:") and "in use by another process" in refused
    assert str(path / ".shard.lock") in refused
    first.close()
    assert other() == "opened 1"
    with pytest.raises(StoreError, match="in use"):  # one open store per shard in a process, too
        second = EdgeStore(path, DIM)
        EdgeStore(path, DIM)
    second.close()


def test_the_wait_for_a_store_process_to_open_grows_with_the_store_and_logs_while_it_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A store too large to open in the fixed figure must not keep the daemon from starting: the wait gets
    ``OPEN_S_PER_GB`` more for each GB the shard's files hold (allocated, not their sparse sizes), a slow open
    is logged while it goes on, and a store process that does not open in time is stopped with a clear error."""
    from mempald.store import host_process as hosted

    shard = tmp_path / "shard"
    shard.mkdir()
    assert hosted.open_timeout(shard) == hosted.START_TIMEOUT_S
    with (shard / "sparse").open("wb") as fh:  # 1 GB long, nothing written: nothing to read at open
        fh.truncate(1 << 30)
    assert hosted.open_timeout(shard) < hosted.START_TIMEOUT_S + 1
    (shard / "segment").write_bytes(b"\1" * (64 << 20))
    assert hosted.open_timeout(shard) == pytest.approx(hosted.START_TIMEOUT_S + hosted.OPEN_S_PER_GB / 16, abs=1)

    path = tmp_path / "store"
    monkeypatch.setattr(hosted, "OPEN_LOG_EVERY_S", 0.05)
    host = hosted.HostProcess(path, DIM, None)  # a real store process, opening a new store (about a second)
    try:
        host.wait_ready(60)
        assert host.call("count", (Filters(),), {}) == 0
    finally:
        host.close()
    seen = capsys.readouterr()
    assert "store_opening" in seen.out + seen.err

    late = hosted.HostProcess(path, DIM, None)
    with pytest.raises(StoreError, match="did not open the store within 0 s"):
        late.wait_ready(0.01)
    assert late.proc.poll() is not None  # stopped, not left holding the store
