"""The ingest loops: take files from the queue and ingest them, one unit at a time per source lock.

The daemon runs two: one for both lanes and one for the fresh lane only, so an appended exchange never waits
for a backfill file being read (bench/freshness.py). While a fresh file is read (parse, BM25, upsert: a few
hundred ms) the dense worker starts no new round: both cores go to making the new exchange keyword-searchable.

A file whose read failed for a passing reason (the store or the state database failing on a full disk, an
``ENOSPC``/``EIO`` read) is read again after a pause doubling from 0.5 s to 30 s, as store writes are retried:
it lands soon after space returns instead of waiting for the periodic scan.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import anyio
from anyio.abc import TaskGroup

from mempald import logs
from mempald.errors import Busy, MempalError
from mempald.ingest.ingestor import Ingestor
from mempald.ingest.queues import BACKFILL, FRESH, FileQueue
from mempald.sources.catalog import SourceSet
from mempald.sources.roots import Source
from mempald.store.base import StoreError

log = logs.get("ingest")

RETRY_FIRST_S = 0.5
RETRY_MAX_S = 30.0
RETRY_REMEMBERED = 10_000
PASSING = (StoreError, MempalError, sqlite3.OperationalError)  # expected while the disk is full: no traceback


class IngestLoops:
    def __init__(self, files: FileQueue, sources: SourceSet, ingestor: Ingestor,
                 on_ingested: Callable[[Source], None] = lambda _s: None) -> None:
        self.files = files
        self.sources = sources
        self.ingestor = ingestor
        self.on_ingested = on_ingested  # told after every file (pack-mode sources re-pack when quiet)
        self.fresh_ingests = 0
        self._delays: dict[str, float] = {}  # the next pause of a file whose last read failed
        self._waiting: set[str] = set()  # files waiting out that pause

    async def run(self, lanes: tuple[int, ...] = (FRESH, BACKFILL)) -> None:
        async with anyio.create_task_group() as retries:
            while True:
                path_s, lane = await self.files.get(lanes)
                path = Path(path_s)
                source = self.sources.source_for(path)
                if source is None or not source.wants(path):
                    continue
                self.files.active += 1
                self.fresh_ingests += lane == FRESH
                try:
                    res = await self.ingestor.ingest_path(path, source, lane)
                except Busy:
                    continue  # another task reads it now
                except Exception as exc:  # the store or the state database failed (a full disk...): read it again
                    self._retry(retries, path_s, lane, exc)
                    continue
                finally:
                    self.files.active -= 1
                    self.fresh_ingests -= lane == FRESH
                if res.retry:
                    self._retry(retries, path_s, lane, res.error)
                    continue
                self._delays.pop(path_s, None)
                if res.more:
                    self.files.put(path_s, lane)
                self.on_ingested(source)

    def _retry(self, tg: TaskGroup, path: str, lane: int, why: BaseException | str) -> None:
        """A file that failed for a passing reason is read again after a pause doubling from 0.5 s to 30 s (as
        store writes are retried), not left for the next periodic scan: it lands soon after space returns."""
        if path in self._waiting:
            return
        delay = self._delays.get(path, RETRY_FIRST_S)
        self._delays[path] = min(delay * 2, RETRY_MAX_S)
        if len(self._delays) > RETRY_REMEMBERED:
            self._delays.clear()
        if isinstance(why, BaseException) and not isinstance(why, PASSING) and delay == RETRY_FIRST_S:
            log.exception("ingest_crashed", path=path, retry_in_s=delay)  # the traceback once per failing run
        else:
            log.warning("ingest_retry", path=path, error=str(why)[:300], retry_in_s=delay)
        self._waiting.add(path)
        tg.start_soon(self._put_later, path, lane, delay)

    async def _put_later(self, path: str, lane: int, delay: float) -> None:
        try:
            await anyio.sleep(delay)
        finally:
            self._waiting.discard(path)
        self.files.put(path, lane)

    async def run_fresh(self) -> None:
        await self.run((FRESH,))
