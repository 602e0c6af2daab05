"""The daemon's own state in SQLite (WAL): file cursors, per-source counters, the audit log.

One writer: the daemon. Every method is blocking and short; the daemon calls them from a worker thread.
Other features (cowork inbox, knowledge graph) keep their tables in the same database file.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mempald.errors import MempalError
from mempald.normalize.model import CursorContext
from mempald.text.redact import scrub_fields, scrub_meta

SCHEMA = """
CREATE TABLE IF NOT EXISTS cursors (
    path TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    inode INTEGER NOT NULL,
    size INTEGER NOT NULL,
    mtime REAL NOT NULL,
    offset INTEGER NOT NULL,
    prefix_hash TEXT NOT NULL,
    context TEXT NOT NULL DEFAULT '{}',
    exchanges INTEGER NOT NULL DEFAULT 0,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS counters (
    source TEXT NOT NULL,
    name TEXT NOT NULL,
    value INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (source, name)
);
CREATE TABLE IF NOT EXISTS store_count (
    points INTEGER NOT NULL,
    at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    detail TEXT NOT NULL DEFAULT '{}'
);
"""


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where reading one unit (a file, or a Slack export folder) stopped, and what its reader keeps about it
    (``context``, typed: ``CursorContext``, stored as JSON)."""

    path: str
    source: str
    inode: int
    size: int
    mtime: float
    offset: int
    prefix_hash: str
    context: CursorContext
    exchanges: int = 0

    def same_file(self, st: os.stat_result) -> bool:
        """The file is the one this cursor last saw, unchanged (same inode, size and mtime)."""
        return (self.inode, self.size, self.mtime) == (st.st_ino, st.st_size, st.st_mtime)

    def same_folder(self, files: int, size: int, mtime: float) -> bool:
        """A folder unit is as this cursor last saw it: the same number of files, total size and newest mtime."""
        return (self.context.files, self.size, self.mtime) == (files, size, mtime)


def _context(raw: str, inode: int) -> CursorContext:
    try:
        data = json.loads(raw)
    except ValueError:
        data = {}
    # Slack cursors written before the typed context kept the export's file count in the inode column
    return CursorContext.from_json(data if isinstance(data, dict) else {}, legacy_files=inode)


@dataclass(frozen=True, slots=True)
class SourceFigures:
    """What ``status`` says about one source's files: how many have a cursor, the exchanges read from them, and
    the bytes written to them that are not read yet."""

    files: int = 0
    exchanges: int = 0
    backlog_bytes: int = 0


# One aggregate over the cursors: decoding every cursor's context in Python cost status 0.1-0.2 s at 20,000
# files. A context that is not valid JSON counts as having read to its offset (as ``_context`` reads it).
_FIGURES = (
    "SELECT source, COUNT(*), COALESCE(SUM(exchanges), 0), COALESCE(SUM(MAX(0, size - COALESCE(NULLIF(CASE WHEN"
    " json_valid(context) THEN CAST(json_extract(context, '$.read_end') AS INTEGER) END, 0), offset))), 0)"
    " FROM cursors GROUP BY source"
)


def _cursor(row: tuple[Any, ...]) -> Cursor:
    return Cursor(row[0], row[1], row[2], row[3], row[4], row[5], row[6], _context(row[7], row[2]), row[8])


class StateDamaged(MempalError):
    """The state database cannot be used: its file is damaged (the message names it and the fix)."""


def damaged_message(path: Path, what: str) -> str:
    return (f"the state database {path} is damaged ({what}): stop mempald and run `mempald repair` (it keeps "
            "every row it can still read; transcripts are read again, nothing stored in the palace is lost)")


class State:
    """Opening checks the file (``PRAGMA quick_check``): a damaged header, a truncated file or a broken page is
    ``StateDamaged`` at start, not a traceback later. Text that is no longer UTF-8 (flipped bytes inside a row)
    is read with replacement characters and noted in ``damaged`` (status shows it), so one bad row cannot make
    every ``status`` fail."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.damaged = ""  # why the database looks damaged ("" while nothing says so)
        self.lock = threading.RLock()
        try:
            self.conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30)
            self.conn.text_factory = self._text
            with self.lock:
                self.conn.execute("PRAGMA journal_mode=WAL")
                self.conn.execute("PRAGMA synchronous=NORMAL")
                problems = quick_check(self.conn)
                if not problems:
                    self.conn.executescript(SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise StateDamaged(damaged_message(path, str(exc))) from None
        if problems:
            self.conn.close()
            raise StateDamaged(damaged_message(path, "; ".join(problems[:3])))

    def _text(self, raw: bytes) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            if not self.damaged:
                self.damaged = damaged_message(self.path, f"a stored text is not UTF-8: {raw[:60]!r}")
            return raw.decode("utf-8", "replace")

    def close(self) -> None:
        with self.lock:
            self.conn.close()

    # cursors -------------------------------------------------------------------------------------------
    def get_cursor(self, path: str) -> Cursor | None:
        with self.lock:
            row = self.conn.execute(
                "SELECT path, source, inode, size, mtime, offset, prefix_hash, context, exchanges "
                "FROM cursors WHERE path = ?", (path,)
            ).fetchone()
        if row is None:
            return None
        return _cursor(row)

    def all_cursors(self, source: str | None = None) -> dict[str, Cursor]:
        q = "SELECT path, source, inode, size, mtime, offset, prefix_hash, context, exchanges FROM cursors"
        args: tuple[Any, ...] = ()
        if source is not None:
            q += " WHERE source = ?"
            args = (source,)
        with self.lock:
            rows = self.conn.execute(q, args).fetchall()
        return {r[0]: _cursor(r) for r in rows}

    def source_figures(self) -> dict[str, SourceFigures]:
        """``SourceFigures`` per source key (sources without cursors are absent)."""
        try:
            with self.lock:
                rows = self.conn.execute(_FIGURES).fetchall()
        except sqlite3.OperationalError as exc:
            if "no such function" not in str(exc):
                raise
            out: dict[str, SourceFigures] = {}  # an SQLite built without its JSON functions
            for c in self.all_cursors().values():
                f = out.get(c.source, SourceFigures())
                out[c.source] = SourceFigures(f.files + 1, f.exchanges + c.exchanges,
                                              f.backlog_bytes + max(0, c.size - (c.context.read_end or c.offset)))
            return out
        return {r[0]: SourceFigures(int(r[1]), int(r[2]), int(r[3])) for r in rows}

    def put_cursor(self, c: Cursor) -> None:
        ctx = c.context  # what a reader keeps of a session's title, folder and branch: scrubbed like the drawers'
        ctx = replace(ctx, title=scrub_meta(ctx.title), cwd=scrub_meta(ctx.cwd), git_branch=scrub_meta(ctx.git_branch))
        with self.lock:
            self.conn.execute(
                "INSERT INTO cursors (path, source, inode, size, mtime, offset, prefix_hash, context, exchanges,"
                " updated_at) VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT(path) DO UPDATE SET source=excluded.source,"
                " inode=excluded.inode, size=excluded.size, mtime=excluded.mtime, offset=excluded.offset,"
                " prefix_hash=excluded.prefix_hash, context=excluded.context, exchanges=excluded.exchanges,"
                " updated_at=excluded.updated_at",
                (c.path, c.source, c.inode, c.size, c.mtime, c.offset, c.prefix_hash, json.dumps(ctx.to_json()),
                 c.exchanges, time.time()),
            )

    def drop_cursor(self, path: str) -> None:
        with self.lock:
            self.conn.execute("DELETE FROM cursors WHERE path = ?", (path,))

    # counters ------------------------------------------------------------------------------------------
    def bump(self, source: str, name: str, by: int = 1) -> None:
        if not by:
            return
        with self.lock:
            self.conn.execute(
                "INSERT INTO counters (source, name, value) VALUES (?,?,?) "
                "ON CONFLICT(source, name) DO UPDATE SET value = value + excluded.value",
                (source, name, by),
            )

    def counters(self) -> dict[str, dict[str, int]]:
        with self.lock:
            rows = self.conn.execute("SELECT source, name, value FROM counters").fetchall()
        out: dict[str, dict[str, int]] = {}
        for source, name, value in rows:
            out.setdefault(source, {})[name] = value
        return out

    # the store's point count at the last clean stop ------------------------------------------------------
    def record_store_points(self, points: int) -> None:
        """The store's point count, as the daemon stops cleanly: the next start compares (``store_points``)."""
        with self.lock:
            self.conn.execute("BEGIN")
            self.conn.execute("DELETE FROM store_count")
            self.conn.execute("INSERT INTO store_count (points, at) VALUES (?, ?)", (points, time.time()))
            self.conn.execute("COMMIT")

    def store_points(self) -> int | None:
        """The count recorded at the last clean stop (``None``: none, as after a crash or a repair)."""
        with self.lock:
            row = self.conn.execute("SELECT points FROM store_count").fetchone()
        return None if row is None else int(row[0])

    def forget_store_points(self) -> None:
        """Drop the recorded count once compared: a crash later must not leave one that no longer holds."""
        with self.lock:
            self.conn.execute("DELETE FROM store_count")

    # audit ---------------------------------------------------------------------------------------------
    def audit(self, actor: str, action: str, target: str, reason: str = "", **detail: Any) -> None:
        """Record an action; its texts (a target, a reason, the details) are scrubbed first (issue #47 H5)."""
        with self.lock:
            self.conn.execute(
                "INSERT INTO audit (at, actor, action, target, reason, detail) VALUES (?,?,?,?,?,?)",
                (time.time(), scrub_meta(actor), action, scrub_meta(target), scrub_meta(reason),
                 json.dumps(scrub_fields(detail))),
            )

    def audit_log(self, limit: int = 100, *, since: float | None = None,
                  actions: tuple[str, ...] = ()) -> list[dict[str, Any]]:
        """The audit log, newest first: who did what to which memories, when and why (``since``: only entries at
        or after that epoch time; ``actions``: only those actions)."""
        where: list[str] = ["1=1"]
        args: list[float | str] = []
        if since is not None:
            where.append("at >= ?")
            args.append(since)
        if actions:
            where.append(f"action IN ({','.join('?' * len(actions))})")
            args += list(actions)
        with self.lock:
            rows = self.conn.execute(
                f"SELECT at, actor, action, target, reason, detail FROM audit WHERE {' AND '.join(where)} "
                "ORDER BY id DESC LIMIT ?", (*args, limit),
            ).fetchall()
        return [{"at": r[0], "actor": r[1], "action": r[2], "target": r[3], "reason": r[4],
                 "detail": _detail(r[5])} for r in rows]


def _detail(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return {"unreadable": raw[:200]}


def state_missing(path: Path) -> str:
    """"missing" or "empty" when the state database at ``path`` holds nothing (no file, no bytes, no table: it
    was never made, or was deleted or truncated to nothing), else "". Opens nothing for writing."""
    try:
        if path.stat().st_size == 0:
            return "empty"
    except FileNotFoundError:
        return "missing"
    except OSError:
        return ""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    except sqlite3.Error:
        return ""
    try:
        tables = conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
    except sqlite3.Error:
        return ""  # damaged, not empty: quick_check says what is wrong
    finally:
        conn.close()
    return "" if tables else "empty"


def quick_check(conn: sqlite3.Connection) -> list[str]:
    """SQLite's own consistency check of every page ("ok" is no problem); raises ``sqlite3.DatabaseError`` when
    the file is not a database at all."""
    rows = [str(r[0]) for r in conn.execute("PRAGMA quick_check").fetchall()]
    return [] if rows == ["ok"] else rows


def unreadable_text(conn: sqlite3.Connection) -> list[str]:
    """Every table whose rows cannot all be read with strict UTF-8 text (``table: error``), for ``doctor``."""
    out = []
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()]
    saved = conn.text_factory
    conn.text_factory = str
    try:
        for table in tables:
            try:
                for _row in conn.execute(f'SELECT * FROM "{table}"'):
                    pass
            except sqlite3.Error as exc:
                out.append(f"{table}: {exc}")
    finally:
        conn.text_factory = saved
    return out
