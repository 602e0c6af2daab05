"""Reading one unit by what its format reads (under the unit's lock, held by ``Ingestor``).

- ``lines`` (JSONL transcripts): the complete lines after the cursor; the cursor stays at the first line of the
  last exchange (it may still grow) and keeps the format's ``CursorContext``;
- ``document`` (exports, Gemini chats, Aider histories, notes): the whole file, again when its digest changed
  (a touch that changes nothing is not parsed again); exchanges already stored are not written again;
- ``folder`` (a Slack export, a task folder): its files (the format's ``gather``, else every JSON file), again
  when its signature (files, bytes, newest mtime) changed;
- ``rows`` (an editor's database): the format's ``gather`` (rows after the cursor's context), again when the
  database or its ``-wal`` changed;
- a code project's file (projects mode): re-chunked when it changed, its old drawers replaced.

Every format is parsed through its registry entry: ``Format.parse(Input) -> Parsed``.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from mempald import logs
from mempald.archive.keeper import Archive
from mempald.config import SettingsRef
from mempald.ingest.drawers import SourceInfo
from mempald.ingest.live_copies import MIRRORS, LiveCopies
from mempald.ingest.projects import project_exchanges, project_settings
from mempald.ingest.units import folder_wing, gather, prepare
from mempald.ingest.writer import DrawerWriter, Written
from mempald.normalize import registry
from mempald.normalize.format import Format, Input, Parsed
from mempald.normalize.model import CursorContext, NormalizeError
from mempald.normalize.wings import normal_wing
from mempald.sources.reader import ReadResult, prefix_hash, read_capped, read_lines
from mempald.sources.roots import Source, Unit, unit_signature
from mempald.state.db import Cursor
from mempald.state.gateway import StateGateway
from mempald.store.base import Filters, StoreError
from mempald.text.classify import room_for_path

log = logs.get("ingest")
UNKNOWN = "unknown_format"  # a .json/.jsonl file in no known format: skipped, not stored as text


@dataclass(slots=True)
class IngestResult:
    path: str
    fmt: str = ""
    exchanges: int = 0
    drawers: int = 0
    written: int = 0
    capped: int = 0  # exchanges cut to ingest.max_drawers_per_exchange drawers (their whole text stays in the file)
    skipped_long_lines: int = 0
    restarted: bool = False
    more: bool = False
    error: str = ""
    refused: str = ""  # why the file was not read (a FIFO, a socket, too large): counted with the source's skips
    retry: bool = False  # the error may pass (a full disk): the ingest loop reads the file again soon
    ids: list[str] = field(default_factory=list)  # the drawers this read made (not sent: see as_dict)

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__ if k != "ids"}

    def wrote(self, w: Written) -> None:
        self.drawers, self.written, self.capped = len(w.ids), w.written, w.capped
        self.ids.extend(w.ids)


@dataclass(slots=True)
class SourceStatus:
    files: int = 0
    exchanges: int = 0
    errors: int = 0
    last_error: str = ""
    last_ingest: float = 0.0
    skipped: dict[str, int] = field(default_factory=dict)
    reading: dict[str, UnitProgress] = field(default_factory=dict)  # databases read batch after batch now


@dataclass(slots=True)
class UnitProgress:
    """How far a database read batch after batch has come (``status``): its format's own units (row ids)."""

    done: int
    of: int
    exchanges: int  # stored from it so far, this read and before
    started: float  # (time.time())


def parse_document(fmt: Format, data: bytes, name: str, ctx: CursorContext) -> Parsed:
    """A whole document through its format; one not in the detected format after all is read as text."""
    try:
        return fmt.parse(Input(name=name, data=data, context=ctx))
    except NormalizeError as exc:
        log.warning("not_in_detected_format", name=name, format=fmt.name, error=str(exc))
        return registry.TEXT.parse(Input(name=name, data=data, context=replace(ctx, format=registry.TEXT.name)))


def _is_copy(kind: str) -> bool:
    try:
        return registry.by_name(kind).copy
    except KeyError:  # (project files, notes: no format of that name)
        return False


