"""Pack-mode sources: re-pack a markdown folder once it has been quiet for a moment (event-driven)."""

from __future__ import annotations

import functools
import time

import anyio
import anyio.to_thread

from mempald import logs
from mempald.embed.embedder import Embedder
from mempald.features.pack.progress import PackRuns
from mempald.features.pack.run import run_pack
from mempald.ingest.queues import FileQueue
from mempald.sources.catalog import SourceSet
from mempald.sources.roots import Source

log = logs.get("pack")


class PackWatcher:
    def __init__(self, sources: SourceSet, files: FileQueue, embedder: Embedder, limiter: anyio.CapacityLimiter,
                 runs: PackRuns, quiet_s: float = 2.0) -> None:
        self.sources = sources
        self.runs = runs  # re-packs show in ``pack_progress`` like ``pack`` calls
        self.files = files
        self.embedder = embedder
        self.limiter = limiter  # the embedding limiter: a re-pack waits for the dense worker's batch
        self.quiet_s = quiet_s
        self.pending: dict[str, float] = {}

    def changed(self, source: Source) -> None:
        """A file of ``source`` was ingested: re-pack it once things are quiet."""
        if source.mode == "pack":
            self.pending.setdefault(source.key, time.monotonic())

    async def run(self) -> None:
        while True:
            await anyio.sleep(0.5)
            now = time.monotonic()
            for key, since in list(self.pending.items()):
                if now - since < self.quiet_s or self.files.pending():
                    continue
                del self.pending[key]
                source = self.sources.by_key(key)
                if source is None:
                    continue
                progress = self.runs.start(str(source.root), f"watch:{key}")
                try:
                    job = functools.partial(run_pack, self.embedder, source.root, source.pack_output(),
                                            token_budget=source.token_budget, progress=progress)
                    res = await anyio.to_thread.run_sync(job, limiter=self.limiter)
                    log.info("repacked", source=key, paths=res["paths"],
                             skipped={x["file"]: x["reason"] for x in res["skipped"]})
                except Exception as exc:
                    log.warning("pack_failed", source=key, error=str(exc))
                finally:
                    self.runs.finish(progress)
