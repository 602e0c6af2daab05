"""``status``: what the daemon holds and how far behind it is, cheap enough to ask many times a second."""

from __future__ import annotations

import os
import sqlite3
import time
from typing import Any

import anyio
import anyio.to_thread

from mempald import __version__, logs
from mempald.archive import views as archive_views
from mempald.config import data_dir
from mempald.embed.embedder import Embedder
from mempald.features.keyword_reindex import KeywordReindex
from mempald.ingest.dense import DenseWorker
from mempald.ingest.ingestor import Ingestor
from mempald.ingest.queues import DenseQueue, FileQueue
from mempald.intake.scan import Scanner
from mempald.sources.catalog import SourceSet
from mempald.state.db import SourceFigures
from mempald.state.gateway import StateGateway
from mempald.store.base import DamageReport, Filters, StoreRefused, StoreUnreachable
from mempald.store.gateway import StoreGateway
from mempald.store.maintenance import IndexMaintainer
from mempald.store.space import MB, SpaceGuard

log = logs.get("status")
REFRESH_S = 1.0  # how often the figures are refreshed while files are being read
SHARED_TTL_S = 5.0  # how long a shared store's figures are served before they are counted again


class StatusReport:
    def __init__(self, *, store: StoreGateway, state: StateGateway, embedder: Embedder, sources: SourceSet,
                 scanner: Scanner, files: FileQueue, dense: DenseQueue, densifier: DenseWorker, ingestor: Ingestor,
                 index: IndexMaintainer, machine: str, space: SpaceGuard | None = None,
                 damage: DamageReport | None = None, keywords: KeywordReindex | None = None) -> None:
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
        self.damage = damage  # the backend, when it says whether its files look damaged
        self.keywords = keywords  # keyword vectors of another tokenizer (it says so until reindex runs)
        self.started_at = time.time()
        self.ready = False
        # the figures status serves while files are being read (``run`` refreshes them): the store's with the
        # write count they were read at, the state's, the queue's
        self._store_cache: tuple[int, tuple[int | None, dict[str, int], dict[str, int]]] | None = None
        self._store_cached_at = 0.0  # (a shared store's figures expire: other machines write it too)
        self._state_cache: tuple[dict[str, SourceFigures], dict[str, dict[str, int]]] | None = None
        self._queued_cache: dict[str, int] | None = None
        self._refresh_error = ""  # the last error of the background refresh (logged once)
        self.store_away = ""  # a server that does not answer: why (its figures are then unknown, not an error)

    def idle(self) -> bool:
        """Nothing queued or in flight: every file read, every drawer embedded."""
        return not (len(self.dense) or self.densifier.in_flight or len(self.files) or self.files.active)

    def reading(self) -> bool:
        """Files are queued or being read."""
        return bool(len(self.files) or self.files.active)

    async def run(self) -> None:
        """While files are being read, refresh the figures ``status`` serves every ``REFRESH_S`` in the
        background: a status call then never waits for them (the facets queue behind the ingest's writes in the
        store: a call that refreshed them took 40-120 ms during a burst of small files, every second)."""
        while True:
            await anyio.sleep(REFRESH_S)
            if not self.reading():
                continue
            try:
                await self._refresh_store()
                await self._refresh_state()
                self._refresh_queued()
                self._refresh_error = ""
            except Exception as exc:
                # The store is down or paused (or the state cannot be read): status must say so, not serve the
                # figures from before. Without them, its calls read for themselves and get the error.
                self._store_cache = self._state_cache = self._queued_cache = None
                error = f"{type(exc).__name__}: {exc}"
                if error != self._refresh_error:  # once per error, not every second
                    log.warning("status_refresh_failed", error=error)
                self._refresh_error = error

    async def _refresh_store(self) -> tuple[int | None, dict[str, int], dict[str, int]]:
        writes = self.store.writes
        cached = self._store_cache
        fresh = not self.store.shared or time.monotonic() - self._store_cached_at < SHARED_TTL_S
        if cached is not None and cached[0] == writes and fresh:
            return cached[1]
        self._store_cached_at = time.monotonic()
        try:
            total = await self.store.count(Filters())
            wings = await self.store.facet("wing", Filters())
            rooms = await self.store.facet("room", Filters())
        except (StoreUnreachable, StoreRefused) as exc:  # (a server away or refused: the rest of status holds)
            self._store_cache, self.store_away = None, str(exc)
            return None, {}, {}
        self._store_cache, self.store_away = (writes, (total, wings, rooms)), ""
        return total, wings, rooms

    async def _refresh_state(self) -> tuple[dict[str, SourceFigures], dict[str, dict[str, int]]]:
        # one worker-thread hop for both (each hop costs a GIL hand-over while the ingest runs)
        figures = await self.state.figures()
        self._state_cache = figures
        return figures

    def _refresh_queued(self) -> dict[str, int]:
        pending = self.files.pending()
        counts = {s.key: s.count_owned(pending) for s in self.sources}
        self._queued_cache = counts
        return counts

    async def _figures(self, reading: bool) -> tuple[tuple[int | None, dict[str, int], dict[str, int]],
                                                     tuple[dict[str, SourceFigures], dict[str, dict[str, int]]],
                                                     dict[str, int]]:
        """Drawer count and wing/room facets, per-source cursor figures and counters, queued files per source.
        While files are being read the ones ``run`` keeps (at most a second or so old) are served; otherwise
        they are exact (the store's only recomputed after a write: exact facets cost tens of ms at 100k)."""
        store, state, queued = self._store_cache, self._state_cache, self._queued_cache
        if reading and store is not None and state is not None and queued is not None:
            return store[1], state, queued
        return await self._refresh_store(), await self._refresh_state(), self._refresh_queued()

    def _agents(self, sources: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Every agent's default folder on this machine (its format's declared places): found or not, watched or
        not (``sources.skip``, a setting turned off, another source reading it), with its counts."""
        by_path = {row["path"]: row for row in sources}
        out = []
        for f in self.sources.found:
            row = by_path.get(str(f.root))
            out.append({"agent": f.place.agent, "format": f.fmt.name, "path": str(f.root), "found": f.root.is_dir(),
                        "watched": row is not None, "files": row["files"] if row else 0,
                        "exchanges": row["exchanges"] if row else 0})
        return out

    async def report(self) -> dict[str, Any]:
        """Everything ``status`` says. While files are being read, its counts are about a second old (``run``)."""
        # Progress is read before the figures: a status that says "scanned, nothing queued" then promises that
        # the counts below include everything the scan found (read after, they could be older than the backlog).
        missing = len(self.dense) + self.densifier.in_flight
        file_backlog = len(self.files) + self.files.active
        scans = self.scanner.scans_done
        # Cached figures only while files are being read: once none is queued the counts must be exact (a
        # dense backlog alone changes no count, and its writes do not invalidate the store figures anyway).
        (total, wings, rooms), (per_source, counters), queued = await self._figures(bool(file_backlog))
        sources = []
        for s in self.sources:
            mine = per_source.get(s.key, SourceFigures())
            st = self.ingestor.status.get(s.key)
            sources.append({
                "key": s.key, "path": str(s.root), "mode": s.mode, "format": s.fmt, "wing": s.wing, "agent": s.agent,
                "exists": s.root.exists(), "files": mine.files,
                "exchanges": mine.exchanges,
                "backlog_files": queued.get(s.key, 0),
                "backlog_bytes": mine.backlog_bytes,
                "errors": st.errors if st else 0, "last_error": st.last_error if st else "",
                "skipped": dict(st.skipped) if st else {},
                # databases read batch after batch now: how far (their own units, row ids), stored so far
                "reading": [{"path": path, "done": p.done, "of": p.of, "exchanges": p.exchanges,
                             "percent": round(100.0 * p.done / p.of, 1) if p.of else 0.0,
                             "started": round(p.started, 1)} for path, p in (st.reading.items() if st else ())],
                **_refused(self.scanner.refused.get(s.key, {})),
                "redactions": counters.get(s.key, {}).get("redactions", 0),
            })
        archive = await self._archive()
        return {
            "agents": self._agents(sources),
            "version": __version__,
            "pid": os.getpid(),
            "uptime_s": round(time.time() - self.started_at, 1),
            "ready": self.ready,
            "model": self.embedder.info.model_id,
            "model_file": self.embedder.info.model_file,
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
            "warnings": [w for w in (self.store_away, self.ingestor.store_warning, *self._health_warnings(),
                                     archive.get("paused_reason")) if w],
            "disk": {**(self.space.status() if self.space is not None else {}),
                     "archive_mb": round(archive.get("bytes_on_disk", 0) / MB, 1),
                     "archive_paused": archive.get("paused", False)},
            "archive": archive,
        }

    async def _archive(self) -> dict[str, Any]:
        """The transcript archive's figures (mempald.archive): its size counts with the disk's."""
        if self.ingestor.archive is None:
            return {}
        try:
            return await anyio.to_thread.run_sync(archive_views.status, self.ingestor.archive)
        except (OSError, sqlite3.Error) as exc:  # a damaged index: said, never a failed status (doctor names it)
            return {"error": f"the transcript archive cannot be read: {exc} (run `mempald doctor`)"}

    def _health_warnings(self) -> list[str]:
        """A full disk (ingest paused), damaged store files, damaged text in the state database, keyword vectors
        of another tokenizer."""
        out = [self.space.check()] if self.space is not None else []
        if self.damage is not None:
            out.append(self.damage.damaged)
        out.append(self.state.damaged)
        out.append(self.densifier.warning)
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
