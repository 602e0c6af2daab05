"""Search: embed the query (dense and BM25) and have the store rank it next to the data (``mempald.search.ranking``
holds the pipeline and its options)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio
import anyio.to_thread

from mempald.embed.embedder import Embedder
from mempald.embed.sparse import Bm25Encoder
from mempald.search.ranking import SearchOptions
from mempald.store.base import Filters, RankRequest
from mempald.store.gateway import StoreGateway


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    limit: int = 10
    filters: Filters = field(default_factory=Filters)
    options: SearchOptions = field(default_factory=SearchOptions)
    now: datetime | None = None  # for relative date words; default: the current time


class Searcher:
    def __init__(self, store: StoreGateway, embedder: Embedder, bm25: Bm25Encoder) -> None:
        self.store = store
        self.embedder = embedder
        self.bm25 = bm25
        self.limiter = anyio.CapacityLimiter(2)

    async def search(self, req: SearchRequest) -> list[dict[str, Any]]:
        return (await self.search_each([req]))[0]

    async def search_each(self, reqs: list[SearchRequest]) -> list[list[dict[str, Any]]]:
        """Several searches of one query (other filters or options): the query is embedded once."""
        query = reqs[0].query.strip() if reqs else ""
        if not query:
            return [[] for _ in reqs]
        if any(r.query.strip() != query for r in reqs):
            raise ValueError("search_each: every request must have the same query")
        dense_vec = (await anyio.to_thread.run_sync(self.embedder.embed_query, query, limiter=self.limiter)).tolist()
        sparse = self.bm25.query(query)
        out = []
        for req in reqs:
            opts = req.options
            now = (req.now or datetime.now(UTC)).timestamp()
            out.append(await self.store.rank(RankRequest(dense_vec, sparse, query, req.filters,
                                                         max(opts.candidates, req.limit), req.limit, opts, now)))
        return out
