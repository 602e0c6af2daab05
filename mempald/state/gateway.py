"""The daemon's one door to its state database: a typed async call for what callers do, never on the event loop.

``State`` (``db.py``) is blocking SQLite behind one lock; every call here runs it on one worker thread at a time
(a ``CapacityLimiter(1)``: the lock lets one call in at a time anyway, so a second thread would only wait), the
way ``mempald.store.gateway.StoreGateway`` runs the store. The knowledge graph, the cowork inbox and the forget
list keep their tables on the same connection with the same lock: their sync cores run here too (``run``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from mempald.state.db import Cursor, SourceFigures, State

T = TypeVar("T")


class StateGateway:
    def __init__(self, db: State) -> None:
        self.db = db
        self.limiter = anyio.CapacityLimiter(1)

    @property
    def path(self) -> Path:
        return self.db.path

    @property
    def damaged(self) -> str:
        """Why the database looks damaged ("" while nothing says so): read without a thread (an attribute)."""
        return self.db.damaged

    async def run(self, job: Callable[[], T]) -> T:
        """Run ``job`` (blocking, on the database's connection: the knowledge graph, the inbox, the forget list)
        on the database's thread."""
        return await anyio.to_thread.run_sync(job, limiter=self.limiter)

    # cursors -------------------------------------------------------------------------------------------
    async def get_cursor(self, path: str) -> Cursor | None:
        return await self.run(lambda: self.db.get_cursor(path))

    async def put_cursor(self, cursor: Cursor) -> None:
        await self.run(lambda: self.db.put_cursor(cursor))

    async def drop_cursor(self, path: str) -> None:
        await self.run(lambda: self.db.drop_cursor(path))

    # counters ------------------------------------------------------------------------------------------
    async def bump(self, source: str, name: str, by: int = 1) -> None:
        if by:
            await self.run(lambda: self.db.bump(source, name, by))

    async def counters(self) -> dict[str, dict[str, int]]:
        return await self.run(self.db.counters)

    async def figures(self) -> tuple[dict[str, SourceFigures], dict[str, dict[str, int]]]:
        """What ``status`` shows of the database: the figures per source and the counters, in one call."""
        return await self.run(lambda: (self.db.source_figures(), self.db.counters()))

    # audit ---------------------------------------------------------------------------------------------
    async def audit(self, actor: str, action: str, target: str, reason: str = "", **detail: Any) -> None:
        await self.run(lambda: self.db.audit(actor, action, target, reason, **detail))

    async def audit_log(self, limit: int = 100, *, since: float | None = None,
                        actions: tuple[str, ...] = ()) -> list[dict[str, Any]]:
        return await self.run(lambda: self.db.audit_log(limit, since=since, actions=actions))
