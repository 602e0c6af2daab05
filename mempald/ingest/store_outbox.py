"""The local outbox of a store other machines share (a Qdrant server): while the server does not answer, the
drawers the ingest writes wait here, in the state database, and are written in order when it answers again
(``DrawerWriter.drain``). Nothing lost (a crash keeps them: they are rows of the database), nothing duplicated
(a drawer is one row, by id; the newest version replaces an older one still waiting).

Blocking, on the state database's connection and lock: call it through ``StateGateway.run``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass

from mempald.state.db import State
from mempald.store.base import PointData, SparseVec

SCHEMA = """
CREATE TABLE IF NOT EXISTS store_outbox (
    id TEXT PRIMARY KEY, payload TEXT NOT NULL, sparse TEXT NOT NULL, lane INTEGER NOT NULL, at REAL NOT NULL
)
"""


@dataclass(frozen=True, slots=True)
class Waiting:
    point: PointData
    lane: int
    at: float


class StoreOutbox:
    def __init__(self, state: State) -> None:
        self.state = state
        with state.lock:
            state.conn.execute(SCHEMA)

    def put(self, points: Sequence[PointData], lane: int) -> None:
        now = time.time()
        rows = [(p.id, json.dumps(dict(p.payload)), json.dumps([list(p.sparse.indices), list(p.sparse.values)]),
                 lane, now) for p in points]
        with self.state.lock:
            self.state.conn.execute("BEGIN")
            try:
                self.state.conn.executemany("INSERT OR REPLACE INTO store_outbox VALUES (?, ?, ?, ?, ?)", rows)
                self.state.conn.execute("COMMIT")
            except BaseException:
                self.state.conn.execute("ROLLBACK")
                raise

    def retitle(self, source_path: str, session_id: str, title: str) -> None:
        """The waiting drawers of a session read from ``source_path`` get the title found later in the file."""
        with self.state.lock:
            self.state.conn.execute(
                "UPDATE store_outbox SET payload = json_set(payload, '$.title', ?) WHERE "
                "json_extract(payload, '$.source_path') = ? AND json_extract(payload, '$.session_id') = ?",
                (title, source_path, session_id))

    def take(self, limit: int) -> list[Waiting]:
        """The oldest waiting drawers (they stay until ``done``)."""
        with self.state.lock:
            rows = self.state.conn.execute("SELECT id, payload, sparse, lane, at FROM store_outbox ORDER BY at, rowid "
                                           "LIMIT ?", (limit,)).fetchall()
        out = []
        for pid, payload, sparse, lane, at in rows:
            idx, vals = json.loads(sparse)
            out.append(Waiting(PointData(pid, json.loads(payload), SparseVec(tuple(idx), tuple(vals))), lane, at))
        return out

    def done(self, written: Sequence[Waiting]) -> None:
        """Take written drawers out (a newer version queued meanwhile stays)."""
        with self.state.lock:
            self.state.conn.executemany("DELETE FROM store_outbox WHERE id = ? AND at = ?",
                                        [(w.point.id, w.at) for w in written])

    def __len__(self) -> int:
        with self.state.lock:
            return int(self.state.conn.execute("SELECT COUNT(*) FROM store_outbox").fetchone()[0])
