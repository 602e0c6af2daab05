"""The user's rules and the rules suggested to them, in the state database (two tables on its connection).

``rules``: what the PreToolUse hook enforces, each one added by the user (``rule add``) or accepted by them from a
suggestion (``rule accept``), never anything else. ``rule_suggestions``: always/never instructions found in
stored prompts (``mempald.features.rule_suggest``), each with a draft rule and the drawer it cites; pending until
the user accepts (a rule is made) or dismisses it. A suggestion's id is derived from its drawer and sentence,
so finding it again changes nothing. Both tables are created when missing (``ensure_schema``, at start), like
the knowledge graph's and the inbox's; they travel with the database in a backup and as ``mempal_rule`` lines
in an export.

Blocking and short; the daemon runs these on the state database's thread (``StateGateway.run``).
"""

from __future__ import annotations

import secrets
import sqlite3
import time
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS rules (
    id TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    tool TEXT NOT NULL,
    pattern TEXT NOT NULL,
    decision TEXT NOT NULL,
    wing TEXT NOT NULL DEFAULT '',
    source TEXT NOT NULL DEFAULT 'user',
    drawer_id TEXT NOT NULL DEFAULT '',
    forced INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS rule_suggestions (
    id TEXT PRIMARY KEY,
    drawer_id TEXT NOT NULL,
    wing TEXT NOT NULL DEFAULT '',
    sentence TEXT NOT NULL,
    tool TEXT NOT NULL,
    pattern TEXT NOT NULL,
    decision TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    rule_id TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL
)
"""
RULE_FIELDS = ("id", "text", "tool", "pattern", "decision", "wing", "source", "drawer_id", "forced", "created_at")
SUGGESTION_FIELDS = ("id", "drawer_id", "wing", "sentence", "tool", "pattern", "decision", "status", "rule_id",
                     "created_at")


def new_rule_id() -> str:
    return "r" + secrets.token_hex(4)


class RuleBook:
    """The two tables on the daemon's connection, behind its lock."""

    def __init__(self, conn: sqlite3.Connection, lock: AbstractContextManager[Any]) -> None:
        self._conn = conn
        self._lock = lock

    def ensure_schema(self) -> None:
        with self._lock:
            self._conn.executescript(SCHEMA)

    # rules ---------------------------------------------------------------------------------------------
    def rules(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._conn.execute(f"SELECT {', '.join(RULE_FIELDS)} FROM rules ORDER BY created_at, id").fetchall()
        return [_rule(r) for r in rows]

    def rule(self, rule_id: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._conn.execute(f"SELECT {', '.join(RULE_FIELDS)} FROM rules WHERE id = ?", (rule_id,)).fetchone()
        return None if row is None else _rule(row)

    def put_rule(self, rule: Mapping[str, Any]) -> str:
        """Insert or replace a rule by id; "added", "replaced" or "unchanged"."""
        values = tuple(rule.get(k, _DEFAULTS.get(k)) for k in RULE_FIELDS)
        old = self.rule(str(rule["id"]))
        if old is not None and tuple(old[k] for k in RULE_FIELDS) == tuple(_rule(values)[k] for k in RULE_FIELDS):
            return "unchanged"
        with self._lock:
            self._conn.execute(f"INSERT OR REPLACE INTO rules ({', '.join(RULE_FIELDS)}) VALUES "
                               f"({', '.join('?' * len(RULE_FIELDS))})", values)
        return "added" if old is None else "replaced"

    def remove_rule(self, rule_id: str) -> bool:
        with self._lock:
            gone = self._conn.execute("DELETE FROM rules WHERE id = ?", (rule_id,)).rowcount
            self._conn.execute("UPDATE rule_suggestions SET status = 'pending', rule_id = '' WHERE rule_id = ?",
                               (rule_id,))
        return bool(gone)

    # suggestions ---------------------------------------------------------------------------------------
    def suggestions(self, status: str | None = "pending") -> list[dict[str, Any]]:
        q = f"SELECT {', '.join(SUGGESTION_FIELDS)} FROM rule_suggestions"
        args: tuple[str, ...] = ()
        if status:
            q, args = q + " WHERE status = ?", (status,)
        with self._lock:
            rows = self._conn.execute(q + " ORDER BY created_at, id", args).fetchall()
        return [dict(zip(SUGGESTION_FIELDS, r, strict=True)) for r in rows]

    def suggestion(self, sid: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._conn.execute(f"SELECT {', '.join(SUGGESTION_FIELDS)} FROM rule_suggestions WHERE id = ?",
                                     (sid,)).fetchone()
        return None if row is None else dict(zip(SUGGESTION_FIELDS, row, strict=True))

    def add_suggestions(self, found: Sequence[Mapping[str, Any]]) -> int:
        """Keep the new ones (a suggestion seen before, whatever its status, stays as it is); how many were new."""
        now = time.time()
        with self._lock:
            before = self._conn.total_changes
            self._conn.executemany(
                "INSERT OR IGNORE INTO rule_suggestions (id, drawer_id, wing, sentence, tool, pattern, decision,"
                " status, rule_id, created_at) VALUES (?,?,?,?,?,?,?,'pending','',?)",
                [(s["id"], s["drawer_id"], s["wing"], s["sentence"], s["tool"], s["pattern"], s["decision"], now)
                 for s in found])
            return self._conn.total_changes - before

    def settle(self, sid: str, status: str, rule_id: str = "") -> None:
        with self._lock:
            self._conn.execute("UPDATE rule_suggestions SET status = ?, rule_id = ? WHERE id = ?",
                               (status, rule_id, sid))


_DEFAULTS: dict[str, Any] = {"wing": "", "source": "user", "drawer_id": "", "forced": 0}


def _rule(row: Sequence[Any]) -> dict[str, Any]:
    out = dict(zip(RULE_FIELDS, row, strict=True))
    out["forced"] = bool(out["forced"])
    out["created_at"] = float(out["created_at"] or 0.0)
    return out
