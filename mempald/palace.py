"""The palace: everything the daemon holds open, and its long-running loops.

Owned by ``app.run``; every loop here is started in the daemon's one task group.
"""

from __future__ import annotations

import functools
import getpass
import os
import socket
import stat
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from anyio.abc import ObjectReceiveStream

from mempald import __version__, faults, logs
from mempald.config import Settings, data_dir
from mempald.densify import DenseWorker
from mempald.embed import Embedder
from mempald.ingest import Ingestor
from mempald.queues import BACKFILL, FRESH, DenseQueue, FileQueue
from mempald.search import Searcher
from mempald.sources.registry import Source, folder_signature, resolve_sources
from mempald.sources.watch import Watcher
from mempald.sparse import Bm25Encoder
from mempald.state import Cursor, State
from mempald.store.base import Filters, Store, StoreError
from mempald.store.hosted import HostedEdgeStore, rebuild_index
from mempald.store.locate import open_store
from mempald.store.runner import StoreRunner
from mempald.taxonomy import load_taxonomy

log = logs.get("mempald.palace")


class Palace:
    def __init__(self, settings: Settings, embedder: Embedder, store: Store, state: State) -> None:
        self.settings = settings
        self.embedder = embedder
        self.store = store
        self.state = state
        self.machine = settings.store.machine or socket.gethostname()
        self.user = getpass.getuser()
        self.runner = StoreRunner(store)
        self.bm25 = Bm25Encoder()
        self.files = FileQueue()
        self.dense = DenseQueue()
        self.ingestor = Ingestor(
            state=state, runner=self.runner, embedder=embedder, bm25=self.bm25, dense=self.dense,
            machine=self.machine, user=self.user, max_tokens=settings.embed.max_tokens,
            redact=settings.ingest.redact_secrets, extract=settings.ingest.extract_general,
            lock_timeout=settings.ingest.lock_timeout_s, read_budget=settings.ingest.read_chunk_bytes,
            max_line=settings.ingest.max_line_bytes,
        )
        self.densifier = DenseWorker(self.dense, self.runner, embedder, settings.embed.batch_size,
                                     settings.embed.max_tokens)
        self.searcher = Searcher(self.runner, embedder, self.bm25)
        # While a fresh file is read (parse, BM25, upsert: a few hundred ms), the dense worker starts no new
        # round: both cores go to making the new exchange keyword-searchable first (bench/freshness.py).
        self.fresh_ingests = 0
        self.densifier.hold = lambda: self.fresh_ingests > 0
        self.sources: list[Source] = resolve_sources(settings)
        self.watcher: Watcher | None = None
        self.started_at = time.time()
        self.ready = False
        self.scans_done = 0
        self.cache: dict[str, Any] = {}
        self.pack_pending: dict[str, float] = {}
        self.ingestor.room_keywords = load_taxonomy()
        # The embedded store's child process, when there is one (its index is rebuilt by ``index_loop``).
        self.hosted: HostedEdgeStore | None = None
        self.index: dict[str, Any] = {"state": "idle", "builds": 0, "last": {}, "last_error": ""}

    @classmethod
    def open(cls, settings: Settings) -> Palace:
        """Blocking: load the model, open the store and the state database."""
        ddir = data_dir()
        embedder = Embedder(settings.embed.model, models_dir=ddir / "models", threads=settings.embed.threads)
        hosted = open_store(settings, embedder.dim, daemon=True)
        store = faults.wrap_store(hosted)  # inert unless MEMPAL_FAULTS is set
        meta = store.get_meta()
        if meta.get("model") and meta["model"] != embedder.info.model_id:
            store.close()
            raise StoreError(
                f"the store was filled by model {meta['model']!r} but config says {embedder.info.model_id!r}: "
                "run `mempal reindex` to re-embed it, or set embed.model back"
            )
        if not meta:
            store.set_meta({"model": embedder.info.model_id, "dim": embedder.dim, "schema": 1,
                            "created_at": time.time()})
        state = State(ddir / "state.sqlite3")
        palace = cls(settings, embedder, store, state)
        palace.hosted = hosted if isinstance(hosted, HostedEdgeStore) else None
        return palace

    def close(self) -> None:
        try:
            self.store.close()
        finally:
            self.state.close()

    # sources -------------------------------------------------------------------------------------------
    def source_for(self, path: Path) -> Source | None:
        best: Source | None = None
        for s in self.sources:
            if s.owns(path) and (best is None or len(str(s.root)) > len(str(best.root))):
                best = s
        return best

    async def reconcile(self, lane: int = BACKFILL) -> int:
        """Compare every source's files with their cursors; queue what changed, newest first; forget files
        that are gone (code drawers follow them, conversation drawers stay)."""
        queued = 0
        for source in list(self.sources):
            changed = await anyio.to_thread.run_sync(self._changed_files, source)
            self.files.put_many([str(p) for p in changed], lane)
            queued += len(changed)
            gone = await anyio.to_thread.run_sync(self._gone_files, source)
            for path in gone:
                await self.ingestor.forget_file(path, source)
        self.scans_done += 1
        return queued

    def _project_allows(self, source: Source, path: Path) -> bool:
        from mempald.sources.ignore import RepoFilter

        if path.name == ".gitignore":
            self.cache.pop(f"filter:{source.key}", None)
            return False
        flt = self.cache.get(f"filter:{source.key}")
        if flt is None:
            flt = self.cache[f"filter:{source.key}"] = RepoFilter(source.root)
        if any(not flt.dir_allowed(parent) for parent in path.parents if parent != source.root and
               source.root in parent.parents):
            return False
        try:
            return flt.file_allowed(path, path.stat().st_size) is None
        except OSError:
            return False

    def _gone_files(self, source: Source) -> list[str]:
        return [p for p in self.state.all_cursors(source.key) if not Path(p).exists()]

    def _changed_files(self, source: Source) -> list[Path]:
        cursors = self.state.all_cursors(source.key)
        found: list[tuple[float, Path]] = []
        try:
            for path in source.iter_files():
                try:
                    st = path.stat()
                except OSError:
                    continue
                cur = cursors.get(str(path))
                if stat.S_ISDIR(st.st_mode):  # a Slack export (the only folder unit): changed when any file is
                    n, size, mtime = folder_signature(path)
                    if cur is None or (cur.inode, cur.size, cur.mtime) != (n, size, mtime):
                        found.append((mtime, path))
                elif cur is None or not cur.same_file(st):
                    found.append((st.st_mtime, path))
        except OSError as exc:
            log.warning("scan_failed", source=source.key, error=str(exc))
        found.sort(key=lambda t: -t[0])
        return [p for _, p in found]

    # loops ---------------------------------------------------------------------------------------------
    async def ingest_loop(self, lanes: tuple[int, ...] = (FRESH, BACKFILL)) -> None:
        """Ingest queued files. The daemon runs two: one for both lanes and one for the fresh lane only, so
        an appended exchange never waits for a backfill file being read (bench/freshness.py)."""
        while True:
            path_s, lane = await self.files.get(lanes)
            path = Path(path_s)
            source = self.source_for(path)
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
            if source.mode == "pack":
                self.pack_pending.setdefault(source.key, time.monotonic())

    async def watch_loop(self, events: ObjectReceiveStream[Path]) -> None:
        debounce = self.settings.ingest.debounce_ms / 1000.0
        pending: dict[Path, float] = {}
        async with events:
            while True:
                timeout = min((t + debounce for t in pending.values()), default=None)
                wait = None if timeout is None else max(0.0, timeout - time.monotonic())
                with anyio.move_on_after(wait if wait is not None else 3600):
                    path = await events.receive()
                    if path not in pending:
                        pending[path] = time.monotonic()
                now = time.monotonic()
                for p, t in list(pending.items()):
                    if now - t >= debounce:
                        del pending[p]
                        await self._on_event(p)
                if self.watcher is not None and self.watcher.overflowed:
                    self.watcher.overflowed = False
                    log.warning("watch_overflow", action="reconcile")
                    await self.reconcile(FRESH)

    async def _on_event(self, path: Path) -> None:
        source = self.source_for(path)
        if source is None:
            return
        folder = await anyio.to_thread.run_sync(source.export_folder, path)
        if folder is not None:
            self.files.put(str(folder), FRESH)
            return
        if await anyio.to_thread.run_sync(path.is_dir):
            # A folder appeared or moved in: scan it (its files may not have sent events).
            self.files.put_many([str(p) for p in await anyio.to_thread.run_sync(self._changed_files, source)], FRESH)
            return
        if not await anyio.to_thread.run_sync(path.exists):
            cur = await anyio.to_thread.run_sync(self.state.get_cursor, str(path))
            if cur is not None:
                await self.ingestor.forget_file(str(path), source)
            return
        if source.mode == "projects" and not await anyio.to_thread.run_sync(self._project_allows, source, path):
            return
        if source.wants(path):  # not in an export folder (checked above): the file is its own unit
            self.files.put(str(path), FRESH)

    async def pack_loop(self, quiet_s: float = 2.0) -> None:
        """Re-pack a pack-mode folder once its markdown has been quiet for ``quiet_s`` (event-driven)."""
        from mempald.packing import run_pack

        while True:
            await anyio.sleep(0.5)
            now = time.monotonic()
            for key, since in list(self.pack_pending.items()):
                if now - since < quiet_s or self.files.pending():
                    continue
                del self.pack_pending[key]
                source = next((s for s in self.sources if s.key == key), None)
                if source is None:
                    continue
                try:
                    job = functools.partial(run_pack, self.embedder, source.root, source.pack_output(),
                                            token_budget=source.token_budget)
                    res = await anyio.to_thread.run_sync(job, limiter=self.densifier.limiter)
                    log.info("repacked", source=key, paths=res["paths"])
                except Exception as exc:
                    log.warning("pack_failed", source=key, error=str(exc))

    def idle(self) -> bool:
        return not (len(self.dense) or self.densifier.in_flight or len(self.files) or self.files.active)

    async def index_loop(self) -> None:
        """Rebuild the embedded store's indexes in a separate process (``mempald.store.hosted``) once
        ``store.index_after`` vectors are not indexed and the daemon has been idle for ``store.index_quiet_s``."""
        store = self.hosted
        threshold = self.settings.store.index_after
        quiet_s = self.settings.store.index_quiet_s
        check_s = min(10.0, max(0.2, quiet_s / 3))
        if store is None or threshold <= 0:
            return
        baseline = 0  # vectors left unindexed by the last build (drawers still without a dense vector)
        idle_since: float | None = None
        while True:
            await anyio.sleep(check_s)
            if not self.idle():
                idle_since = None
                continue
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since < quiet_s:
                continue
            _, unindexed = await self.runner.run(store.index_state)
            if unindexed - baseline < threshold:
                continue
            self.index["state"] = "building"
            log.info("index_build_started", unindexed=unindexed)
            try:
                res = await rebuild_index(self.runner, store)
            except StoreError as exc:
                self.index["last_error"] = str(exc)
                log.warning("index_build_failed", error=str(exc))
                await anyio.sleep(max(quiet_s, 600.0))  # not again at once: the next build waits
                continue
            finally:
                self.index["state"] = "idle"
            self.index["builds"] += 1
            self.index["last"] = res
            self.index["last_error"] = ""
            _, baseline = await self.runner.run(store.index_state)
            log.info("index_built", unindexed_after=baseline, **res)

    async def reconcile_loop(self) -> None:
        interval = self.settings.ingest.reconcile_interval_s
        while True:
            await anyio.sleep(interval)
            await self.reconcile(BACKFILL)

    # status --------------------------------------------------------------------------------------------
    async def _store_figures(self, busy: bool) -> tuple[int, dict[str, int], dict[str, int]]:
        """Drawer count and wing/room facets. Exact facets cost tens of ms at 100k drawers and would queue
        behind the store's other work, so they are cached and recomputed only after a write; while the daemon
        is backfilling (``busy``) the cached figures are served for up to a second, or longer while the store is
        in use. When nothing is queued they are always exact."""
        cached = self.cache.get("status:store")
        writes = self.runner.writes
        if cached is not None and cached[0] == writes:
            return cached[2]  # type: ignore[no-any-return]
        if cached is not None and busy and (time.monotonic() - cached[1] < 1.0 or self.runner.busy):
            return cached[2]  # type: ignore[no-any-return]
        store = self.runner.store
        total = await self.runner.run(store.count, Filters())
        wings = await self.runner.run(store.facet, "wing", Filters())
        rooms = await self.runner.run(store.facet, "room", Filters())
        self.cache["status:store"] = (writes, time.monotonic(), (total, wings, rooms))
        return total, wings, rooms

    async def _state_figures(self, busy: bool) -> tuple[dict[str, Cursor], dict[str, dict[str, int]]]:
        """Cursors and counters in one worker-thread hop (each hop costs a GIL hand-over while the ingest
        runs); while backfilling, figures up to a second old are served from the cache."""
        cached = self.cache.get("status:state")
        if cached is not None and busy and time.monotonic() - cached[0] < 1.0:
            return cached[1]  # type: ignore[no-any-return]
        figures = await anyio.to_thread.run_sync(lambda: (self.state.all_cursors(), self.state.counters()))
        self.cache["status:state"] = (time.monotonic(), figures)
        return figures

    async def status(self) -> dict[str, Any]:
        # Progress is read before the figures: a status that says "scanned, nothing queued" then promises that
        # the counts below include everything the scan found (read after, they could be older than the backlog).
        missing = len(self.dense) + self.densifier.in_flight
        file_backlog = len(self.files) + self.files.active
        scans = self.scans_done
        busy = bool(missing or file_backlog)
        total, wings, rooms = await self._store_figures(busy)
        cursors, counters = await self._state_figures(busy)
        pending = set(self.files.pending())
        sources = []
        for s in self.sources:
            mine = [c for c in cursors.values() if c.source == s.key]
            st = self.ingestor.status.get(s.key)
            sources.append({
                "key": s.key, "path": str(s.root), "mode": s.mode, "format": s.fmt, "wing": s.wing,
                "exists": s.root.exists(), "files": len(mine),
                "exchanges": sum(c.exchanges for c in mine),
                "backlog_files": sum(1 for p in pending if s.owns(Path(p))),
                "backlog_bytes": sum(max(0, c.size - int(c.context.get("read_end", c.offset))) for c in mine),
                "errors": st.errors if st else 0, "last_error": st.last_error if st else "",
                "skipped": dict(st.skipped) if st else {},
                "redactions": counters.get(s.key, {}).get("redactions", 0),
            })
        return {
            "version": __version__,
            "pid": os.getpid(),
            "uptime_s": round(time.time() - self.started_at, 1),
            "ready": self.ready,
            "model": self.embedder.info.model_id,
            "store": self.runner.store.location,
            "data_dir": str(data_dir()),
            "machine": self.machine,
            "drawers": total,
            "wings": wings,
            "rooms": rooms,
            "dense_backlog": missing,
            "dense_rate": round(self.densifier.rate, 2),
            "file_backlog": file_backlog,
            "scans": scans,
            "index": {**self.index, "store_pids": self.hosted.pids if self.hosted else []},
            "sources": sources,
            "warnings": [w for w in (self.ingestor.store_warning,) if w],
        }
