"""The dense stage: give keyword-searchable drawers their dense vector, fresh ones first.

Embedding is the daemon's bottleneck (about 35 chunks of 250 tokens a second on two Xeon cores); it runs in a
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
import numpy as np

from mempald import logs
from mempald.embed.embedder import MAX_SEQ_LEN, Embedder, Vectors, length_batches
from mempald.ingest.queues import BACKFILL, DenseQueue
from mempald.store.base import Filters, StoreError
from mempald.store.edge_files import UNIT_TOLERANCE
from mempald.store.gateway import StoreGateway

log = logs.get("dense")

# Model calls are sized by tokens, not by a count of texts (bench/backfill.py, bench/PERF_RESULTS.md).
# onnxruntime's CPU arena keeps the peak of the largest batch for the life of the process (32 texts of 256
# tokens: about 1.5 GB RSS; 8: about 540 MB), and fastembed pads a batch to its longest text. So a round takes
# up to WINDOW backfill drawers, sorts them by length and embeds them in batches of at most ``batch_size``
# full-length texts' worth of padded tokens (``batch_size`` x 256; the default 2: the model's fused graph is as
# fast at 2-4 full texts a call as at 8, and a call of short texts still holds up to ``COUNT_FACTOR`` x
# ``batch_size`` of them). Between two batches a fresh drawer (or a fresh file being read) sends the rest of the
# window back to the queue, so it waits behind one batch (about 0.1 s), not a window.
MAX_BATCH = 8
COUNT_FACTOR = 8
WINDOW = 64
# The check of stored dense vectors at start (``drop_damaged``): a cosine store keeps every vector normalized,
# so one not finite or not of unit length is damaged (random bytes in the vector storage made searches return
# scores of 1e37); a few drawers are also embedded again and compared with what is stored.
SAMPLE = 4
SAMPLE_MIN_COSINE = 0.9
CHECK_PAGE = 500


class DenseWorker:
    def __init__(
        self, queue: DenseQueue, store: StoreGateway, embedder: Embedder, batch_size: int, max_tokens: int
    ) -> None:
        self.max_tokens = max_tokens
        self.queue = queue
        self.store = store
        self.embedder = embedder
        self.batch_size = max(1, min(batch_size, MAX_BATCH))  # full-length texts per model call
        self.window = WINDOW
        self.limiter = anyio.CapacityLimiter(1)
        self.embedded = 0
        self.started = time.monotonic()
        self.rate = 0.0  # drawers per second, smoothed
        self.in_flight = 0
        self.warning = ""  # damaged dense vectors found at start (``drop_damaged``), for ``status``
        self.hold: Callable[[], bool] = lambda: False  # true: wait before starting the next round
        # true while the backfill's files are being read: only fresh drawers are embedded meanwhile, so the
        # keyword pass has the cores (it is GIL-bound Python; the model took half of them, bench/backfill.py)
        self.reading: Callable[[], bool] = lambda: False

    async def drop_damaged(self) -> int:
        """Find stored dense vectors that are damaged (not finite, not of unit length, or far from what the model
        makes of a sampled drawer's text), drop them and queue those drawers: they are embedded again from their
        text. ``warning`` says so in ``status``. Returns how many were dropped. A store that fails a read here
        (damaged payload pages, say) says so itself: the check stops."""
        bad: list[str] = []
        sound: list[tuple[str, np.ndarray]] = []
        checked = 0
        offset: str | None = None
        try:
            while True:
                page, offset = await self.store.scroll(Filters(include_deleted=True), CHECK_PAGE, offset,
                                                       with_vectors=True, fields=("ts",))
                for p in page:
                    if p.dense is None:
                        continue
                    checked += 1
                    vec = np.asarray(p.dense, dtype=np.float64)
                    if not np.all(np.isfinite(vec)) or abs(float(np.linalg.norm(vec)) - 1.0) > UNIT_TOLERANCE:
                        bad.append(p.id)
                    elif len(sound) < SAMPLE:
                        sound.append((p.id, vec))
                if offset is None:
                    break
            bad += await self._sample_mismatch(sound)
            if bad:
                await self.store.clear_dense(bad)
        except StoreError as exc:
            log.warning("dense_check_stopped", error=str(exc), checked=checked)
            return 0
        if bad:
            for pid in bad:
                self.queue.put(pid, 0.0, BACKFILL)
            self.warning = (f"{len(bad)} of {checked} drawers had damaged dense vectors in the store (not finite, "
                            "not of unit length, or not what the model makes of their text): they are embedded "
                            "again from their text; if this recurs, stop mempald and run `mempald doctor`")
            log.error("dense_vectors_damaged", drawers=len(bad), checked=checked, first=bad[:5],
                      message=self.warning)
        return len(bad)

    async def _sample_mismatch(self, sample: list[tuple[str, np.ndarray]]) -> list[str]:
        """Ids of sampled drawers whose stored vector is far from what the model makes of their text now."""
        if not sample:
            return []
        points = {p.id: p for p in await self.store.retrieve([pid for pid, _ in sample])}
        kept = [(pid, vec) for pid, vec in sample if pid in points]
        if not kept:
            return []
        texts = [self.embedder.with_context(str(points[pid].payload.get("context") or ""),
                                            str(points[pid].payload.get("text", "")), self.max_tokens)
                 for pid, _ in kept]
        fresh = await anyio.to_thread.run_sync(self._embed, texts, limiter=self.limiter)
        return [pid for (pid, vec), new in zip(kept, fresh, strict=True)
                if float(np.dot(vec, np.asarray(new, dtype=np.float64))) < SAMPLE_MIN_COSINE]

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
            fresh = self.queue.fresh_waiting()
            if not fresh and self.reading():
                await anyio.sleep(0.05)
                continue
            ids = self._take_fresh() if fresh else self.queue.take(self.window)
            if not ids:
                continue
            self.in_flight = len(ids)
            try:
                await self._embed_round(ids, yield_to_fresh=not fresh)
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

    def _take_fresh(self) -> list[str]:
        """Only fresh drawers, at most one batch of them: they do not wait for a window of the backfill."""
        ids: list[str] = []
        while len(ids) < self.batch_size * COUNT_FACTOR and self.queue.fresh_waiting():
            ids.extend(self.queue.take(1))
        return ids

    def _texts(self, payloads: list[Mapping[str, Any]]) -> tuple[list[str], list[list[int]]]:
        """The texts the model reads (drawer text after as much context as fits) and their batches."""
        texts = [
            self.embedder.with_context(str(p.get("context") or ""), str(p.get("text", "")), self.max_tokens)
            for p in payloads
        ]
        batches = length_batches(self.embedder.count_tokens_batch(texts), self.batch_size * COUNT_FACTOR,
                                 self.batch_size * MAX_SEQ_LEN)
        return texts, batches

    def _embed(self, texts: list[str]) -> Vectors:
        return self.embedder.embed(texts, batch_size=len(texts))

    async def drain(self) -> int:
        """Embed everything queued now (for one-off tools and benchmarks; the daemon uses ``run``)."""
        done = 0
        while len(self.queue):
            ids = self.queue.take(max(self.window, self.batch_size))
            await self._embed_round(ids, yield_to_fresh=False)
            done += len(ids)
        return done

    async def _embed_round(self, ids: list[str], *, yield_to_fresh: bool) -> None:
        points = await self.store.retrieve(ids)
        live = [p for p in points if isinstance(p.payload.get("text"), str)]
        if not live:
            return
        texts, batches = await anyio.to_thread.run_sync(self._texts, [p.payload for p in live],
                                                        limiter=self.limiter)
        left = len(ids)
        for n, batch in enumerate(batches):
            if n and yield_to_fresh and (self.queue.fresh_waiting() or self.hold() or self.reading()):
                rest = [live[i] for b in batches[n:] for i in b]
                for p in rest:  # back to the queue, in their place: the fresh drawers go first
                    self.queue.put(p.id, float(p.payload.get("ts") or 0.0), BACKFILL)
                return
            t0 = time.monotonic()
            vecs = await anyio.to_thread.run_sync(self._embed, [texts[i] for i in batch], limiter=self.limiter)
            await self.store.set_dense([(live[i].id, v.tolist()) for i, v in zip(batch, vecs, strict=True)])
            self.embedded += len(batch)
            left -= len(batch)
            self.in_flight = max(0, left)
            dt = max(time.monotonic() - t0, 1e-6)
            inst = len(batch) / dt
            self.rate = inst if self.rate == 0 else 0.8 * self.rate + 0.2 * inst
