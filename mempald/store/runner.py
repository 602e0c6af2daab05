"""The one door to the store: every call runs on one worker thread, never on the event loop.

Qdrant Edge holds the GIL for the whole of every call, so callers keep calls small (batches of 32) and the
loop stays responsive. ``writes`` counts calls that may change counts or facets (``status`` caches those).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from mempald.store.base import Filters, Store, StoredPoint

T = TypeVar("T")


class StoreRunner:
    """Every store call goes through here: one worker thread at a time, never the event loop."""

    # Calls that can change the drawer count or the wing/room facets (``status`` caches those).
    WRITES = frozenset({"upsert", "delete", "set_payload"})

    def __init__(self, store: Store) -> None:
        self.store = store
        self.limiter = anyio.CapacityLimiter(1)
        self.writes = 0  # bumped by every call that may change counts or facets

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        if getattr(fn, "__name__", "") in self.WRITES:
            self.writes += 1
        return await anyio.to_thread.run_sync(fn, *args, limiter=self.limiter)

    @property
    def busy(self) -> bool:
        return self.limiter.borrowed_tokens > 0 or self.limiter.statistics().tasks_waiting > 0

    async def pages(self, filters: Filters, size: int = 500) -> AsyncIterator[list[StoredPoint]]:
        """Every point matching ``filters``, a page at a time (one small store call per page)."""
        offset: str | None = None
        while True:
            page, offset = await self.run(self.store.scroll, filters, size, offset)
            if page:
                yield page
            if offset is None:
                return
