"""The dense stage: give keyword-searchable drawers their dense vector, fresh ones first.

Embedding is the daemon's bottleneck (about 20 chunks of 250 tokens a second on two cores); it runs in a
worker thread (onnxruntime releases the GIL) under a capacity limiter so the event loop never waits on it.
On start, drawers that still lack a dense vector (a crash, a restart mid-backfill) are found in the store
and queued again: the store is the truth, the queue is a cache.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.to_thread

from mempald import logs
from mempald.embed.embedder import Embedder, Vectors
from mempald.ingest.queues import BACKFILL, DenseQueue
from mempald.store.base import Filters, StoreError
from mempald.store.gateway import StoreGateway

log = logs.get("dense")

# At most this many texts per model call and per round (bench/backfill.py, bench/PERF_RESULTS.md):
# onnxruntime's CPU arena keeps the peak of the largest batch for the life of the process (32 texts of 256
# tokens: about 1.5 GB RSS; 8: about 540 MB), throughput on two cores is the same from 4 to 32, and a fresh
# drawer waits behind at most one round (8 texts: about 0.4 s) instead of 32 (1.6 s).
MAX_BATCH = 8


class DenseWorker:
    def __init__(
        self, queue: DenseQueue, store: StoreGateway, embedder: Embedder, batch_size: int, max_tokens: int
    ) -> None:
        self.max_tokens = max_tokens
        self.queue = queue
        self.store = store
        self.embedder = embedder
        self.batch_size = max(1, min(batch_size, MAX_BATCH))
        self.limiter = anyio.CapacityLimiter(1)
        self.embedded = 0
        self.started = time.monotonic()
        self.rate = 0.0  # drawers per second, smoothed
        self.in_flight = 0
        self.hold: Callable[[], bool] = lambda: False  # true: wait before starting the next round

    async def requeue_missing(self) -> int:
        """Queue every drawer in the store that lacks a dense vector (newest first by timestamp)."""
        n = 0
        async for page in self.store.pages(Filters(missing_dense=True)):
            for p in page:
                self.queue.put(p.id, float(p.payload.get("ts") or 0.0), BACKFILL)
            n += len(page)
        return n

    async def run(self) -> None:
        while True:
            await self.queue.wait()
            if self.hold():
                await anyio.sleep(0.02)  # a fresh file is being read: it gets the cores first
                continue
            ids = self.queue.take(self.batch_size)
            if not ids:
                continue
            self.in_flight = len(ids)
            try:
                await self._embed_batch(ids)
            except StoreError as exc:
                log.warning("dense_store_failed", error=str(exc), drawers=len(ids))
                for pid in ids:
                    self.queue.put(pid, 0.0, BACKFILL)
                await anyio.sleep(2.0)
            finally:
                self.in_flight = 0
            if not len(self.queue):
                # Idle now: hand back the memory the model kept for its batches (it grows again if needed).
                await anyio.to_thread.run_sync(self.embedder.release_memory, limiter=self.limiter)

    def _embed(self, payloads: list[Mapping[str, Any]]) -> Vectors:
        texts = [
            self.embedder.with_context(str(p.get("context") or ""), str(p.get("text", "")), self.max_tokens)
            for p in payloads
        ]
        return self.embedder.embed(texts, batch_size=self.batch_size)

    async def drain(self) -> int:
        """Embed everything queued now (for one-off tools and benchmarks; the daemon uses ``run``)."""
        done = 0
        while len(self.queue):
            ids = self.queue.take(self.batch_size)
            await self._embed_batch(ids)
            done += len(ids)
        return done

    async def _embed_batch(self, ids: list[str]) -> None:
        t0 = time.monotonic()
        points = await self.store.retrieve(ids)
        live = [p for p in points if isinstance(p.payload.get("text"), str)]
        if not live:
            return
        vecs = await anyio.to_thread.run_sync(self._embed, [p.payload for p in live], limiter=self.limiter)
        pairs = [(p.id, v.tolist()) for p, v in zip(live, vecs, strict=True)]
        await self.store.set_dense(pairs)
        self.embedded += len(live)
        dt = max(time.monotonic() - t0, 1e-6)
        inst = len(live) / dt
        self.rate = inst if self.rate == 0 else 0.8 * self.rate + 0.2 * inst


