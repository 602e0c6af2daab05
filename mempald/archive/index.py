"""The archive's index: which file was archived, in which versions and chunks (a SQLite database, blocking).

A unit is one archived file (its path when it was read): the session it belongs to, its wing, the source root it
was read under (a restore ``--to`` keeps the path below it), its current version and how many bytes of it are
archived, with the hash of the bytes before that offset (``tail``: a file changed before it starts a new
version). A chunk is a run of a version's bytes, ``start`` to ``start + length``, in one compressed file.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS units (
    path TEXT PRIMARY KEY, root TEXT NOT NULL, session TEXT NOT NULL, wing TEXT NOT NULL, format TEXT NOT NULL,
    version INTEGER NOT NULL, size INTEGER NOT NULL, tail TEXT NOT NULL, first_at REAL NOT NULL,
    updated_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS units_session ON units (session);
CREATE TABLE IF NOT EXISTS chunks (
    path TEXT NOT NULL, version INTEGER NOT NULL, seq INTEGER NOT NULL, start INTEGER NOT NULL,
    length INTEGER NOT NULL, stored INTEGER NOT NULL, sha256 TEXT NOT NULL, file TEXT NOT NULL,
    PRIMARY KEY (path, version, seq));
"""


@dataclass(frozen=True, slots=True)
class UnitRow:
    path: str
    root: str
    session: str
    wing: str
    format: str
    version: int
    size: int
    tail: str
    first_at: float
    updated_at: float


@dataclass(frozen=True, slots=True)
class ChunkRow:
    path: str
    version: int
    seq: int
    start: int
    length: int
    stored: int
    sha256: str
    file: str


class Index:
    def __init__(self, path: Path) -> None:
        new = not path.exists()
        self.conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        if new:
            os.chmod(path, 0o600)
        self.lock = threading.RLock()
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.executescript(SCHEMA)

    def close(self) -> None:
        with self.lock:
            self.conn.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self.lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def unit(self, path: str) -> UnitRow | None:
        with self.lock:
            row = self.conn.execute("SELECT * FROM units WHERE path = ?", (path,)).fetchone()
        return UnitRow(*row) if row else None

    def units(self, where: str = "", params: Iterable[object] = ()) -> list[UnitRow]:
        with self.lock:
            rows = self.conn.execute(f"SELECT * FROM units {where} ORDER BY session, path", tuple(params)).fetchall()
        return [UnitRow(*r) for r in rows]

    def chunks(self, path: str, version: int | None = None) -> list[ChunkRow]:
        sql = "SELECT * FROM chunks WHERE path = ?"
        params: tuple[object, ...] = (path,)
        if version is not None:
            sql, params = sql + " AND version = ?", (path, version)
        with self.lock:
            rows = self.conn.execute(sql + " ORDER BY version, start", params).fetchall()
        return [ChunkRow(*r) for r in rows]

    def all_chunks(self) -> list[ChunkRow]:
        with self.lock:
            return [ChunkRow(*r) for r in self.conn.execute("SELECT * FROM chunks ORDER BY path, version, start")]

    def next_seq(self, path: str, version: int) -> int:
        with self.lock:
            row = self.conn.execute("SELECT MAX(seq) FROM chunks WHERE path = ? AND version = ?",
                                    (path, version)).fetchone()
        return 0 if row[0] is None else int(row[0]) + 1

    def totals(self) -> tuple[int, int, int, int, int]:
        """(sessions, files, versions, archived bytes, bytes on disk)."""
        with self.lock:
            sessions, files = self.conn.execute("SELECT COUNT(DISTINCT session), COUNT(*) FROM units").fetchone()
            versions, raw, stored = self.conn.execute(
                "SELECT COUNT(DISTINCT path || ':' || version), COALESCE(SUM(length), 0), COALESCE(SUM(stored), 0) "
                "FROM chunks").fetchone()
        return int(sessions), int(files), int(versions), int(raw), int(stored)

    @staticmethod
    def put_unit(conn: sqlite3.Connection, row: UnitRow) -> None:
        conn.execute("INSERT OR REPLACE INTO units VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     (row.path, row.root, row.session, row.wing, row.format, row.version, row.size, row.tail,
                      row.first_at, time.time()))

    @staticmethod
    def put_chunk(conn: sqlite3.Connection, c: ChunkRow) -> None:
        conn.execute("INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                     (c.path, c.version, c.seq, c.start, c.length, c.stored, c.sha256, c.file))
