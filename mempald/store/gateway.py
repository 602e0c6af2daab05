"""The daemon's one door to its store: a typed async call for every store operation, never on the event loop.

Every call runs on one worker thread at a time (Qdrant Edge holds the GIL for a whole call, and a store is
not asked two things at once), so callers keep calls small (batches of 32) and the loop stays responsive.
``writes`` counts the calls that may change the drawer count or the wing/room facets (``status`` caches those
figures until it moves); it is bumped by the write methods themselves, by name of what they do.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from mempald.store.base import (
    Fields,
    Filters,
    Hit,
    PointData,
    RankRequest,
    SparseVec,
    Store,
    StoredPoint,
    StoreError,
    StoreUnreachable,
)
from mempald.text.redact import scrub_fields

T = TypeVar("T")

# Every text written to the store passes here and is scrubbed (secrets redacted, <private> spans dropped): session
# titles, git branches, working directories, wings, delete reasons... (issue #47 H5). Not these: the drawer's text
# and context, redacted when the drawer is built as ``ingest.redact_secrets`` says, and the identifiers and paths
# that other records and lookups hold as they are (a forget rule's session, a cursor's path, the file gate's paths).
UNSCRUBBED = frozenset({"text", "context", "session_id", "exchange_key", "parent_exchange", "parent_id",
                        "source_path", "source_key", "files", "content_hash", "timestamp", "filed_at", "deleted_at",
                        "machine", "user"})


def scrubbed(points: Sequence[PointData]) -> list[PointData]:
    return [replace(p, payload=scrub_fields(p.payload, UNSCRUBBED)) for p in points]


class StoreGateway:
    def __init__(self, store: Store, *, shared: bool = False) -> None:
        self.store = store
        self.limiter = anyio.CapacityLimiter(1)
        self.writes = 0
        # Other daemons (one per machine) write the same collection (a Qdrant server): ``writes`` does not see
        # their changes, so figures cached on it expire by time too (``features.status``).
        self.shared = shared

    @property
    def location(self) -> str:
        return self.store.location

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        return await anyio.to_thread.run_sync(fn, *args, limiter=self.limiter)

    async def reached(self, every_s: float = 5.0, *, wait: bool = True) -> bool:
        """Wait until the store answers: at once, but a server away since the start is asked again every
        ``every_s`` (each call reaches for it). False: it answered and a start-up check refused it (the log and
        ``status`` say why), or (``wait=False``) it did not answer the one call made."""
        while True:
            try:
                await self.get_meta()
                return True
            except StoreUnreachable:
                if not wait:
                    return False
                await anyio.sleep(every_s)
            except StoreError:
                return False

    async def exclusive(self, job: Callable[[], T], *, writes: bool = False) -> T:
        """Run ``job`` (blocking) on the store's thread with nothing else in between: a migration's copy, the
        steps of an index rebuild. ``writes``: it may change counts or facets."""
        if writes:
            self.writes += 1
        return await self._run(job)

    # writes --------------------------------------------------------------------------------------------
    async def upsert(self, points: Sequence[PointData]) -> None:
        self.writes += 1
        await self._run(lambda: self.store.upsert(scrubbed(points)))

    async def delete(self, filters: Filters) -> None:
        self.writes += 1
        await self._run(self.store.delete, filters)

    async def set_payload(self, ids: Sequence[str], payload: Mapping[str, Any]) -> None:
        self.writes += 1
        await self._run(lambda: self.store.set_payload(ids, scrub_fields(payload, UNSCRUBBED)))

    async def set_dense(self, vectors: Sequence[tuple[str, Sequence[float]]]) -> None:
        await self._run(self.store.set_dense, vectors)  # adds vectors only: counts and facets stay

    async def set_sparse(self, vectors: Sequence[tuple[str, SparseVec]]) -> None:
        await self._run(self.store.set_sparse, vectors)  # re-encoded keyword vectors: counts and facets stay

    async def clear_dense(self, ids: Sequence[str]) -> None:
        await self._run(self.store.clear_dense, ids)

    async def set_meta(self, meta: Mapping[str, Any]) -> None:
        await self._run(self.store.set_meta, meta)

    # reads ---------------------------------------------------------------------------------------------
    async def retrieve(self, ids: Sequence[str], *, with_vectors: bool = False,
                       with_payload: bool = True) -> list[StoredPoint]:
        return await self._run(lambda: self.store.retrieve(ids, with_vectors=with_vectors, with_payload=with_payload))

    async def query(self, dense: Sequence[float] | None, sparse: SparseVec | None, filters: Filters,
                    limit: int) -> tuple[list[Hit], list[Hit]]:
        return await self._run(self.store.query, dense, sparse, filters, limit)

    async def rank(self, request: RankRequest) -> list[dict[str, Any]]:
        return await self._run(self.store.rank, request)

    async def scroll(self, filters: Filters, limit: int, offset: str | None = None, *,
                     with_vectors: bool = False, fields: Fields = None) -> tuple[list[StoredPoint], str | None]:
        return await self._run(lambda: self.store.scroll(filters, limit, offset, with_vectors=with_vectors,
                                                         fields=fields))

    async def count(self, filters: Filters) -> int:
        return await self._run(self.store.count, filters)

    async def facet(self, key: str, filters: Filters, limit: int = 1000) -> dict[str, int]:
        return await self._run(self.store.facet, key, filters, limit)

    async def get_meta(self) -> dict[str, Any]:
        return await self._run(self.store.get_meta)

    async def flush(self) -> None:
        await self._run(self.store.flush)

    async def pages(self, filters: Filters, size: int = 500) -> AsyncIterator[list[StoredPoint]]:
        """Every point matching ``filters``, a page at a time (one small store call per page)."""
        offset: str | None = None
        while True:
            page, offset = await self.scroll(filters, size, offset)
            if page:
                yield page
            if offset is None:
                return
