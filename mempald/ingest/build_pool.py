"""Drawer building for the backfill in worker processes, so that the keyword pass has both cores.

Building drawers (redaction, rooms, memory types, token counts, chunking) and their keyword vectors is pure
Python: about 70 % of a backfill's keyword pass, all of it under the daemon's one GIL, while the second core
sat idle (``bench/backfill.py --keyword-only``: 100k exchanges, 1.0 core busy on average). The backfill lane
hands that work to a small pool of worker processes (``concurrent.futures.ProcessPoolExecutor``, started with
``spawn``: never a fork of the daemon's threads); the daemon's own process keeps reading, parsing, the store
calls and cursors, and two backfill loops keep a build in flight while the other file is written.

The same functions build the same drawers in a worker as in the daemon (``build_drawers`` with the same token
counter and keyword encoder, loaded once per worker from the model's ``tokenizer.json``); the fresh lane
builds in a thread as before, so an appended exchange never waits for a worker to start. Workers are started
at the first backfill file and stopped once no build has come for ``IDLE_S`` (a daemon at rest holds none). A
worker that dies (killed, out of memory) costs that build nothing: it is built in a thread instead, and the
pool is started again for the next one.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.to_thread

from mempald import logs
from mempald.embed.sparse import Bm25Encoder
from mempald.ingest.drawers import BuildStats, Drawer, SourceInfo, build_drawers, index_text
from mempald.normalize.model import Exchange
from mempald.store.base import SparseVec

log = logs.get("ingest")

IDLE_S = 30.0  # workers stop once no build has come for this long
MIN_EXCHANGES = 4  # fewer than this: built in a thread (a worker's round trip is not worth it)


@dataclass(frozen=True, slots=True)
class BuildSpec:
    """What a worker needs to build drawers exactly as the daemon does."""

    tokenizer: str  # the model's tokenizer.json (the WordPiece counter and its fallback)
    keyword_tokenizer: str  # Bm25Encoder's tokenizer
    max_tokens: int


@dataclass(slots=True)
class Built:
    """Drawers, the redactions made, and each drawer's keyword vector with the context it was encoded with."""

    drawers: list[Drawer]
    redactions: dict[str, int] = field(default_factory=dict)
    sparse: dict[str, tuple[str, SparseVec]] = field(default_factory=dict)  # id -> (index text, vector)


def build(exchanges: Sequence[Exchange], info: SourceInfo, count_tokens: Callable[[str], int], max_tokens: int,
          previous: Mapping[str, str], bm25: Bm25Encoder | None) -> Built:
    """Drawers for ``exchanges`` and (``bm25`` given) their keyword vectors: the work a worker does."""
    stats = BuildStats()
    drawers = build_drawers(exchanges, info, count_tokens, max_tokens, stats, previous)
    out = Built(drawers, stats.redactions)
    if bm25 is not None:
        for d in drawers:
            text = index_text(d.payload)
            out.sparse[d.id] = (text, bm25.document(text))
    return out


# --- the worker's side --------------------------------------------------------------------------------------

_TOOLS: dict[BuildSpec, tuple[Callable[[str], int], Bm25Encoder]] = {}


def _tools(spec: BuildSpec) -> tuple[Callable[[str], int], Bm25Encoder]:
    tools = _TOOLS.get(spec)
    if tools is None:
        from tokenizers import Tokenizer

        from mempald.embed.wordpiece import WordPieceCounter

        tok = Tokenizer.from_file(spec.tokenizer)
        tok.no_truncation()
        tok.no_padding()

        def rust_count(text: str) -> int:
            return len(tok.encode(text, add_special_tokens=False).ids)

        counter = WordPieceCounter.from_file(Path(spec.tokenizer), rust_count)
        tools = (counter.count if counter is not None else rust_count, Bm25Encoder(spec.keyword_tokenizer))
        _TOOLS[spec] = tools
    return tools


def build_in_worker(spec: BuildSpec, exchanges: Sequence[Exchange], info: SourceInfo,
                    previous: Mapping[str, str]) -> Built:
    count, bm25 = _tools(spec)
    return build(exchanges, info, count, spec.max_tokens, previous, bm25)


def _watch_parent(parent: int) -> None:
    """A worker exits once the daemon is gone (killed, say): nothing would ever hand it work again, and its call
    queue's pipe stays open in the worker itself, so it would not see the end of it."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(0)


def _start_worker(spec: BuildSpec, parent: int) -> None:
    """A worker's start: watch the daemon, and load the counter and the encoder before the first build."""
    threading.Thread(target=_watch_parent, args=(parent,), name="parent-watch", daemon=True).start()
    _tools(spec)


# --- the daemon's side --------------------------------------------------------------------------------------


class BuildPool:
    """Worker processes for the backfill's drawer building, started on demand and stopped when idle."""

    def __init__(self, spec: BuildSpec, workers: int) -> None:
        self.spec = spec
        self.workers = max(0, workers)
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._last = 0.0
        self._running = 0
        self.builds = 0  # builds done by workers (status, tests)
        self.fallbacks = 0  # builds a broken pool handed back to a thread

    @property
    def enabled(self) -> bool:
        return self.workers > 0

    @property
    def started(self) -> bool:
        return self._pool is not None

    def _executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                ctx = multiprocessing.get_context("spawn")
                self._pool = ProcessPoolExecutor(self.workers, mp_context=ctx, initializer=_start_worker,
                                                 initargs=(self.spec, os.getpid()))
                log.info("build_workers_started", workers=self.workers)
            return self._pool

    async def build(self, exchanges: Sequence[Exchange], info: SourceInfo,
                    previous: Mapping[str, str]) -> Built | None:
        """The drawers built by a worker; None when no worker could (the caller builds them itself)."""
        self._running += 1
        self._last = time.monotonic()
        try:
            pool = await anyio.to_thread.run_sync(self._executor)
            future: Future[Built] = pool.submit(build_in_worker, self.spec, list(exchanges), info, dict(previous))
            built = await anyio.to_thread.run_sync(future.result, abandon_on_cancel=True)
        except BrokenProcessPool as exc:
            self.fallbacks += 1
            log.warning("build_worker_failed", error=str(exc) or "a worker died")
            self._discard()
            return None
        finally:
            self._running -= 1
            self._last = time.monotonic()
        self.builds += 1
        return built

    def _discard(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    async def run(self) -> None:
        """Stop the workers once no build has come for ``IDLE_S`` (the daemon's loop)."""
        while True:
            await anyio.sleep(IDLE_S / 4)
            if self._pool is not None and not self._running and time.monotonic() - self._last >= IDLE_S:
                await anyio.to_thread.run_sync(self.close)
                log.info("build_workers_stopped", idle_s=IDLE_S)

    def close(self) -> None:
        """Stop the workers (waiting for them to exit)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
