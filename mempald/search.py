"""Search requests: parse the filters and times, embed the query, and rank next to the store
(``mempald.ranking`` holds the pipeline and its options)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio.to_thread

from client.protocol import INVALID_PARAMS, RpcError
from mempald.embed import Embedder
from mempald.ranking import SearchOptions, rank
from mempald.sparse import Bm25Encoder
from mempald.store.base import Filters
from mempald.store.runner import StoreRunner


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    limit: int = 10
    filters: Filters = field(default_factory=Filters)
    options: SearchOptions = field(default_factory=SearchOptions)
    now: datetime | None = None  # for relative date words; default: the current time


def parse_time(value: Any, name: str) -> float | None:
    """ISO date/datetime, epoch seconds, or a relative age like ``7d``, ``12h``, ``30m``."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str):
        raise RpcError(INVALID_PARAMS, f"{name}: expected a date string or epoch seconds")
    v = value.strip()
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    if len(v) > 1 and v[-1] in units and v[:-1].isdigit():
        return time.time() - int(v[:-1]) * units[v[-1]]
    try:
        dt = datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        raise RpcError(
            INVALID_PARAMS, f"{name}: {value!r} is not an ISO date, epoch seconds or an age like 7d"
        ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


class Searcher:
    def __init__(self, runner: StoreRunner, embedder: Embedder, bm25: Bm25Encoder) -> None:
        self.runner = runner
        self.embedder = embedder
        self.bm25 = bm25
        self.limiter = anyio.CapacityLimiter(2)

    async def search(self, req: SearchRequest) -> list[dict[str, Any]]:
        query = req.query.strip()
        if not query:
            return []
        dense_vec = await anyio.to_thread.run_sync(self.embedder.embed_query, query, limiter=self.limiter)
        sparse_vec = self.bm25.query(query)
        opts = req.options
        k = max(opts.candidates, req.limit)
        args = (dense_vec.tolist(), sparse_vec, query, req.filters, k, req.limit, opts, req.now or datetime.now(UTC))
        store = self.runner.store
        # The daemon's embedded store ranks in its own process: only the final hits cross the socket pair.
        ranked_there = getattr(store, "rank", None)
        if ranked_there is not None:
            return await self.runner.run(ranked_there, *args)
        return await self.runner.run(rank, store, *args)
