"""The disk-space guard, the salvage of damaged files and the forced stop, on real files and processes."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mempald.ops.salvage import copy_rows, readable_copy, state_problems
from mempald.sources.reader import Refused, open_regular, read_capped, refusal
from mempald.store.base import StoreError
from mempald.store.space import SpaceGuard, sparse_debt


def test_sparse_debt_counts_what_preallocated_files_may_still_take(tmp_path: Path) -> None:
    (tmp_path / "sparse").write_bytes(b"")
    os.truncate(tmp_path / "sparse", 64 * 1024 * 1024)  # 64 MB by its size, nothing allocated
    (tmp_path / "dense").write_bytes(b"x" * 1024 * 1024)
    debt = sparse_debt(tmp_path)
    assert 63 * 1024 * 1024 <= debt <= 64 * 1024 * 1024


def test_the_guard_refuses_writes_when_too_little_would_be_left(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    free_mb = os.statvfs(tmp_path).f_bavail * os.statvfs(tmp_path).f_frsize // (1024 * 1024)
    ok = SpaceGuard(store, tmp_path, min_free_mb=1)
    assert ok.check() == "" and not ok.status()["paused"]
    ok.require("store write")  # nothing raised
    low = SpaceGuard(store, tmp_path, min_free_mb=free_mb + 1024)  # more than the disk has
    with pytest.raises(StoreError, match=r"disk almost full.*ingest is paused"):
        low.require("store write")
    assert low.status()["paused"] and low.refused == 1
    assert SpaceGuard(store, tmp_path, min_free_mb=0).check() == ""  # 0: no check


def test_only_regular_files_are_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    with pytest.raises(Refused) as err:
        open_regular(fifo)  # returns at once: a FIFO with no writer never blocks the open
    assert err.value.reason == "fifo" and time.monotonic() - t0 < 1
    assert refusal(os.stat("/dev/null"))[0] == "device"  # type: ignore[index]
    if Path("/proc/self/environ").exists():
        assert refusal(os.stat("/proc/self/environ"))[0] == "pseudo_file"  # type: ignore[index]
    big = tmp_path / "big.txt"
    big.write_bytes(b"a" * 5000)
    with pytest.raises(Refused, match=r"over ingest\.max_file_bytes"):
        read_capped(big, 4096)
    assert read_capped(big, 5000) == b"a" * 5000


def test_a_damaged_state_database_is_copied_row_by_row(tmp_path: Path) -> None:
    db = tmp_path / "state.sqlite3"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE cursors (path TEXT PRIMARY KEY, n INTEGER)")
    conn.execute("CREATE TABLE kg_triples (id INTEGER PRIMARY KEY, subject TEXT, blob BLOB)")
    conn.executemany("INSERT INTO cursors VALUES (?, ?)", [(f"/p/{i}.jsonl", i) for i in range(50)])
    conn.execute("INSERT INTO kg_triples VALUES (1, 'alice', x'00ff')")
    conn.commit()
    conn.close()
    data = bytearray(db.read_bytes())
    at = data.find(b"/p/7.jsonl")
    data[at + 3] = 0xFF  # one cursor's text no longer UTF-8
    data[:16] = b"\x00" * 16  # and the header's magic string gone
    db.write_bytes(bytes(data))
    assert state_problems(db)
    work = readable_copy(db, tmp_path / "work.sqlite3")
    dst = sqlite3.connect(":memory:")
    copied = copy_rows(sqlite3.connect(work), dst, strict=lambda t: t == "cursors")
    assert copied["cursors"].rows == 49 and copied["cursors"].lost == 1
    assert dst.execute("SELECT subject, blob FROM kg_triples").fetchall() == [("alice", b"\x00\xff")]


def test_a_stop_that_cannot_finish_is_ended(tmp_path: Path) -> None:
    code = textwrap.dedent("""
        import threading, time
        from mempald import logs
        from mempald.runtime.app import _arm_force_exit
        logs.configure(json=True)
        _arm_force_exit(0.5)
        threading.Event().wait()  # as a task group waiting on a worker thread stuck in the kernel
    """)
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and time.monotonic() - t0 < 15
    assert "shutdown_forced" in out.stderr
