"""What sync keeps in the state database (never in the synced folder): the outbox of drawers and tombstones not
written to a segment yet, every segment seen (its size and time, so a changed one is read again, and what was
wrong with it), the ids that were forgotten somewhere (an import never brings them back), and counters.

Blocking, on the state database's connection and lock: call it through ``StateGateway.run``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from mempald.state.db import State

SCHEMA = """
CREATE TABLE IF NOT EXISTS sync_outbox (
    id TEXT NOT NULL, kind TEXT NOT NULL, detail TEXT NOT NULL DEFAULT '{}', at REAL NOT NULL,
    PRIMARY KEY (id, kind)
);
CREATE TABLE IF NOT EXISTS sync_seen (
    machine TEXT NOT NULL, name TEXT NOT NULL, seq INTEGER NOT NULL, size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL, status TEXT NOT NULL, error TEXT NOT NULL DEFAULT '', records INTEGER NOT NULL,
    at REAL NOT NULL, PRIMARY KEY (machine, name)
);
CREATE TABLE IF NOT EXISTS sync_tombs (id TEXT PRIMARY KEY, op TEXT NOT NULL, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS sync_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sync_facts_in (fact INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS sync_taken (id TEXT PRIMARY KEY, seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS sync_rules_refused (
    machine TEXT NOT NULL, seq INTEGER NOT NULL, id TEXT NOT NULL, error TEXT NOT NULL, at REAL NOT NULL,
    PRIMARY KEY (machine, seq, id)
);
"""
DRAWER = "drawer"
TOMB = "tomb"
RULE = "rule"  # a rule added, replaced or removed here (its record is made from the rule book as it is then)
UNRULE = "unrule"  # the op under which a removed rule's id is remembered (sync_tombs)


@dataclass(frozen=True, slots=True)
class Pending:
    id: str
    kind: str  # DRAWER | TOMB | RULE
    detail: dict[str, Any]
    at: float


@dataclass(frozen=True, slots=True)
class Seen:
    machine: str
    name: str
    seq: int
    size: int
    mtime_ns: int
    status: str  # "read" | "damaged" | "locked" (another key)
    error: str
    records: int


class Journal:
    def __init__(self, state: State) -> None:
        self.state = state
        with state.lock:
            state.conn.executescript(SCHEMA)

    def _exec(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self.state.lock:
            self.state.conn.execute("BEGIN")
            try:
                self.state.conn.executemany(sql, rows)
                self.state.conn.execute("COMMIT")
            except BaseException:
                self.state.conn.execute("ROLLBACK")
                raise

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        with self.state.lock:
            return list(self.state.conn.execute(sql, args).fetchall())

    # the outbox ----------------------------------------------------------------------------------------
    def queue(self, ids: Iterable[str], kind: str, detail: dict[str, Any] | None = None) -> None:
        now, text = time.time(), json.dumps(detail or {})
        self._exec("INSERT OR REPLACE INTO sync_outbox (id, kind, detail, at) VALUES (?, ?, ?, ?)",
                   [(i, kind, text, now) for i in ids])

    def pending(self, limit: int) -> list[Pending]:
        rows = self._rows("SELECT id, kind, detail, at FROM sync_outbox ORDER BY at, id LIMIT ?", (limit,))
        return [Pending(r[0], r[1], json.loads(r[2]), float(r[3])) for r in rows]

    def sent(self, done: Iterable[Pending]) -> None:
        """Take what a segment now holds out of the outbox (only the rows as they were read: one queued again
        meanwhile stays)."""
        self._exec("DELETE FROM sync_outbox WHERE id = ? AND kind = ? AND at = ?",
                   [(p.id, p.kind, p.at) for p in done])

    def outbox_size(self) -> int:
        return int(self._rows("SELECT COUNT(*) FROM sync_outbox")[0][0])

    # segments seen -------------------------------------------------------------------------------------
    def seen(self) -> dict[tuple[str, str], Seen]:
        rows = self._rows("SELECT machine, name, seq, size, mtime_ns, status, error, records FROM sync_seen")
        return {(r[0], r[1]): Seen(*r) for r in rows}

    def mark(self, s: Seen) -> None:
        self._exec("INSERT OR REPLACE INTO sync_seen VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   [(s.machine, s.name, s.seq, s.size, s.mtime_ns, s.status, s.error, s.records, time.time())])

    # tombstones ------------------------------------------------------------------------------------------
    def bury(self, ids: Iterable[str], op: str) -> None:
        now = time.time()
        self._exec("INSERT OR IGNORE INTO sync_tombs (id, op, at) VALUES (?, ?, ?)", [(i, op, now) for i in ids])

    def buried(self, ids: Sequence[str]) -> set[str]:
        out: set[str] = set()
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            marks = ",".join("?" * len(chunk))
            out |= {r[0] for r in self._rows(f"SELECT id FROM sync_tombs WHERE id IN ({marks})", chunk)}
        return out

    # which segment each imported drawer was last taken from ---------------------------------------------------
    def took(self, ids: Iterable[str], seq: int) -> None:
        self._exec("INSERT INTO sync_taken (id, seq) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET seq = "
                   "max(seq, excluded.seq)", [(i, seq) for i in ids])

    def taken_after(self, ids: Sequence[str], seq: int) -> set[str]:
        """Those of ``ids`` already taken from a later segment than ``seq``."""
        out: set[str] = set()
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            marks = ",".join("?" * len(chunk))
            out |= {r[0] for r in self._rows(f"SELECT id FROM sync_taken WHERE id IN ({marks}) AND seq > ?",
                                             (*chunk, seq))}
        return out

    # rules another machine sent that were not applied here -------------------------------------------------
    def refuse(self, machine: str, seq: int, rule_id: str, error: str) -> None:
        self._exec("INSERT OR REPLACE INTO sync_rules_refused VALUES (?, ?, ?, ?, ?)",
                   [(machine, seq, rule_id, error, time.time())])

    def refused(self, limit: int = 50) -> list[dict[str, Any]]:
        rows = self._rows("SELECT machine, seq, id, error FROM sync_rules_refused ORDER BY at DESC LIMIT ?", (limit,))
        return [{"machine": r[0], "segment": r[1], "rule_id": r[2], "error": r[3]} for r in rows]

    # counters and facts ----------------------------------------------------------------------------------
    def get(self, key: str, default: int = 0) -> int:
        rows = self._rows("SELECT value FROM sync_meta WHERE key = ?", (key,))
        return int(rows[0][0]) if rows else default

    def put(self, key: str, value: int) -> None:
        self._exec("INSERT OR REPLACE INTO sync_meta (key, value) VALUES (?, ?)", [(key, str(value))])

    def imported_facts(self, ids: Iterable[int]) -> None:
        self._exec("INSERT OR IGNORE INTO sync_facts_in (fact) VALUES (?)", [(i,) for i in ids])

    def facts_imported(self, ids: Sequence[int]) -> set[int]:
        if not ids:
            return set()
        marks = ",".join("?" * len(ids))
        return {int(r[0]) for r in self._rows(f"SELECT fact FROM sync_facts_in WHERE fact IN ({marks})", ids)}

    def forget_folder(self) -> None:
        """``sync leave``: what was seen of the folder is dropped (joining again reads it anew)."""
        with self.state.lock:
            self.state.conn.execute("DELETE FROM sync_seen")
            self.state.conn.execute("DELETE FROM sync_meta WHERE key != 'seq'")  # (its own numbers go on)
