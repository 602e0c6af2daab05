"""A temporal knowledge graph: subject-predicate-object triples with a validity interval, in SQLite.

The daemon owns the ``sqlite3.Connection`` (the state database); this module only creates and uses its
own table, ``kg_triples``. Nothing is ever deleted: ``invalidate`` closes a triple's interval by setting
``valid_to``, so the history stays queryable (``timeline``, ``query(include_expired=True)``).

Conventions
-----------
- Subjects and objects are stored with whitespace collapsed; predicates are also lower-cased with
  whitespace turned into ``_`` ("Works At" -> ``works_at``). Matching is case-insensitive (ASCII).
- Dates are ISO-8601 strings: a date (``2026-03-15``) or a datetime. Datetimes with a zone are
  converted to UTC and stored without one (``2026-03-15T10:00:00``). A date means the start of that
  day. Because the stored forms are normalised, comparing them as strings orders them in time.
- A triple is valid at time ``t`` when ``valid_from <= t < valid_to`` (a missing bound is open).
  ``valid_from`` None means "since an unknown time"; ``valid_to`` None means "still valid".
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime
from typing import Any

from mempald.text.redact import scrub

__all__ = ["KGError", "KnowledgeGraph", "Triple", "normalize_date", "normalize_name", "normalize_predicate"]

TABLE = "kg_triples"

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    subject TEXT NOT NULL COLLATE NOCASE,
    predicate TEXT NOT NULL COLLATE NOCASE,
    object TEXT NOT NULL COLLATE NOCASE,
    valid_from TEXT,
    valid_to TEXT,
    confidence REAL NOT NULL DEFAULT 1.0 CHECK (confidence >= 0.0 AND confidence <= 1.0),
    source_drawer TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS {TABLE}_subject ON {TABLE} (subject);
CREATE INDEX IF NOT EXISTS {TABLE}_object ON {TABLE} (object);
CREATE INDEX IF NOT EXISTS {TABLE}_predicate ON {TABLE} (predicate);
"""

_COLUMNS = "id, subject, predicate, object, valid_from, valid_to, confidence, source_drawer, created_at"


class KGError(ValueError):
    """A bad argument to the knowledge graph (empty name, unreadable date, confidence out of range...)."""


@dataclass(frozen=True, slots=True)
class Triple:
    """One fact and the interval in which it holds."""

    id: int
    subject: str
    predicate: str
    object: str
    valid_from: str | None
    valid_to: str | None
    confidence: float
    source_drawer: str | None
    created_at: str

    def is_valid_at(self, when: str) -> bool:
        """True when the triple holds at ``when`` (an already normalised ISO string)."""
        started = self.valid_from is None or self.valid_from <= when
        return started and (self.valid_to is None or when < self.valid_to)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return asdict(self)


def normalize_name(value: str) -> str:
    """Collapse runs of whitespace to one space and strip. Raises ``KGError`` when nothing is left."""
    if not isinstance(value, str):
        raise KGError(f"expected a string, got {type(value).__name__}")
    out = " ".join(value.split())
    if not out:
        raise KGError("subject, predicate and object must not be empty")
    return out


def normalize_predicate(value: str) -> str:
    """Whitespace-normalised, lower-cased, spaces as underscores: ``"Works  At"`` -> ``"works_at"``."""
    return "_".join(normalize_name(value).lower().split(" "))


def normalize_date(value: str | date) -> str:
    """ISO-8601 date or datetime -> canonical string that sorts in time order.

    ``2026-03-15`` stays a date; datetimes become ``YYYY-MM-DDTHH:MM:SS[.ffffff]`` in UTC (naive input is
    taken as UTC), except midnight, which is written as the date. Every instant thus has one spelling and
    string order is time order. Raises ``KGError`` for anything else.
    """
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, date):
        return value.isoformat()
    else:
        text = str(value).strip()
        if len(text) == 10:
            try:
                return date.fromisoformat(text).isoformat()
            except ValueError:
                pass
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            raise KGError(f"not an ISO-8601 date or datetime: {value!r}") from None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    if parsed.time() == datetime.min.time():  # midnight is the date itself: one spelling per instant
        return parsed.date().isoformat()
    return parsed.isoformat(timespec="microseconds" if parsed.microsecond else "seconds")


def _now() -> datetime:
    return datetime.now(UTC)


