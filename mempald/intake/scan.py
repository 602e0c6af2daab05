"""The reconcile scan, the truth behind filesystem events: compare every source's files with their cursors,
queue what changed (newest first) and forget files that are gone. Runs at start and every
``ingest.reconcile_interval_s``; also the authority on which files of a code project are read (``.gitignore``).

Files that may not be read (a FIFO, a device such as a link to ``/dev/zero``, a file of ``/proc``, one over
``ingest.max_file_bytes``: ``mempald.sources.reader.refusal``; a link out of every watched folder:
``link_refusal``) are never queued: each is counted per source
and reason in ``refused`` (shown by ``status``) and logged once with its path and reason."""

from __future__ import annotations

import stat
from pathlib import Path

import anyio
import anyio.to_thread

from mempald import logs
from mempald.config import SettingsRef
from mempald.ingest.ingestor import Ingestor
from mempald.ingest.queues import BACKFILL, FileQueue
from mempald.normalize.registry import database_for
from mempald.sources.catalog import SourceSet
from mempald.sources.ignore import RepoFilter
from mempald.sources.reader import TOO_LARGE, link_refusal, refusal
from mempald.sources.roots import Source, unit_signature
from mempald.state.db import State

log = logs.get("scan")
LOGGED_MAX = 10_000  # refused files remembered as already logged (each is logged once, not at every scan)


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
        # source key -> {path: reason} for the files its last scan refused to read
        self.refused: dict[str, dict[str, str]] = {}
        self._logged: set[tuple[str, str]] = set()

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
            st = path.lstat()  # as the walk: links and special files of a project are not read
            return stat.S_ISREG(st.st_mode) and flt.file_allowed(path, st.st_size) is None
        except OSError:
            return False

    def link_refusal(self, source: Source, path: Path) -> tuple[str, str] | None:
        """Why ``path`` is not read when it is a link out of every watched folder to a regular file (blocking; a
        link to a device or a FIFO is refused for what it is). A code project's walk never yields a link
        (``RepoFilter``); every other mode refuses the same links."""
        if source.mode == "projects" or not path.is_symlink() or not path.is_file():
            return None  # (most files are no link: one lstat, no more)
        return link_refusal(path, source.root, self.sources.roots())

    def refuse(self, source: Source, path: Path, reason: str, detail: str) -> None:
        """Count (in ``refused``, until the next scan) and log once a file named by an event that is not read."""
        self._refuse(source, path, reason, detail, into=self.refused.setdefault(source.key, {}))

    def _refuse(self, source: Source, path: Path, reason: str, detail: str, into: dict[str, str]) -> None:
        into[str(path)] = reason
        key = (str(path), reason)
        if key not in self._logged:
            if len(self._logged) >= LOGGED_MAX:
                self._logged.clear()
            self._logged.add(key)
            log.warning("file_skipped", path=str(path), reason=reason, detail=detail, source=source.key)

    def _gone_files(self, source: Source) -> list[str]:
        return [p for p in self.state.all_cursors(source.key) if not Path(p).exists()]

    def changed_files(self, source: Source) -> list[Path]:
        """The units of ``source`` that differ from their cursors, newest first (blocking)."""
        cursors = self.state.all_cursors(source.key)
        cap = self.settings.current.ingest.max_file_bytes
        refused: dict[str, str] = {}
        found: list[tuple[float, Path]] = []
        try:
            for path in source.iter_files():
                try:
                    st = path.stat()
                except OSError:
                    continue
                cur = cursors.get(str(path))
                # a folder unit, or a database (read by rows, not whole: no size cap)
                unit = source.unit_of(path) if stat.S_ISDIR(st.st_mode) or database_for(path.name) else None
                why = (None if stat.S_ISDIR(st.st_mode) else refusal(st, None if unit else cap)) or self.link_refusal(
                    source, path)
                if why is not None:
                    self._refuse(source, path, *why, into=refused)
                elif unit is not None:  # changed when any of its files is
                    n, size, mtime = unit_signature(unit)
                    if size > cap and unit.fmt.unit == "folder":  # read whole: the cap is on its files together
                        self._refuse(source, path, TOO_LARGE, f"a folder unit of {size:,} bytes, over "
                                     f"ingest.max_file_bytes ({cap:,})", into=refused)
                        continue
                    if cur is None or not cur.same_folder(n, size, mtime):
                        found.append((mtime, path))
                elif cur is None or not cur.same_file(st):
                    found.append((st.st_mtime, path))
        except OSError as exc:
            log.warning("scan_failed", source=source.key, error=str(exc))
        self.refused[source.key] = refused
        found.sort(key=lambda t: -t[0])
        return [p for _, p in found]
