"""Keeping transcripts in the archive as the ingest reads them: new bytes appended, a changed file versioned.

``Archive.keep`` is called by the ingest once a unit was read (``mempald.ingest.reading``); it never raises into
the ingest and never holds it up longer than reading and compressing the new bytes. What it reads, it reads
itself through ``mempald.sources.reader`` (a FIFO or a device is refused, never waited on).

- the file grew and its archived bytes are unchanged (the hash of the bytes before the archived end): the new
  bytes become a new chunk of the current version; small chunks of a live session are merged now and then;
- it shrank, or its bytes before that end changed (a rewrite in place, a replaced file): it is archived whole as
  a new version, and the old versions stay;
- free space under ``store.min_free_mb + archive.reserve_mb`` (or a write failing for space): archiving stops
  first, the ingest goes on, ``status`` says so, and the bytes are archived once space is back (nothing is
  lost while the file still exists).
"""

from __future__ import annotations

import errno
import hashlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import anyio.to_thread

from mempald import logs
from mempald.archive.chunks import ArchiveDamaged, digest, ensure_dir, read_chunk, write_chunk
from mempald.archive.index import ChunkRow, Index, UnitRow
from mempald.config import SettingsRef
from mempald.normalize.format import Format
from mempald.normalize.model import CursorContext
from mempald.normalize.wings import normal_wing, wing_from_cwd
from mempald.sources.reader import open_regular
from mempald.sources.roots import Source
from mempald.store.space import MB, free_bytes

log = logs.get("archive")
CHUNK = 4 * MB  # the most raw bytes one chunk holds
SMALL = 256 * 1024  # a chunk smaller than this is a live session's append ...
MERGE_AT = 16  # ... and this many of them in a row are merged into one (better compression, fewer files)
SPACE_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
HEAD, TAIL = 4096, 65536


@dataclass(slots=True)
class Kept:
    appended: int = 0  # bytes archived now
    version: int = 0
    new_version: bool = False
    paused: str = ""


def _tail(fh: BinaryIO, offset: int) -> str:
    """The hash of the bytes before ``offset`` (the first 4 KiB and the 64 KiB just before it), as
    ``mempald.sources.reader.prefix_hash`` takes it, from the file already open."""
    h = hashlib.sha256()
    if offset > 0:
        fh.seek(0)
        h.update(fh.read(min(offset, HEAD)))
        start = max(HEAD, offset - TAIL)
        if start < offset:
            fh.seek(start)
            h.update(fh.read(offset - start))
    return h.hexdigest()