class KnowledgeGraph:
    """Triples with temporal validity on a connection the caller owns.

    ``lock`` serialises this object's use of the connection; pass the lock the daemon already uses for the
    same connection, or leave it out to get a private one. ``clock`` returns the current time (for tests).
    Writes run in a transaction of their own unless the connection is already inside one.
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        lock: AbstractContextManager[Any] | None = None,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        self._conn = conn
        self._lock: AbstractContextManager[Any] = lock if lock is not None else threading.RLock()
        self._clock = clock

    # plumbing ------------------------------------------------------------------------------------------
    def ensure_schema(self) -> None:
        """Create the table and indexes if they do not exist (idempotent)."""
        with self._lock, self._write():
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    self._conn.execute(statement)

    def _now_iso(self) -> str:
        return normalize_date(self._clock())

    @contextmanager
    def _write(self) -> Iterator[None]:
        conn = self._conn
        if conn.in_transaction:  # the caller's transaction: join it
            yield
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            conn.rollback()
            raise
        conn.commit()

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[Triple]:
        cur = self._conn.cursor()
        cur.row_factory = None  # independent of whatever row factory the daemon set
        try:
            rows = cur.execute(sql, args).fetchall()
        finally:
            cur.close()
        return [
            Triple(int(r[0]), r[1], r[2], r[3], r[4], r[5], float(r[6]), r[7], r[8]) for r in rows
        ]

    def _get(self, triple_id: int) -> Triple | None:
        rows = self._rows(f"SELECT {_COLUMNS} FROM {TABLE} WHERE id = ?", (triple_id,))
        return rows[0] if rows else None

    # API -----------------------------------------------------------------------------------------------
    def add(
        self,
        subject: str,
        predicate: str,
        object: str,
        *,
        valid_from: str | None = None,
        confidence: float = 1.0,
        source_drawer: str | None = None,
    ) -> Triple:
        """Record a fact. If the same triple is already open (no ``valid_to``), return that one unchanged.
        A secret or ``<private>`` span in any part of it is redacted before it is stored."""
        subject, predicate, object = (scrub(x) if isinstance(x, str) else x for x in (subject, predicate, object))
        s, p, o = normalize_name(subject), normalize_predicate(predicate), normalize_name(object)
        start = normalize_date(valid_from) if valid_from is not None else None
        if isinstance(confidence, bool) or not isinstance(confidence, int | float):
            raise KGError("confidence must be a number")
        if not 0.0 <= float(confidence) <= 1.0:
            raise KGError(f"confidence must be between 0 and 1, got {confidence}")
        if source_drawer is not None and not source_drawer.strip():
            source_drawer = None
        with self._lock, self._write():
            existing = self._rows(
                f"SELECT {_COLUMNS} FROM {TABLE} WHERE subject = ? AND predicate = ? AND object = ? "
                "AND valid_to IS NULL ORDER BY id LIMIT 1",
                (s, p, o),
            )
            if existing:
                return existing[0]
            cur = self._conn.execute(
                f"INSERT INTO {TABLE} (subject, predicate, object, valid_from, valid_to, confidence, "
                "source_drawer, created_at) VALUES (?, ?, ?, ?, NULL, ?, ?, ?)",
                (s, p, o, start, float(confidence), source_drawer, self._now_iso()),
            )
            new_id = cur.lastrowid
            assert new_id is not None
            triple = self._get(new_id)
        assert triple is not None
        return triple

    def query(
        self,
        subject: str | None = None,
        predicate: str | None = None,
        object: str | None = None,
        *,
        as_of: str | None = None,
        include_expired: bool = False,
    ) -> list[Triple]:
        """Triples matching every given field (case-insensitive), ordered by id.

        By default only triples valid now. ``as_of`` asks about another time instead. With
        ``include_expired`` the end of the interval is ignored: all triples when ``as_of`` is not given,
        or every triple that had started by ``as_of``.
        """
        where: list[str] = []
        args: list[Any] = []
        for column, value in (("subject", subject), ("object", object)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(normalize_name(value))
        if predicate is not None:
            where.append("predicate = ?")
            args.append(normalize_predicate(predicate))
        when = normalize_date(as_of) if as_of is not None else None
        if when is None and not include_expired:
            when = self._now_iso()
        if when is not None:
            where.append("(valid_from IS NULL OR valid_from <= ?)")
            args.append(when)
            if not include_expired:
                where.append("(valid_to IS NULL OR valid_to > ?)")
                args.append(when)
        sql = f"SELECT {_COLUMNS} FROM {TABLE}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        with self._lock:
            return self._rows(sql + " ORDER BY id", tuple(args))

    def invalidate(
        self,
        triple_id: int | None = None,
        *,
        subject: str | None = None,
        predicate: str | None = None,
        object: str | None = None,
        ended: str | None = None,
    ) -> int:
        """Close the interval of matching open triples (``valid_to = ended``, default now).

        Select by id, or by any of subject/predicate/object (at least one is required: there is no
        "invalidate everything"). Rows are never deleted. Returns how many triples were closed.
        Raises ``KGError`` if ``ended`` is before a matching triple's ``valid_from``.
        """
        where = ["valid_to IS NULL"]
        args: list[Any] = []
        if triple_id is not None:
            where.append("id = ?")
            args.append(int(triple_id))
        for column, value in (("subject", subject), ("object", object)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(normalize_name(value))
        if predicate is not None:
            where.append("predicate = ?")
            args.append(normalize_predicate(predicate))
        if len(where) == 1:
            raise KGError("invalidate needs a triple id or at least one of subject, predicate, object")
        end = normalize_date(ended) if ended is not None else self._now_iso()
        cond = " AND ".join(where)
        with self._lock, self._write():
            bad = self._rows(
                f"SELECT {_COLUMNS} FROM {TABLE} WHERE {cond} AND valid_from IS NOT NULL AND valid_from > ?",
                (*args, end),
            )
            if bad:
                raise KGError(
                    f"triple {bad[0].id} starts at {bad[0].valid_from}, after the requested end {end}"
                )
            cur = self._conn.execute(f"UPDATE {TABLE} SET valid_to = ? WHERE {cond}", (end, *args))
            return int(cur.rowcount)

    def added_after(self, after: int, limit: int) -> list[Triple]:
        """Facts recorded after the one numbered ``after``, oldest first (what the sync writes next)."""
        return self._rows(f"SELECT {_COLUMNS} FROM {TABLE} WHERE id > ? ORDER BY id LIMIT ?", (after, limit))

    def timeline(self, entity: str) -> list[Triple]:
        """Every triple (expired too) with ``entity`` as subject or object, oldest first.

        Ordered by ``valid_from``; a triple without one is placed at the time it was recorded.
        """
        name = normalize_name(entity)
        with self._lock:
            return self._rows(
                f"SELECT {_COLUMNS} FROM {TABLE} WHERE subject = ? OR object = ? "
                "ORDER BY COALESCE(valid_from, created_at), id",
                (name, name),
            )

    def stats(self) -> dict[str, int]:
        """Counts: triples, current (valid now), expired, entities, predicates."""
        now = self._now_iso()
        with self._lock:
            cur = self._conn.cursor()
            cur.row_factory = None
            try:
                row = cur.execute(
                    "SELECT COUNT(*),"
                    " SUM(CASE WHEN (valid_from IS NULL OR valid_from <= ?)"
                    "               AND (valid_to IS NULL OR valid_to > ?) THEN 1 ELSE 0 END),"
                    " SUM(CASE WHEN valid_to IS NOT NULL AND valid_to <= ? THEN 1 ELSE 0 END),"
                    f" COUNT(DISTINCT predicate) FROM {TABLE}",
                    (now, now, now),
                ).fetchone()
            finally:
                cur.close()
        return {
            "triples": int(row[0]),
            "current": int(row[1] or 0),
            "expired": int(row[2] or 0),
            "entities": len(self.entities()),
            "predicates": int(row[3]),
        }

    def entities(self) -> list[str]:
        """Distinct subjects and objects (case-insensitively; first spelling recorded), sorted."""
        with self._lock:
            cur = self._conn.cursor()
            cur.row_factory = None
            try:
                rows = cur.execute(
                    f"SELECT subject, id, 0 FROM {TABLE} UNION ALL SELECT object, id, 1 FROM {TABLE} "
                    "ORDER BY 2, 3"
                ).fetchall()
            finally:
                cur.close()
        seen: dict[str, str] = {}  # the first recorded spelling of each name wins
        for name, _, _ in rows:
            seen.setdefault(name.casefold(), name)
        return sorted(seen.values(), key=lambda n: (n.casefold(), n))
