"""The reconcile scan, the truth behind filesystem events: compare every source's files with their cursors,
queue what changed (newest first) and forget files that are gone. Runs at start and every
``ingest.reconcile_interval_s``; also the authority on which files of a code project are read (``.gitignore``)."""

from __future__ import annotations

import stat
from pathlib import Path

import anyio
import anyio.to_thread

from mempald import logs
from mempald.config import SettingsRef
from mempald.ingest.ingestor import Ingestor
from mempald.ingest.queues import BACKFILL, FileQueue
from mempald.sources.catalog import SourceSet
from mempald.sources.ignore import RepoFilter
from mempald.sources.registry import Source, folder_signature
from mempald.state.db import State

log = logs.get("scan")


class Scanner:
    def __init__(self, settings: SettingsRef, sources: SourceSet, state: State, files: FileQueue,
                 ingestor: Ingestor) -> None:
        self.settings = settings
        self.sources = sources
        self.state = state
        self.files = files
        self.ingestor = ingestor
        self.scans_done = 0
        self._filters: dict[str, RepoFilter] = {}

    async def reconcile(self, lane: int = BACKFILL) -> int:
        """One scan of every source; returns how many files were queued."""
        queued = 0
        for source in self.sources:
            changed = await anyio.to_thread.run_sync(self.changed_files, source)
            self.files.put_many([str(p) for p in changed], lane)
            queued += len(changed)
            gone = await anyio.to_thread.run_sync(self._gone_files, source)
            for path in gone:
                await self.ingestor.forget_file(path, source)
        self.scans_done += 1
        return queued

    async def run(self) -> None:
        """Scan again every ``ingest.reconcile_interval_s`` (read each time: a reload changes it)."""
        while True:
            await anyio.sleep(self.settings.current.ingest.reconcile_interval_s)
            await self.reconcile(BACKFILL)

    def project_allows(self, source: Source, path: Path) -> bool:
        """Is this file of a code project read (not ignored by its .gitignore or our own rules)? Blocking."""
        if path.name == ".gitignore":
            self._filters.pop(source.key, None)
            return False
        flt = self._filters.get(source.key)
        if flt is None:
            flt = self._filters[source.key] = RepoFilter(source.root)
        if any(not flt.dir_allowed(parent) for parent in path.parents if parent != source.root and
               source.root in parent.parents):
            return False
        try:
            return flt.file_allowed(path, path.stat().st_size) is None
        except OSError:
            return False

    def _gone_files(self, source: Source) -> list[str]:
        return [p for p in self.state.all_cursors(source.key) if not Path(p).exists()]

    def changed_files(self, source: Source) -> list[Path]:
        """The units of ``source`` that differ from their cursors, newest first (blocking)."""
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
                    if cur is None or not cur.same_folder(n, size, mtime):
                        found.append((mtime, path))
                elif cur is None or not cur.same_file(st):
                    found.append((st.st_mtime, path))
        except OSError as exc:
            log.warning("scan_failed", source=source.key, error=str(exc))
        found.sort(key=lambda t: -t[0])
        return [p for _, p in found]
