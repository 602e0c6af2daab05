"""The ingest loops: take files from the queue and ingest them, one unit at a time per source lock.

The daemon runs two: one for both lanes and one for the fresh lane only, so an appended exchange never waits
for a backfill file being read (bench/freshness.py). While a fresh file is read (parse, BM25, upsert: a few
hundred ms) the dense worker starts no new round: both cores go to making the new exchange keyword-searchable.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mempald import logs
from mempald.ingest.ingestor import Ingestor
from mempald.ingest.queues import BACKFILL, FRESH, FileQueue
from mempald.sources.catalog import SourceSet
from mempald.sources.registry import Source

log = logs.get("ingest")


class IngestLoops:
    def __init__(self, files: FileQueue, sources: SourceSet, ingestor: Ingestor,
                 on_ingested: Callable[[Source], None] = lambda _s: None) -> None:
        self.files = files
        self.sources = sources
        self.ingestor = ingestor
        self.on_ingested = on_ingested  # told after every file (pack-mode sources re-pack when quiet)
        self.fresh_ingests = 0

    async def run(self, lanes: tuple[int, ...] = (FRESH, BACKFILL)) -> None:
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
            except Exception:
                log.exception("ingest_crashed", path=path_s)
                continue
            finally:
                self.files.active -= 1
                self.fresh_ingests -= lane == FRESH
            if res.more:
                self.files.put(path_s, lane)
            self.on_ingested(source)

    async def run_fresh(self) -> None:
        await self.run((FRESH,))
