"""Ingest: read new bytes, normalize, build drawers, upsert keyword-first, queue dense vectors.

Order of work for one unit (under its per-source lock):
1. find its format (the format registry: ``mempald.normalize.registry``) and read what is new (worker thread);
2. parse it with the format's one ``parse`` and build drawers (pure, worker thread);
3. upsert drawers whose content changed with their BM25 vector only: they are keyword-searchable now;
4. advance the cursor, only after the upsert returned (the WAL has it);
5. queue the drawers for their dense vector (``DenseWorker``), fresh ones ahead of the backfill.

``reading.UnitReader`` reads each kind of unit, ``writer.DrawerWriter`` writes drawers.
"""

from __future__ import annotations

import errno
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from mempald import logs
from mempald.archive.keeper import Archive
from mempald.config import SettingsRef
from mempald.embed.embedder import Embedder
from mempald.embed.sparse import Bm25Encoder
from mempald.errors import Busy
from mempald.ingest.build_pool import BuildPool
from mempald.ingest.drawers import SourceInfo
from mempald.ingest.queues import FRESH, DenseQueue
from mempald.ingest.reading import UNKNOWN, IngestResult, SourceStatus, UnitReader
from mempald.ingest.units import format_for
from mempald.ingest.writer import DrawerWriter
from mempald.normalize import registry
from mempald.normalize.model import Exchange
from mempald.sources.reader import Refused
from mempald.sources.roots import Source, Unit
from mempald.state.gateway import StateGateway
from mempald.store.base import Filters
from mempald.store.gateway import StoreGateway

if TYPE_CHECKING:
    from mempald.ingest.forget_list import Admission

__all__ = ["UNKNOWN", "IngestResult", "Ingestor", "SourceStatus"]
log = logs.get("ingest")


PASSING_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EIO)  # a failed read may succeed again soon
REFUSED_REMEMBERED = 10_000  # refused files remembered as counted (bounded memory)