class UnitReader:
    def __init__(self, *, settings: SettingsRef, state: StateGateway, writer: DrawerWriter, machine: str, user: str,
                 room_keywords: Callable[[], dict[str, list[str]] | None], status: dict[str, SourceStatus],
                 archive: Archive | None = None) -> None:
        self.archive = archive  # the byte-exact transcript archive (mempald.archive): told of every read
        self.settings = settings
        self.state = state
        self.writer = writer
        self.machine = machine
        self.user = user
        self.room_keywords = room_keywords
        self.status = status
        self.unreadable: dict[str, str] = {}  # a database unit -> why it could not be read last (logged once)
        self.live: LiveCopies | None = None  # where the agents' own files are read (None: every copy is stored)

    def info(self, path: Path, source: Source, kind: str, **kw: Any) -> SourceInfo:
        ingest = self.settings.current.ingest
        return SourceInfo(kind=kind, path=str(path), source_key=source.key, machine=self.machine, user=self.user,
                          wing=source.wing, redact=ingest.redact_secrets, extract=ingest.extract_general,
                          room_keywords=self.room_keywords(), default_wing=folder_wing(path, source.root),
                          max_drawers=ingest.max_drawers_per_exchange, copy=_is_copy(kind), **kw)

    async def write(self, parsed: Parsed, info: SourceInfo, lane: int, res: IngestResult) -> None:
        res.exchanges = len(parsed.exchanges)
        res.wrote(await self.writer.write(parsed.exchanges, info, lane))
        if self.live is not None and parsed.exchanges:
            await self._remove_copies(info.kind, {ex.session_id for ex in parsed.exchanges})
        if res.capped and res.written:  # (once: a re-read of the same exchange writes nothing)
            log.warning("exchange_capped", path=info.path, exchanges=res.capped, max_drawers=info.max_drawers,
                        note="its first drawers are stored; the whole text stays in the file")
        st = self.status.setdefault(info.source_key, SourceStatus())
        st.exchanges += len(parsed.exchanges)

    async def _remove_copies(self, fmt: str, sessions: set[str]) -> None:
        """A session read from its agent's own file: copies of it stored before (``live_copies``) are removed."""
        live = self.live
        assert live is not None
        try:
            if live.copied is None:  # (once a run: which agents have copies stored at all)
                live.copied = set(await self.writer.store.facet("agent", Filters(source_kind=MIRRORS)))
            gone = live.to_remove(fmt, sessions)
            if gone:
                await self.writer.store.delete(Filters(session_id=tuple(gone), source_kind=MIRRORS, agent=(fmt,),
                                                       machine=(self.machine,), include_deleted=True))
        except StoreError as exc:  # (a server away: looked for again at the next start)
            log.info("copies_not_removed", error=str(exc))

    async def lines(self, path: Path, source: Source, fmt: Format, lane: int, res: IngestResult) -> None:
        cur = await self.state.get_cursor(str(path))
        budget = self.settings.current.ingest.read_chunk_bytes
        max_line = self.settings.current.ingest.max_line_bytes
        while True:
            rr: ReadResult = await anyio.to_thread.run_sync(functools.partial(
                read_lines, path, cur.offset if cur else 0, cur.inode if cur else None,
                cur.prefix_hash if cur else None, budget=budget, max_line=max_line))
            base = cur.context if cur and not rr.restarted else CursorContext(format=fmt.name)
            ctx = await anyio.to_thread.run_sync(prepare, path, fmt, base)
            parsed = await anyio.to_thread.run_sync(fmt.parse, Input(name=str(path), context=ctx, lines=rr.lines))
            exchanges = parsed.exchanges
            resume = parsed.resume or ((exchanges[-1].offset, exchanges[-1].position) if exchanges and
                                       exchanges[-1].offset is not None else None)
            if rr.more and resume is not None and resume[0] == rr.start and budget < rr.size:
                budget *= 4  # one exchange larger than the budget: read further before committing
                continue
            break
        res.restarted = rr.restarted
        res.more = rr.more
        res.skipped_long_lines = rr.skipped_long
        await self.write(parsed, self.info(path, source, fmt.name), lane, res)
        new = parsed.context
        # The last exchange may still grow: the cursor stays at its first line, so it is re-read next time.
        if resume is not None:
            new_offset = max(rr.start, min(resume[0], rr.end))
            new = replace(new, position=resume[1])
        else:
            new_offset = rr.end
        new = replace(new, format=fmt.name, read_end=rr.end)
        if (new.title and new.title != base.title and new.session_id
                and not await self.writer.retitle(str(path), new.session_id, new.title)):
            new = replace(new, title=base.title)  # (the store did not answer: retitled at the next read)
        phash = await anyio.to_thread.run_sync(prefix_hash, path, new_offset)
        total = (cur.exchanges if cur and not rr.restarted else 0) + max(0, len(exchanges) - (1 if cur else 0))
        await self.state.put_cursor(Cursor(
            str(path), source.key, rr.inode, rr.size, rr.mtime, new_offset, phash, new, total))
        if self.archive is not None:
            await self.archive.keep(path, source, fmt, new)

    async def document(self, path: Path, source: Source, fmt: Format, lane: int, res: IngestResult) -> None:
        st = await anyio.to_thread.run_sync(path.stat)
        cur = await self.state.get_cursor(str(path))
        if cur and cur.same_file(st):
            return
        data = await anyio.to_thread.run_sync(read_capped, path, self.settings.current.ingest.max_file_bytes)
        digest = hashlib.sha256(data).hexdigest()
        if cur and cur.prefix_hash == digest:  # touched or rewritten with the same bytes: nothing new
            await self.state.put_cursor(replace(cur, inode=st.st_ino, size=st.st_size, mtime=st.st_mtime))
            return
        base = CursorContext(format=fmt.name, cwd=cur.context.cwd if cur else "")
        ctx = await anyio.to_thread.run_sync(prepare, path, fmt, base)
        # The full path names the session: two notes.md in different folders are different sessions.
        parsed = await anyio.to_thread.run_sync(parse_document, fmt, data, str(path), ctx)
        if fmt.mirrors and self.live is not None:  # (copies of sessions read from the agent's own files: skipped)
            parsed = await anyio.to_thread.run_sync(self.live.drop, parsed)
        await self.write(parsed, self.info(path, source, parsed.context.format or fmt.name), lane, res)
        await self.state.put_cursor(Cursor(
            str(path), source.key, st.st_ino, st.st_size, st.st_mtime, st.st_size, digest,
            replace(parsed.context, format=fmt.name), len(parsed.exchanges)))
        if self.archive is not None:
            await self.archive.keep(path, source, fmt, parsed.context)

    async def unit(self, unit: Unit, source: Source, lane: int, res: IngestResult) -> None:
        """A folder unit (a Slack export: threads span day files, names come from users.json; a task folder) or
        a database unit (an editor's store), read through its format's ``gather``."""
        root, fmt = unit.path, unit.fmt
        n, size, mtime = await anyio.to_thread.run_sync(unit_signature, unit)
        cur = await self.state.get_cursor(str(root))
        if cur and cur.same_folder(n, size, mtime):
            return
        # a folder is read whole (its context starts afresh, but for what was found beside it: a sub-task's
        # parent, its project); a database from where its context says it was
        if cur and fmt.unit == "database":
            base = cur.context
        else:
            kept = cur.context if cur else CursorContext()
            base = CursorContext(format=fmt.name, parent=kept.parent, agent_type=kept.agent_type, cwd=kept.cwd)
        total = cur.exchanges if cur and fmt.unit == "database" else 0
        batch: tuple[CursorContext, Input, Parsed] | BaseException = await self._read_batch(root, fmt, base)
        while True:
            if isinstance(batch, BaseException):
                self._progress(root, source, None, total)
                self._unreadable(root, source, fmt, batch, res)
                return
            ctx, inp, parsed = batch
            # (a folder format that knows no working directory files under the folder's name (a Slack export's); a
            # database's chats with no folder of their own under the format's name ("state.vscdb" is no wing)
            info = self.info(root, source, fmt.name)
            if fmt.unit == "folder":
                info = replace(info, default_wing=normal_wing(root.name))
            elif not info.default_wing:  # a chat with no workspace: a wing named for its editor (issue 43)
                info = replace(info, default_wing=normal_wing(fmt.agent or fmt.name))
            # A database's gather may read a bounded batch from where its context says (issue 43: a 1 GB store is
            # not held in memory) and say there is more: it is read batch after batch while its context moves,
            # the next batch read while this one is written (each read is a few short statements on the editor's
            # database, so reading ahead holds nothing of the editor's). Until the last batch the cursor keeps no
            # signature, so a restart mid-way goes on from the last batch written.
            context = replace(parsed.context, format=fmt.name, files=n)
            more = inp.more and fmt.unit == "database" and context != replace(ctx, format=fmt.name, files=n)
            ahead: list[tuple[CursorContext, Input, Parsed] | BaseException] = []
            async with anyio.create_task_group() as tg:
                if more:
                    tg.start_soon(self._read_ahead, root, fmt, parsed.context, ahead)
                await self.write(parsed, info, lane, res)
            if self.unreadable.pop(str(root), None) is not None:
                log.info("database_readable" if fmt.unit == "database" else "unit_readable", path=str(root),
                         format=fmt.name)
            st = await anyio.to_thread.run_sync(os.stat, root)
            total += len(parsed.exchanges)
            await self.state.put_cursor(Cursor(str(root), source.key, st.st_ino, -1 if more else size,
                                               0.0 if more else mtime, size, "", context, total))
            self._progress(root, source, inp.progress if more else None, total)
            if not more:
                return
            batch = ahead[0]

    def _progress(self, root: Path, source: Source, progress: tuple[int, int] | None, total: int) -> None:
        """Keep (or, once read, drop) how far a database read batch after batch has come, for ``status``."""
        st = self.status.setdefault(source.key, SourceStatus())
        if progress is None:
            st.reading.pop(str(root), None)
            return
        was = st.reading.get(str(root))
        st.reading[str(root)] = UnitProgress(progress[0], progress[1], total, was.started if was else time.time())

    async def _read_batch(self, root: Path, fmt: Format, base: CursorContext
                          ) -> tuple[CursorContext, Input, Parsed] | BaseException:
        """One batch of a unit: what is beside it, its gathered input and its parse; a unit that cannot be read
        now (not of its format, a database locked or damaged) is returned as its error."""
        try:
            ctx = await anyio.to_thread.run_sync(prepare, root, fmt, base)
            inp = await anyio.to_thread.run_sync(gather, root, fmt, ctx)
            return ctx, inp, await anyio.to_thread.run_sync(fmt.parse, inp)
        except (NormalizeError, sqlite3.Error) as exc:
            return exc

    async def _read_ahead(self, root: Path, fmt: Format, base: CursorContext,
                          out: list[tuple[CursorContext, Input, Parsed] | BaseException]) -> None:
        out.append(await self._read_batch(root, fmt, base))

    def _unreadable(self, root: Path, source: Source, fmt: Format, exc: BaseException, res: IngestResult) -> None:
        """A unit not of its format, or a database locked longer than the busy timeout or damaged: counted and
        logged once while it stays so (a store locked for minutes changes many times a second), read again
        when it changes."""
        database = isinstance(exc, sqlite3.Error)
        res.error = (f"{fmt.name} database not readable now: {exc}" if database else
                     f"not a {fmt.name} {fmt.unit}: {exc}")
        if self.unreadable.get(str(root)) != str(exc):
            self.unreadable[str(root)] = str(exc)
            st_err = self.status.setdefault(source.key, SourceStatus())
            st_err.errors += 1
            st_err.last_error = f"{root}: {res.error}"
            log.warning("database_unreadable" if database else "unit_unreadable", path=str(root), format=fmt.name,
                        error=str(exc))

    async def project_file(self, path: Path, source: Source, lane: int, res: IngestResult) -> None:
        """Code and notes: a changed file is re-chunked and its old drawers replaced."""
        st = await anyio.to_thread.run_sync(path.stat)
        cur = await self.state.get_cursor(str(path))
        if cur and cur.same_file(st):
            return
        project = await anyio.to_thread.run_sync(project_settings, source.root)
        exchanges, skipped = await anyio.to_thread.run_sync(project_exchanges, path, source.root, st.st_size)
        status = self.status.setdefault(source.key, SourceStatus())
        if skipped:
            status.skipped[skipped] = status.skipped.get(skipped, 0) + 1
        # (this machine's drawers of the file only: another machine's file of the same path is not this one)
        await self.writer.store.delete(Filters(source_path=(str(path),), machine=(self.machine,),
                                               include_deleted=True))
        rel = path.relative_to(source.root).as_posix() if path != source.root else path.name
        room = project.rooms.get(rel.split("/", 1)[0]) or room_for_path(rel)
        info = replace(self.info(path, source, "project"), wing=source.wing or project.wing or source.root.name,
                       room=room, room_keywords=None)
        res.exchanges = len(exchanges)
        res.wrote(await self.writer.write(exchanges, info, lane))
        self.status.setdefault(source.key, SourceStatus()).exchanges += len(exchanges)
        await self.state.put_cursor(Cursor(
            str(path), source.key, st.st_ino, st.st_size, st.st_mtime, st.st_size, "",
            CursorContext(format="project"), len(exchanges)))

    async def skip_unknown(self, path: Path, source: Source) -> None:
        """A JSON file in no format we know (a config file, a stray export part) is not stored as text: it is
        counted as skipped and logged, and read again only when it changes."""
        st = await anyio.to_thread.run_sync(path.stat)
        status = self.status.setdefault(source.key, SourceStatus())
        status.skipped[UNKNOWN] = status.skipped.get(UNKNOWN, 0) + 1
        log.warning("unknown_format_skipped", path=str(path))
        await self.state.put_cursor(Cursor(
            str(path), source.key, st.st_ino, st.st_size, st.st_mtime, st.st_size, "",
            CursorContext(format=UNKNOWN), 0))
