"""Keyword vectors re-encoded with the current BM25 tokenizer, in place (``reindex`` of a palace built with
another tokenizer): the payloads and the dense vectors stay as they are.

The store's metadata records the tokenizer its keyword vectors were made with (``tokenizer``, beside ``model``
and ``dim``; a store without the record was made by ``english``). A running re-encode keeps its progress there
too (``keywords_reindex``: the tokenizer it encodes with, the scroll offset of the next page, the drawers done),
written after every page, so a daemon stopped or killed mid-way resumes where it was when it starts again.
Drawers written meanwhile are encoded by the current tokenizer already; re-encoding a page twice is harmless.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from mempald import logs
from mempald.embed.sparse import LEGACY_TOKENIZER, META_KEY, Bm25Encoder
from mempald.ingest.drawers import index_text
from mempald.store.base import Filters, SparseVec, StoredPoint, StoreError
from mempald.store.gateway import StoreGateway

log = logs.get("keywords")
T = TypeVar("T")

PENDING_KEY = "keywords_reindex"
PAGE = 64
RETRY_S = (1.0, 30.0)  # first and longest wait after a failed write


def recorded_tokenizer(meta: dict[str, Any]) -> str:
    """The tokenizer the store's keyword vectors were made with."""
    value = meta.get(META_KEY)
    return value if isinstance(value, str) and value else LEGACY_TOKENIZER


class KeywordReindex:
    def __init__(self, store: StoreGateway, bm25: Bm25Encoder) -> None:
        self.store = store
        self.bm25 = bm25
        self._wake = anyio.Event()
        self.done = 0  # drawers re-encoded by this process
        self.warning = ""  # for status: the keyword vectors are another tokenizer's and no re-encode is running

    def stale(self, meta: dict[str, Any]) -> bool:
        return recorded_tokenizer(meta) != self.bm25.tokenizer

    async def start(self) -> int:
        """Begin re-encoding every drawer (from the first page); returns how many there are."""
        meta = await self.store.get_meta()
        meta[PENDING_KEY] = {"to": self.bm25.tokenizer, "offset": None, "done": 0, "started_at": time.time()}
        await self.store.set_meta(meta)
        n = await self.store.count(Filters(include_deleted=True))
        self._wake.set()
        return n

    async def run(self) -> None:
        """The daemon's loop: at start, resume an unfinished re-encode or say that the keyword vectors are stale;
        then wait for ``start``."""
        if not await self.store.reached():  # (a server away since the start: once it answers)
            return
        meta = await self.store.get_meta()
        if PENDING_KEY not in meta and meta and self.stale(meta):
            log.warning("keyword_tokenizer_stale", recorded=recorded_tokenizer(meta), current=self.bm25.tokenizer,
                        message="keyword vectors were made by another tokenizer: run `mempal reindex`")
            self.warning = (f"keyword vectors were made by the {recorded_tokenizer(meta)!r} tokenizer, new text is "
                            f"encoded with {self.bm25.tokenizer!r}: run `mempal reindex` to re-encode them")
        while True:
            meta = await self.store.get_meta()
            if PENDING_KEY in meta:
                await self._finish()
            await self._wake.wait()
            self._wake = anyio.Event()

    async def _finish(self) -> None:
        meta = await self.store.get_meta()
        job = dict(meta.get(PENDING_KEY) or {})
        offset = job.get("offset") if job.get("to") == self.bm25.tokenizer else None
        done = int(job.get("done") or 0) if offset else 0
        log.info("keyword_reindex_started", tokenizer=self.bm25.tokenizer, resumed_at=done)
        self.warning = ""
        while True:
            page, nxt = await self._retry(self.store.scroll, Filters(include_deleted=True), PAGE, offset)
            vectors = await anyio.to_thread.run_sync(self._encode, page)
            await self._retry(self.store.set_sparse, vectors)
            done += len(page)
            self.done += len(page)
            offset = nxt
            meta = await self.store.get_meta()
            if offset is None:
                meta.pop(PENDING_KEY, None)
                meta.update({META_KEY: self.bm25.tokenizer, "keywords_reindexed_at": time.time()})
                await self._retry(self.store.set_meta, meta)
                log.info("keyword_reindex_done", tokenizer=self.bm25.tokenizer, drawers=done)
                return
            meta[PENDING_KEY] = {**job, "to": self.bm25.tokenizer, "offset": offset, "done": done}
            await self._retry(self.store.set_meta, meta)

    def _encode(self, page: list[StoredPoint]) -> list[tuple[str, SparseVec]]:
        return [(p.id, self.bm25.document(index_text(p.payload))) for p in page]

    async def _retry(self, call: Callable[..., Awaitable[T]], *args: Any) -> T:
        """``call(*args)`` until it succeeds: a full disk or a restarting store process delays the re-encode."""
        wait = RETRY_S[0]
        while True:
            try:
                return await call(*args)
            except StoreError as exc:
                log.warning("keyword_reindex_retry", error=str(exc), wait_s=wait)
                await anyio.sleep(wait)
                wait = min(RETRY_S[1], wait * 2)
