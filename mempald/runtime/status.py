"""``status``: what the daemon holds and how far behind it is, cheap enough to ask many times a second."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anyio.to_thread

from mempald import __version__
from mempald.config import data_dir
from mempald.embed.embedder import Embedder
from mempald.features.keyword_reindex import KeywordReindex
from mempald.ingest.dense import DenseWorker
from mempald.ingest.ingestor import Ingestor
from mempald.ingest.queues import DenseQueue, FileQueue
from mempald.sources.catalog import SourceSet
from mempald.sources.scan import Scanner
from mempald.state.db import SourceFigures, State
from mempald.store.base import Filters
from mempald.store.gateway import StoreGateway
from mempald.store.hosted import HostedEdgeStore
from mempald.store.maintenance import IndexMaintainer
from mempald.store.space import SpaceGuard


class StatusReport:
    def __init__(self, *, store: StoreGateway, state: State, embedder: Embedder, sources: SourceSet,
                 scanner: Scanner, files: FileQueue, dense: DenseQueue, densifier: DenseWorker, ingestor: Ingestor,
                 index: IndexMaintainer, machine: str, space: SpaceGuard | None = None,
                 hosted: HostedEdgeStore | None = None, keywords: KeywordReindex | None = None) -> None:
        self.store = store
        self.state = state
        self.embedder = embedder
        self.sources = sources
        self.scanner = scanner
        self.files = files
        self.dense = dense
        self.densifier = densifier
        self.ingestor = ingestor
        self.index = index
        self.machine = machine
        self.space = space  # the disk-space guard (None: a store on a server)
        self.hosted = hosted  # the embedded store's process (it says when its files look damaged)
        self.keywords = keywords  # keyword vectors of another tokenizer (it says so until reindex runs)
        self.started_at = time.time()
        self.ready = False
        self._store_cache: tuple[int, float, tuple[int, dict[str, int], dict[str, int]]] | None = None
        self._state_cache: tuple[float, tuple[dict[str, SourceFigures], dict[str, dict[str, int]]]] | None = None
        self._state_cost = 0.0  # seconds the last read of the state figures took

    def idle(self) -> bool:
        """Nothing queued or in flight: every file read, every drawer embedded."""
        return not (len(self.dense) or self.densifier.in_flight or len(self.files) or self.files.active)

    async def _store_figures(self, busy: bool) -> tuple[int, dict[str, int], dict[str, int]]:
        """Drawer count and wing/room facets. Exact facets cost tens of ms at 100k drawers and would queue
        behind the store's other work, so they are cached and recomputed only after a write; while the daemon
        is reading files (``busy``) the cached figures are served for up to a second, or longer while the store is
        in use. When nothing is queued they are always exact."""
        cached = self._store_cache
        writes = self.store.writes
        if cached is not None and cached[0] == writes:
            return cached[2]
        if cached is not None and busy and (time.monotonic() - cached[1] < 1.0 or self.store.busy):
            return cached[2]
        total = await self.store.count(Filters())
        wings = await self.store.facet("wing", Filters())
        rooms = await self.store.facet("room", Filters())
        self._store_cache = (writes, time.monotonic(), (total, wings, rooms))
        return total, wings, rooms

    async def _state_figures(self, busy: bool) -> tuple[dict[str, SourceFigures], dict[str, dict[str, int]]]:
        """Per-source cursor figures and counters in one worker-thread hop (each hop costs a GIL hand-over while
        the ingest runs); while files are being read, figures up to a second old (or twenty times what reading
        them cost) are served from the cache."""
        cached = self._state_cache
        if cached is not None and busy and time.monotonic() - cached[0] < max(1.0, 20 * self._state_cost):
            return cached[1]
        started = time.monotonic()
        figures = await anyio.to_thread.run_sync(lambda: (self.state.source_figures(), self.state.counters()))
        self._state_cost = time.monotonic() - started
        self._state_cache = (time.monotonic(), figures)
        return figures

    async def report(self) -> dict[str, Any]:
        """Everything ``status`` says. While files are being read, the state's figures are up to a second old,
        or twenty times what reading them cost."""
        # Progress is read before the figures: a status that says "scanned, nothing queued" then promises that
        # the counts below include everything the scan found (read after, they could be older than the backlog).
        missing = len(self.dense) + self.densifier.in_flight
        file_backlog = len(self.files) + self.files.active
        scans = self.scanner.scans_done
        # Cached figures only while files are being read: once none is queued the counts must be exact (a
        # dense backlog alone changes no count, and its writes do not invalidate the store figures anyway).
        reading = bool(file_backlog)
        total, wings, rooms = await self._store_figures(reading)
        per_source, counters = await self._state_figures(reading)
        pending = set(self.files.pending())
        sources = []
        for s in self.sources:
            mine = per_source.get(s.key, SourceFigures())
            st = self.ingestor.status.get(s.key)
            sources.append({
                "key": s.key, "path": str(s.root), "mode": s.mode, "format": s.fmt, "wing": s.wing,
                "exists": s.root.exists(), "files": mine.files,
                "exchanges": mine.exchanges,
                "backlog_files": _under(pending, s.root),
                "backlog_bytes": mine.backlog_bytes,
                "errors": st.errors if st else 0, "last_error": st.last_error if st else "",
                "skipped": dict(st.skipped) if st else {},
                **_refused(self.scanner.refused.get(s.key, {})),
                "redactions": counters.get(s.key, {}).get("redactions", 0),
            })
        return {
            "version": __version__,
            "pid": os.getpid(),
            "uptime_s": round(time.time() - self.started_at, 1),
            "ready": self.ready,
            "model": self.embedder.info.model_id,
            "store": self.store.location,
            "data_dir": str(data_dir()),
            "machine": self.machine,
            "drawers": total,
            "wings": wings,
            "rooms": rooms,
            "dense_backlog": missing,
            "dense_rate": round(self.densifier.rate, 2),
            "file_backlog": file_backlog,
            "scans": scans,
            "index": self.index.status(),
            "sources": sources,
            "excluded": self.sources.exclude.report() if self.sources.exclude is not None else {},
            "warnings": [w for w in (self.ingestor.store_warning, *self._health_warnings()) if w],
            "disk": self.space.status() if self.space is not None else {},
        }

    def _health_warnings(self) -> list[str]:
        """A full disk (ingest paused), damaged store files, damaged text in the state database, keyword vectors
        of another tokenizer."""
        out = [self.space.check()] if self.space is not None else []
        if self.hosted is not None:
            out.append(self.hosted.damaged)
        out.append(self.state.damaged)
        if self.keywords is not None:
            out.append(self.keywords.warning)
        return out


REFUSED_LISTED = 20


def _refused(found: dict[str, str]) -> dict[str, Any]:
    """The files the source's last scan would not read: counts by reason and the first few paths."""
    counts: dict[str, int] = {}
    for reason in found.values():
        counts[reason] = counts.get(reason, 0) + 1
    return {"refused": counts, "refused_paths": dict(list(found.items())[:REFUSED_LISTED])}


def _under(paths: Iterable[str], root: Path) -> int:
    """How many of ``paths`` (absolute, as the file queue holds them) are ``root`` or lie under it: a string
    test, as ``status`` counts every queued file per source (``Path.relative_to`` for each of 20,000 queued
    files took 0.2 s of every status call)."""
    base = str(root)
    prefix = base if base.endswith("/") else base + "/"
    return sum(1 for p in paths if p == base or p.startswith(prefix))
