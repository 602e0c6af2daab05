"""Filesystem events into the file queue: the watchdog observer (``watch.Watcher``), debounced per path.

Events are hints (the reconcile scan is the truth): a file event queues its unit in the fresh lane, a new
folder is scanned, a deleted file is forgotten, an event storm that overflowed the stream sets off a scan.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import anyio.lowlevel
import anyio.to_thread
from anyio.streams.memory import MemoryObjectReceiveStream

from mempald import logs
from mempald.config import SettingsRef
from mempald.ingest.ingestor import Ingestor
from mempald.ingest.queues import FRESH, FileQueue
from mempald.intake.scan import Scanner
from mempald.intake.watch import Watcher
from mempald.sources.catalog import SourceSet
from mempald.state.gateway import StateGateway

log = logs.get("watch")
RECONCILE_GAP_S = 5.0  # least time between two reconciles set off by overflows


class EventRouter:
    def __init__(self, settings: SettingsRef, sources: SourceSet, scanner: Scanner, files: FileQueue,
                 state: StateGateway, ingestor: Ingestor) -> None:
        self.settings = settings
        self.sources = sources
        self.scanner = scanner
        self.files = files
        self.state = state
        self.ingestor = ingestor
        self.watcher: Watcher | None = None
        self.enabled = settings.current.ingest.watch_events
        self._events: MemoryObjectReceiveStream[Path] | None = None

    async def start(self) -> None:
        """Create the observer (in the event loop: it needs the loop's token) and watch every source root."""
        if not self.enabled:
            log.info("watch_events_off", reconcile_interval_s=self.settings.current.ingest.reconcile_interval_s)
            return
        send, self._events = anyio.create_memory_object_stream[Path](
            max_buffer_size=self.settings.current.ingest.event_buffer)
        self.watcher = Watcher(send, anyio.lowlevel.current_token())
        await self.sync()
        await anyio.to_thread.run_sync(self.watcher.start)

    async def sync(self) -> None:
        """Watch exactly the current sources' roots (and wait for the default roots not created yet)."""
        if self.watcher is not None:
            await anyio.to_thread.run_sync(self.watcher.sync, self.sources.roots(), self.sources.waiting)

    async def _root_arrived(self) -> None:
        """A folder on the way to a default root appeared: the sources again, then the roots that exist now are
        watched and read (the files written before the watch was in place included)."""
        before = self.sources.waiting
        self.sources.apply(self.settings.current)
        await self.sync()
        arrived = [s for s in self.sources if s.root in before and s.root not in self.sources.waiting]
        for source in arrived:
            changed = await anyio.to_thread.run_sync(self.scanner.changed_files, source)
            self.files.put_many([str(p) for p in changed], FRESH)
            log.info("source_appeared", source=source.key, files=len(changed))

    async def stop(self) -> None:
        if self.watcher is not None:
            await anyio.to_thread.run_sync(self.watcher.stop)

    async def run(self) -> None:
        if self._events is None:
            return
        pending: dict[Path, float] = {}
        due = 0.0  # when a reconcile set off by an overflow may run (the storm's next one waits)
        async with self._events as events:
            while True:
                debounce = self.settings.current.ingest.debounce_ms / 1000.0
                overflowed = self.watcher is not None and self.watcher.overflowed
                timeout = min([*(t + debounce for t in pending.values()), *([due] if overflowed else [])],
                              default=None)
                wait = None if timeout is None else max(0.0, timeout - time.monotonic())
                with anyio.move_on_after(wait if wait is not None else 3600):
                    path = await events.receive()
                    if path not in pending:
                        pending[path] = time.monotonic()
                now = time.monotonic()
                if self.watcher is not None and self.watcher.overflowed and now >= due:
                    due = await self._reconcile(events, pending)
                    continue
                for p, t in list(pending.items()):
                    if now - t >= debounce:
                        del pending[p]
                        await self._on_event(p)

    async def _reconcile(self, events: MemoryObjectReceiveStream[Path], pending: dict[Path, float]) -> float:
        """An event storm overflowed the stream: one scan covers every event so far, so what is queued is
        dropped (and the watcher drops what arrives until the scan starts). Returns when the next such scan
        may run: a storm that goes on (20,000 files written at once queue ~100,000 events in the observer)
        costs a scan every ``RECONCILE_GAP_S`` or three times the last scan's length, not one scan after
        another while the files wait to be read."""
        assert self.watcher is not None
        dropped = len(pending)
        pending.clear()
        while True:
            try:
                events.receive_nowait()
            except anyio.WouldBlock:
                break
            dropped += 1
        self.watcher.overflowed = False  # events from now on are kept: the scan may pass their files first
        log.warning("watch_overflow", action="reconcile", dropped=dropped)
        started = time.monotonic()
        await self.scanner.reconcile(FRESH)
        took = time.monotonic() - started
        return time.monotonic() + max(RECONCILE_GAP_S, 3 * took)

    async def _on_event(self, path: Path) -> None:
        source = self.sources.source_for(path)
        if source is None or (self.sources.waiting and self.sources.leads_to_waiting(path)):
            if self.sources.leads_to_waiting(path):
                await self._root_arrived()
            return
        unit = await anyio.to_thread.run_sync(source.unit_of, path)
        if unit is not None:
            if source.wants(unit.path):  # (not excluded by the user)
                self.files.put(str(unit.path), FRESH)
            return
        if await anyio.to_thread.run_sync(path.is_dir):
            # A folder appeared or moved in: scan it (its files may not have sent events).
            changed = await anyio.to_thread.run_sync(self.scanner.changed_files, source)
            self.files.put_many([str(p) for p in changed], FRESH)
            return
        if not await anyio.to_thread.run_sync(path.exists):
            cur = await self.state.get_cursor(str(path))
            if cur is not None:
                await self.ingestor.forget_file(str(path), source)
            return
        if source.mode == "projects" and not await anyio.to_thread.run_sync(
                self.scanner.project_allows, source, path):
            return
        if source.wants(path):  # not in a folder or database unit (checked above): its own unit
            why = await anyio.to_thread.run_sync(self.scanner.link_refusal, source, path)
            if why is not None:  # a link out of every watched folder: refused as the scan refuses it
                self.scanner.refuse(source, path, *why)
                return
            self.files.put(str(path), FRESH)