class Archive:
    """The archive of one palace, in ``folder`` (``<data dir>/archive``); thread-safe."""

    def __init__(self, folder: Path, settings: SettingsRef) -> None:
        self.folder = folder
        self.settings = settings
        self.paused = ""  # why archiving stopped ("" while it goes on)
        self.skipped = 0  # reads whose new bytes were not archived for want of space
        self._index: Index | None = None
        self._opening = threading.Lock()  # (two ingest loops may ask for the index first at once)
        # (path, session) -> True when the user forgot it: never archived again (set by the composition root)
        self.forgotten: Callable[[str, str], bool] = lambda path, session: False

    @property
    def index(self) -> Index:
        with self._opening:
            if self._index is None:
                ensure_dir(self.folder)
                self._index = Index(self.folder / "index.sqlite3")
            return self._index

    def exists(self) -> bool:
        return (self.folder / "index.sqlite3").exists()

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None

    # what is archived ------------------------------------------------------------------------------------
    def wanted(self, source: Source, fmt: Format, ctx: CursorContext) -> bool:
        """Is this unit archived: the settings' ``on`` / ``off`` (by source key or root), else its format's
        declaration; never what the user's exclusions cover (by the session's working directory)."""
        cfg = self.settings.current.archive
        if not cfg.enabled:
            return False
        names = {source.key, str(source.root)}
        if names & {str(Path(p).expanduser()) for p in cfg.off} or names & set(cfg.off):
            return False
        on = bool(names & set(cfg.on)) or bool(names & {str(Path(p).expanduser()) for p in cfg.on})
        if not (on or fmt.archive):
            return False
        return not (source.exclude is not None and ctx.cwd
                    and source.exclude.excludes_session(ctx.cwd, ctx.session_id))

    async def keep(self, path: Path, source: Source, fmt: Format, ctx: CursorContext) -> None:
        """Archive what is new in ``path`` (the ingest has just read it). Never raises: a failure is logged."""
        if not self.wanted(source, fmt, ctx):
            return
        wing = normal_wing(source.wing) or wing_from_cwd(ctx.cwd, default=fmt.name)
        try:
            await anyio.to_thread.run_sync(self.keep_file, path, source.root, ctx.session_id or path.stem, wing,
                                           fmt.name)
        except Exception:  # (the archive never stops the ingest)
            log.exception("archive_failed", path=str(path))

    def space_reason(self, need: int) -> str:
        cfg = self.settings.current
        floor = (cfg.store.min_free_mb + cfg.archive.reserve_mb) * MB if cfg.store.min_free_mb > 0 else 0
        if floor <= 0:
            return ""
        free = free_bytes(self.folder)
        if free - need >= floor:
            return ""
        return (f"disk almost full: {free / MB:.1f} MB free on the filesystem of {self.folder}, under "
                f"store.min_free_mb + archive.reserve_mb ({floor // MB} MB): archiving is paused (ingest goes on) "
                "and resumes by itself when space is freed")

    def _pause(self, reason: str) -> Kept:
        if reason and not self.paused:
            log.warning("archive_paused", reason=reason)
        self.paused = reason
        self.skipped += 1
        return Kept(paused=reason)

    def keep_file(self, path: Path, root: Path, session: str, wing: str, fmt: str) -> Kept:
        """Blocking: archive the bytes of ``path`` not archived yet (a new version when it changed)."""
        key = str(path)
        if self.forgotten(key, session):
            return Kept()
        index = self.index
        row = index.unit(key)
        with open_regular(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            same = row is not None and row.size <= size and _tail(fh, row.size) == row.tail
            if row is not None and same:
                start, version = row.size, row.version
            else:
                start, version = 0, (row.version + 1 if row is not None else 1)
            if row is not None and same and start == size:
                if (row.session, row.wing) != (session, wing):
                    with index.transaction() as conn:
                        Index.put_unit(conn, UnitRow(key, str(root), session, wing, fmt, version, size, row.tail,
                                                     row.first_at, 0.0))
                return Kept(version=version)
            if size == 0:
                return Kept(version=row.version if row else 0)
            reason = self.space_reason(size - start)
            if reason:
                return self._pause(reason)
            fh.seek(start)
            pos, seq, added, files = start, index.next_seq(key, version), [], []
            try:
                while pos < size:
                    raw = fh.read(min(CHUNK, size - pos))
                    if not raw:
                        break
                    name = self._chunk_name(key, version, seq)
                    files.append(self.folder / name)
                    stored = write_chunk(self.folder / name, raw)
                    added.append(ChunkRow(key, version, seq, pos, len(raw), stored, digest(raw), name))
                    pos += len(raw)
                    seq += 1
            except OSError as exc:
                for f in files:
                    f.unlink(missing_ok=True)
                if exc.errno in SPACE_ERRNOS:
                    return self._pause(f"the disk is full ({exc.strerror}) while archiving {path}: archiving is "
                                       "paused (ingest goes on) and resumes by itself when space is freed")
                raise
            tail = _tail(fh, pos)
        with index.transaction() as conn:
            for c in added:
                Index.put_chunk(conn, c)
            Index.put_unit(conn, UnitRow(key, str(root), session, wing, fmt, version, pos, tail,
                                         row.first_at if row else time.time(), 0.0))
        if self.paused:
            log.info("archive_resumed")
        self.paused = ""
        if row is not None and not same:
            log.info("archive_new_version", path=key, version=version, previous_bytes=row.size, size=pos)
        self._merge_small(key, version)
        return Kept(appended=pos - start, version=version, new_version=start == 0 and row is not None)

    def _chunk_name(self, key: str, version: int, seq: int) -> str:
        h = digest(key.encode("utf-8", "surrogateescape"))[:32]
        return f"chunks/{h[:2]}/{h}/{version}-{seq}.zst"

    def _merge_small(self, key: str, version: int) -> None:
        """A live session appends a little at a time: its trailing small chunks, once ``MERGE_AT`` of them, are
        merged into one (written first, then swapped in the index, then the old files removed)."""
        chunks = self.index.chunks(key, version)
        run: list[ChunkRow] = []
        for c in reversed(chunks):
            if c.length >= SMALL:
                break
            run.insert(0, c)
        if len(run) < MERGE_AT or sum(c.length for c in run) > CHUNK:
            return
        try:
            raw = b"".join(read_chunk(self.folder / c.file, c.sha256, c.length) for c in run)
        except ArchiveDamaged as exc:
            log.warning("archive_merge_skipped", path=key, error=str(exc))
            return
        seq = self.index.next_seq(key, version)
        name = self._chunk_name(key, version, seq)
        if self.space_reason(len(raw)):
            return
        try:
            stored = write_chunk(self.folder / name, raw)
        except OSError as exc:
            log.warning("archive_merge_failed", path=key, error=str(exc))
            return
        with self.index.transaction() as conn:
            conn.execute("DELETE FROM chunks WHERE path = ? AND version = ? AND seq BETWEEN ? AND ?",
                         (key, version, run[0].seq, run[-1].seq))
            Index.put_chunk(conn, ChunkRow(key, version, seq, run[0].start, len(raw), stored, digest(raw), name))
        for c in run:
            (self.folder / c.file).unlink(missing_ok=True)
