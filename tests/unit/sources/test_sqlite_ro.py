"""Reading an editor's live SQLite store never disturbs it (issue 43 point 1): ``mempald.sources.sqlite_ro``.

A real writer process commits every 50 ms (as Cursor does while it streams an answer) while mempald reads the
same database in a loop; the writer's every commit succeeds and none waits 100 ms or more because of the reader,
in both journal modes; the reader never sees a torn row; nothing is written beside the database.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mempald.sources import sqlite_ro
from tests.conftest import REPO

WRITER = REPO / "tests" / "cursor_writer.py"  # a commit every 50 ms; its lock waits timed


def _kv_db(path: Path, mode: str) -> None:
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA journal_mode={mode}")
    db.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    db.execute("CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    for i in range(40):
        db.execute("INSERT INTO cursorDiskKV VALUES (?, ?)",
                   (f"bubbleId:c-busy:b{i}", json.dumps({"n": 0, "text": "x" * 20000, "again": 0})))
    db.commit()
    db.close()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", ["wal", "delete"])
def test_a_writer_committing_every_50ms_never_fails_nor_waits_100ms_while_mempald_reads(
        tmp_path: Path, mode: str) -> None:
    db = tmp_path / "state.vscdb"
    _kv_db(db, mode)
    writer = subprocess.Popen([sys.executable, str(WRITER), str(db), mode, "4"], stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None
    assert writer.stdout.readline().strip() == "ready"
    reads = locked = 0
    while writer.poll() is None:
        try:
            rows = sqlite_ro.query(db, "SELECT key, value FROM cursorDiskKV WHERE key >= ? AND key < ?",
                                   ("bubbleId:c-busy:", "bubbleId:c-busy;"))
        except sqlite_ro.Unreadable as exc:
            assert exc.reason in ("locked", "slow"), exc
            locked += 1
            continue
        reads += 1
        for _key, value in rows:
            row = json.loads(value)  # a torn row would not parse, or would disagree with itself
            assert row["n"] == row["again"]
    out, _ = writer.communicate(timeout=30)
    result = json.loads(out.strip().splitlines()[-1])
    print(f"{mode}: {reads} reads ({locked} answered locked) during {result['commits']} commits; the writer's "
          f"longest lock wait {result['max_lock_wait'] * 1000:.1f} ms, "
          f"longest commit {result['max_commit'] * 1000:.1f} ms")
    assert writer.returncode == 0
    assert result["commits"] >= 20 and reads >= 20
    assert result["failures"] == 0, "the editor's writes never fail because of mempald"
    assert result["max_lock_wait"] < 0.1, f"the editor waited {result['max_lock_wait'] * 1000:.0f} ms for mempald"


def test_reading_writes_nothing_beside_the_database_nor_changes_it(tmp_path: Path) -> None:
    db = tmp_path / "state.vscdb"
    _kv_db(db, "delete")
    before = {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in tmp_path.iterdir()}
    assert len(sqlite_ro.query(db, "SELECT key FROM cursorDiskKV")) == 40
    with pytest.raises(sqlite_ro.Unreadable):  # a write is refused by the connection itself
        sqlite_ro.query(db, "DELETE FROM cursorDiskKV")
    after = {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in tmp_path.iterdir()}
    assert after == before


def test_a_database_locked_by_its_writer_answers_locked_at_once(tmp_path: Path) -> None:
    db = tmp_path / "state.vscdb"
    _kv_db(db, "delete")
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # an editor holding its lock (for minutes, as far as mempald knows)
    try:
        t0 = time.monotonic()
        with pytest.raises(sqlite_ro.Unreadable) as err:
            sqlite_ro.query(db, "SELECT count(*) FROM cursorDiskKV")
        assert err.value.reason == "locked"
        assert time.monotonic() - t0 < 1.0
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert sqlite_ro.query(db, "SELECT count(*) FROM cursorDiskKV") == [(40,)]


def test_a_corrupt_page_a_missing_table_and_a_fifo_are_unreadable_with_their_reason(tmp_path: Path) -> None:
    db = tmp_path / "state.vscdb"
    _kv_db(db, "delete")
    with pytest.raises(sqlite_ro.Unreadable) as err:
        sqlite_ro.query(db, "SELECT value FROM aichatTable")
    assert err.value.reason == "schema"
    root = sqlite3.connect(db).execute("SELECT rootpage FROM sqlite_master WHERE name = 'cursorDiskKV'").fetchone()[0]
    data = bytearray(db.read_bytes())
    start = (root - 1) * 4096
    data[start: start + 64] = b"\xff" * 64  # the table's root page torn by a crash: not a b-tree page
    db.write_bytes(bytes(data))
    with pytest.raises(sqlite_ro.Unreadable) as err:
        sqlite_ro.query(db, "SELECT value FROM cursorDiskKV")
    assert err.value.reason == "corrupt"
    junk = tmp_path / "junk.vscdb"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(sqlite_ro.Unreadable) as err:
        sqlite_ro.query(junk, "SELECT 1 FROM cursorDiskKV")
    assert err.value.reason == "corrupt"
    fifo = tmp_path / "fifo.vscdb"
    os.mkfifo(fifo)
    with pytest.raises(sqlite_ro.Unreadable) as err:
        sqlite_ro.query(fifo, "SELECT 1")
    assert err.value.reason == "refused"
    with pytest.raises(sqlite_ro.Unreadable) as err:
        sqlite_ro.query(tmp_path / "gone.vscdb", "SELECT 1")
    assert err.value.reason == "missing"


def test_the_signature_changes_with_every_commit_in_either_journal_mode(tmp_path: Path) -> None:
    for mode in ("wal", "delete"):
        db = tmp_path / f"{mode}.vscdb"
        _kv_db(db, mode)
        writer = sqlite3.connect(db)
        writer.execute(f"PRAGMA journal_mode={mode}")
        before = sqlite_ro.signature(db)
        writer.execute("INSERT INTO cursorDiskKV VALUES ('composerData:new', '{}')")
        writer.commit()
        assert sqlite_ro.signature(db) != before, mode
        writer.close()
    assert sqlite_ro.signature(tmp_path / "gone.vscdb") == (0, 0, 0, 0)