class Ingestor:
    """Reads sources into drawers. Settings are read from the current snapshot at each use (a reload applies
    them), except the model's token limit, fixed for the daemon's life. ``room_keywords`` gives the taxonomy
    in force (``mempal taxonomy`` edits it)."""

    def __init__(
        self,
        *,
        settings: SettingsRef,
        state: StateGateway,
        store: StoreGateway,
        embedder: Embedder,
        bm25: Bm25Encoder,
        dense: DenseQueue,
        machine: str,
        user: str,
        room_keywords: Callable[[], dict[str, list[str]] | None] = lambda: None,
        admit: Admission | None = None,
        pool: BuildPool | None = None,
        archive: Archive | None = None,
    ) -> None:
        self.admit = admit  # the user's exclusions and forgets (mempald.ingest.forget_list); None: none
        self.archive = archive  # the byte-exact transcript archive (mempald.archive); None: none
        self.settings = settings
        self.state = state
        self.store = store
        self.machine = machine
        self.user = user
        self.room_keywords = room_keywords
        self._locks: dict[str, anyio.Lock] = {}
        self.status: dict[str, SourceStatus] = {}
        self._refused: set[tuple[str, str]] = set()  # (path, reason) counted and logged once, not at every event
        self.writer = DrawerWriter(state=state, store=store, embedder=embedder, bm25=bm25, dense=dense,
                                   max_tokens=settings.current.embed.max_tokens, admit=admit, pool=pool)
        self.reader = UnitReader(settings=settings, state=state, writer=self.writer, machine=machine, user=user,
                                 room_keywords=room_keywords, status=self.status, archive=archive)

    @property
    def store_warning(self) -> str:
        return self.writer.warning

    # locks ---------------------------------------------------------------------------------------------
    def lock_for(self, key: str) -> anyio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = anyio.Lock()
        return lock

    async def ingest_path(self, path: Path, source: Source, lane: int = FRESH) -> IngestResult:
        """Read what is new in ``path``'s unit (the file, or the folder or database unit it belongs to), one task
        at a time."""
        unit = await anyio.to_thread.run_sync(source.unit_of, path)
        path = unit.path if unit is not None else path
        if self.admit is not None and not await anyio.to_thread.run_sync(self.admit.readable, path):
            return IngestResult(str(path))  # excluded by the user: never read
        lock = self.lock_for(str(path))
        started = time.monotonic()
        try:
            with anyio.fail_after(self.settings.current.ingest.lock_timeout_s):
                await lock.acquire()
        except TimeoutError:
            waited = time.monotonic() - started
            raise Busy(f"{path} is being ingested by another task; gave up after waiting {waited:.1f}s",
                       {"waited_s": round(waited, 3)}) from None
        try:
            return await self._ingest_locked(path, source, lane, unit=unit)
        finally:
            lock.release()

    # core ----------------------------------------------------------------------------------------------
    async def _ingest_locked(self, path: Path, source: Source, lane: int, *, unit: Unit | None) -> IngestResult:
        """Ingest one unit: a file (its format detected, or the source's), or a folder or database ``unit``."""
        res = IngestResult(str(path))
        st = self.status.setdefault(source.key, SourceStatus())
        try:
            if not await anyio.to_thread.run_sync(path.exists):
                return res
            own = registry.room_of_its_own(path.name) if source.mode == "projects" else None
            if own is not None:  # a project's CLAUDE.md / AGENTS.md: what the agent believes, not a code note
                res.fmt = own.name
                cur = await self.state.get_cursor(str(path))
                if cur is not None and cur.context.format != own.name:  # read as a note before: replaced
                    await self.store.delete(Filters(source_path=(str(path),), machine=(self.machine,),
                                                    include_deleted=True))
                    await self.state.drop_cursor(str(path))
                await self.reader.document(path, source, own, lane, res)
            elif source.mode == "projects":
                res.fmt = "project"
                await self.reader.project_file(path, source, lane, res)
            elif unit is not None:
                res.fmt = unit.fmt.name
                await self.reader.unit(unit, source, lane, res)
            else:
                found = await anyio.to_thread.run_sync(format_for, path, source.fmt)
                res.fmt = found.name if found is not None else UNKNOWN
                if found is None:
                    await self.reader.skip_unknown(path, source)
                elif found.unit == "database":  # (named directly: a database is its own unit)
                    await self.reader.unit(Unit(path, found), source, lane, res)
                elif found.change == "appended":
                    await self.reader.lines(path, source, found, lane, res)
                else:
                    await self.reader.document(path, source, found, lane, res)
            st.last_ingest = time.time()
        except Refused as exc:  # named by a watch event, not a regular file (a FIFO, a socket) or too large
            res.refused = exc.detail
            self._refuse(st, str(path), exc)
        except (OSError, UnicodeError) as exc:
            res.error = f"{type(exc).__name__}: {exc}"
            res.retry = getattr(exc, "errno", None) in PASSING_ERRNOS
            st.errors += 1
            st.last_error = f"{path}: {res.error}"
            log.warning("ingest_failed", path=str(path), error=res.error)
        if res.skipped_long_lines:
            st.skipped["long_line"] = st.skipped.get("long_line", 0) + res.skipped_long_lines
            log.warning("long_lines_skipped", path=str(path), count=res.skipped_long_lines)
        return res

    def _refuse(self, st: SourceStatus, path: str, exc: Refused) -> None:
        """Count and log a refused file once: a FIFO's every event would otherwise count it again."""
        key = (path, exc.reason)
        if key in self._refused:
            return
        if len(self._refused) >= REFUSED_REMEMBERED:
            self._refused.clear()
        self._refused.add(key)
        st.skipped[exc.reason] = st.skipped.get(exc.reason, 0) + 1
        log.warning("file_skipped", path=path, reason=exc.reason, detail=exc.detail)

    async def forget_file(self, path: str, source: Source) -> None:
        """A file disappeared: code drawers follow it; conversation drawers are kept (they outlive transcripts)."""
        if source.mode == "projects":
            await self.store.delete(Filters(source_path=(path,), machine=(self.machine,), include_deleted=True))
        await self.state.drop_cursor(path)

    async def write_exchanges(self, exchanges: Sequence[Exchange], info: SourceInfo, lane: int = FRESH) -> IngestResult:
        """Store exchanges that did not come from a watched file (manual saves, imports, benchmarks)."""
        res = IngestResult(info.path, fmt=info.kind, exchanges=len(exchanges))
        async with self.lock_for(info.source_key):
            res.wrote(await self.writer.write(exchanges, info, lane))
        self.status.setdefault(info.source_key, SourceStatus()).exchanges += len(exchanges)
        return res
