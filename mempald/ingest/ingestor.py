"""Ingest: read new bytes, normalize, build drawers, upsert keyword-first, queue dense vectors.

Order of work for one file (under its per-source lock):
1. read the complete lines after the cursor (worker thread);
2. normalize and build drawers (pure, worker thread);
3. upsert drawers whose content changed with their BM25 vector only: they are keyword-searchable now;
4. advance the cursor, only after the upsert returned (the WAL has it);
5. queue the drawers for their dense vector (``DenseWorker``), fresh ones ahead of the backfill.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from mempald import logs
from mempald.config import SettingsRef
from mempald.embed.embedder import Embedder
from mempald.embed.sparse import Bm25Encoder
from mempald.errors import Busy
from mempald.ingest.drawers import BuildStats, Drawer, SourceInfo, build_drawers, index_text
from mempald.ingest.queues import FRESH, DenseQueue
from mempald.normalize import claude_code
from mempald.normalize.model import Exchange, Line
from mempald.sources.reader import ReadResult, prefix_hash, read_lines
from mempald.sources.registry import Source
from mempald.state.db import Cursor, State
from mempald.store.base import Filters, PointData, StoredPoint, StoreError
from mempald.store.gateway import StoreGateway
from mempald.text.classify import room_for_path

log = logs.get("ingest")
REDACTED = "[REDACTED:"  # the start of every redaction placeholder (mempald.text.redact.PLACEHOLDER)

JSONL_FORMATS = ("claude_code", "codex")
UNKNOWN = "unknown_format"  # a .json/.jsonl file in no known format: skipped, not stored as text
UPSERT_BATCH = 32


@dataclass(slots=True)
class IngestResult:
    path: str
    fmt: str = ""
    exchanges: int = 0
    drawers: int = 0
    written: int = 0
    skipped_long_lines: int = 0
    restarted: bool = False
    more: bool = False
    error: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}


@dataclass(slots=True)
class SourceStatus:
    files: int = 0
    exchanges: int = 0
    errors: int = 0
    last_error: str = ""
    last_ingest: float = 0.0
    skipped: dict[str, int] = field(default_factory=dict)


class Ingestor:
    """Reads sources into drawers. Settings are read from the current snapshot at each use (a reload applies
    them), except the model's token limit, fixed for the daemon's life. ``room_keywords`` gives the taxonomy
    in force (``mempal taxonomy`` edits it)."""

    def __init__(
        self,
        *,
        settings: SettingsRef,
        state: State,
        store: StoreGateway,
        embedder: Embedder,
        bm25: Bm25Encoder,
        dense: DenseQueue,
        machine: str,
        user: str,
        room_keywords: Callable[[], dict[str, list[str]] | None] = lambda: None,
    ) -> None:
        self.settings = settings
        self.state = state
        self.store = store
        self.embedder = embedder
        self.bm25 = bm25
        self.dense = dense
        self.machine = machine
        self.user = user
        self.max_tokens = settings.current.embed.max_tokens
        self.room_keywords = room_keywords
        self._locks: dict[str, anyio.Lock] = {}
        self.status: dict[str, SourceStatus] = {}
        self.store_warning = ""

    # locks ---------------------------------------------------------------------------------------------
    def lock_for(self, key: str) -> anyio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = anyio.Lock()
        return lock

    async def ingest_path(self, path: Path, source: Source, lane: int = FRESH) -> IngestResult:
        """Read what is new in ``path``'s unit (the file, or the Slack export folder it is in), one task at a time."""
        folder = await anyio.to_thread.run_sync(source.export_folder, path)
        path = folder or path
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
            return await self._ingest_locked(path, source, lane, export=folder is not None)
        finally:
            lock.release()

    # core ----------------------------------------------------------------------------------------------
    async def _ingest_locked(self, path: Path, source: Source, lane: int, *, export: bool) -> IngestResult:
        """Ingest one unit; ``export``: it is a Slack export folder (read whole)."""
        res = IngestResult(str(path))
        st = self.status.setdefault(source.key, SourceStatus())
        try:
            if not await anyio.to_thread.run_sync(path.exists):
                return res
            if source.mode == "projects":
                res.fmt = "project"
                await self._ingest_project_file(path, source, lane, res)
                st.last_ingest = time.time()
                return res
            if export:
                res.fmt = "slack"
                await self._ingest_slack(path, source, lane, res)
                st.last_ingest = time.time()
                return res
            fmt = source.fmt if source.fmt != "auto" else await anyio.to_thread.run_sync(_detect, path)
            res.fmt = fmt
            if fmt == UNKNOWN:
                await self._skip_unknown(path, source, st)
            elif fmt in JSONL_FORMATS:
                await self._ingest_jsonl(path, source, fmt, lane, res)
            else:
                await self._ingest_document(path, source, fmt, lane, res)
            st.last_ingest = time.time()
        except (OSError, UnicodeError) as exc:
            res.error = f"{type(exc).__name__}: {exc}"
            st.errors += 1
            st.last_error = f"{path}: {res.error}"
            log.warning("ingest_failed", path=str(path), error=res.error)
        if res.skipped_long_lines:
            st.skipped["long_line"] = st.skipped.get("long_line", 0) + res.skipped_long_lines
            log.warning("long_lines_skipped", path=str(path), count=res.skipped_long_lines)
        return res

    @property
    def redact(self) -> bool:
        return self.settings.current.ingest.redact_secrets

    @property
    def extract(self) -> bool:
        return self.settings.current.ingest.extract_general

    def _source_info(self, path: Path, source: Source, fmt: str) -> SourceInfo:
        return SourceInfo(kind=fmt, path=str(path), source_key=source.key, machine=self.machine, user=self.user,
                          wing=source.wing, redact=self.redact, extract=self.extract,
                          room_keywords=self.room_keywords())

    async def _ingest_jsonl(self, path: Path, source: Source, fmt: str, lane: int, res: IngestResult) -> None:
        cur = await anyio.to_thread.run_sync(self.state.get_cursor, str(path))
        budget = self.settings.current.ingest.read_chunk_bytes
        max_line = self.settings.current.ingest.max_line_bytes
        while True:
            rr: ReadResult = await anyio.to_thread.run_sync(functools.partial(
                read_lines, path, cur.offset if cur else 0, cur.inode if cur else None,
                cur.prefix_hash if cur else None, budget=budget, max_line=max_line))
            ctx = dict(cur.context) if cur and not rr.restarted else {}
            first_position = int(ctx.get("position", "0") or 0)
            exchanges = await anyio.to_thread.run_sync(_normalize_jsonl, fmt, rr.lines, ctx, first_position)
            if rr.more and exchanges and exchanges[-1].offset == rr.start and budget < rr.size:
                budget *= 4  # one exchange larger than the budget: read further before committing
                continue
            break
        res.restarted = rr.restarted
        res.more = rr.more
        res.skipped_long_lines = rr.skipped_long
        res.exchanges = len(exchanges)
        info = self._source_info(path, source, fmt)
        await self._write(exchanges, info, lane, res)
        # The last exchange may still grow: the cursor stays at its first line, so it is re-read next time.
        if exchanges and exchanges[-1].offset is not None:
            new_offset = max(rr.start, min(exchanges[-1].offset, rr.end))
            ctx["position"] = str(exchanges[-1].position)
        else:
            new_offset = rr.end
        ctx["read_end"] = str(rr.end)
        if fmt == "codex" or not ctx.get("session_id"):
            ctx.update(_session_context(fmt, rr.lines))
        phash = await anyio.to_thread.run_sync(prefix_hash, path, new_offset)
        total = (cur.exchanges if cur and not rr.restarted else 0) + max(0, len(exchanges) - (1 if cur else 0))
        await anyio.to_thread.run_sync(self.state.put_cursor, Cursor(
            str(path), source.key, rr.inode, rr.size, rr.mtime, new_offset, phash, ctx, total))

    async def _ingest_document(self, path: Path, source: Source, fmt: str, lane: int, res: IngestResult) -> None:
        st = await anyio.to_thread.run_sync(path.stat)
        cur = await anyio.to_thread.run_sync(self.state.get_cursor, str(path))
        if cur and cur.same_file(st):
            return
        data = await anyio.to_thread.run_sync(path.read_bytes)
        # The full path names the session: two notes.md in different folders are different sessions.
        exchanges = await anyio.to_thread.run_sync(lambda: _normalize_document(fmt, data, str(path)))
        res.exchanges = len(exchanges)
        await self._write(exchanges, self._source_info(path, source, fmt), lane, res)
        await anyio.to_thread.run_sync(self.state.put_cursor, Cursor(
            str(path), source.key, st.st_ino, st.st_size, st.st_mtime, st.st_size, "", {"format": fmt},
            len(exchanges)))

    async def _ingest_project_file(self, path: Path, source: Source, lane: int, res: IngestResult) -> None:
        """Code and notes: a changed file is re-chunked and its old drawers replaced."""
        st = await anyio.to_thread.run_sync(path.stat)
        cur = await anyio.to_thread.run_sync(self.state.get_cursor, str(path))
        if cur and cur.same_file(st):
            return
        project = await anyio.to_thread.run_sync(project_settings, source.root)
        exchanges, skipped = await anyio.to_thread.run_sync(project_exchanges, path, source.root, st.st_size)
        status = self.status.setdefault(source.key, SourceStatus())
        if skipped:
            status.skipped[skipped] = status.skipped.get(skipped, 0) + 1
        await self.store.delete(Filters(source_path=(str(path),), include_deleted=True))
        rel = path.relative_to(source.root).as_posix() if path != source.root else path.name
        room = project.rooms.get(rel.split("/", 1)[0]) or room_for_path(rel)
        info = SourceInfo(kind="project", path=str(path), source_key=source.key, machine=self.machine, user=self.user,
                          wing=source.wing or project.wing or source.root.name, room=room, redact=self.redact,
                          extract=self.extract)
        res.exchanges = len(exchanges)
        await self._write(exchanges, info, lane, res)
        await anyio.to_thread.run_sync(self.state.put_cursor, Cursor(
            str(path), source.key, st.st_ino, st.st_size, st.st_mtime, st.st_size, "", {"format": "project"},
            len(exchanges)))

    async def _skip_unknown(self, path: Path, source: Source, status: SourceStatus) -> None:
        """A JSON file in no format we know (a config file, a stray export part) is not stored as text: it is
        counted as skipped and logged, and read again only when it changes."""
        st = await anyio.to_thread.run_sync(path.stat)
        status.skipped[UNKNOWN] = status.skipped.get(UNKNOWN, 0) + 1
        log.warning("unknown_format_skipped", path=str(path))
        await anyio.to_thread.run_sync(self.state.put_cursor, Cursor(
            str(path), source.key, st.st_ino, st.st_size, st.st_mtime, st.st_size, "", {"format": UNKNOWN}, 0))

    async def _ingest_slack(self, root: Path, source: Source, lane: int, res: IngestResult) -> None:
        """A Slack export folder is one unit: threads span day files, names come from users.json."""
        from mempald.normalize import slack
        from mempald.sources.registry import folder_signature

        n, size, mtime = await anyio.to_thread.run_sync(folder_signature, root)
        cur = await anyio.to_thread.run_sync(self.state.get_cursor, str(root))
        if cur and (cur.inode, cur.size, cur.mtime) == (n, size, mtime):
            return
        from mempald.normalize.model import NormalizeError

        files = await anyio.to_thread.run_sync(_read_export, root)
        try:
            exchanges = await anyio.to_thread.run_sync(slack.parse_export, files)
        except NormalizeError as exc:
            res.error = f"not a Slack export: {exc}"
            log.warning("slack_export_unreadable", path=str(root), error=str(exc))
            return
        res.exchanges = len(exchanges)
        info = SourceInfo(kind="slack", path=str(root), source_key=source.key, machine=self.machine, user=self.user,
                          wing=source.wing or root.name, redact=self.redact, extract=self.extract,
                          room_keywords=self.room_keywords())
        await self._write(exchanges, info, lane, res)
        await anyio.to_thread.run_sync(self.state.put_cursor, Cursor(
            str(root), source.key, n, size, mtime, size, "", {"format": "slack"}, len(exchanges)))

    async def forget_file(self, path: str, source: Source) -> None:
        """A file disappeared: code drawers follow it; conversation drawers are kept (they outlive transcripts)."""
        if source.mode == "projects":
            await self.store.delete(Filters(source_path=(path,), include_deleted=True))
        await anyio.to_thread.run_sync(self.state.drop_cursor, path)

    async def write_exchanges(self, exchanges: Sequence[Exchange], info: SourceInfo, lane: int = FRESH) -> IngestResult:
        """Store exchanges that did not come from a watched file (manual saves, imports, benchmarks)."""
        res = IngestResult(info.path, fmt=info.kind, exchanges=len(exchanges))
        async with self.lock_for(info.source_key):
            await self._write(exchanges, info, lane, res)
        return res

    async def _write(self, exchanges: Sequence[Exchange], info: SourceInfo, lane: int, res: IngestResult) -> None:
        if not exchanges:
            return
        stats = BuildStats()
        previous = await self._previous_texts(exchanges)
        drawers = await anyio.to_thread.run_sync(
            lambda: build_drawers(exchanges, info, self.embedder.count_tokens, self.max_tokens, stats, previous)
        )
        res.drawers = len(drawers)
        changed, redacted_before = await self._changed(drawers)
        if changed:
            points = await anyio.to_thread.run_sync(
                lambda: [PointData(d.id, d.payload, self.bm25.document(index_text(d.payload))) for d in changed]
            )
            # Small batches: qdrant-edge holds the GIL for a whole call (256 points: about 80 ms at 100k
            # drawers, the event loop frozen meanwhile; 32: a few ms), at the same cost per point.
            for i in range(0, len(points), UPSERT_BATCH):
                await self._upsert_with_retry(points[i : i + UPSERT_BATCH])
            for d in changed:
                self.dense.put(d.id, float(d.payload.get("ts") or 0.0), lane)
        res.written = len(changed)
        # Stale chunks of a re-read exchange that shrank: drop chunk indexes past the new count.
        await self._drop_stale_chunks(drawers)
        if stats.redactions:
            # Count what this write newly redacted: a re-read exchange (the last one of a growing file) was
            # counted when it was first stored, so placeholders already stored in its drawers are subtracted.
            fresh = sum(d.text.count(REDACTED) for d in changed) - redacted_before
            if fresh > 0:
                await anyio.to_thread.run_sync(self.state.bump, info.source_key, "redactions", fresh)
        st = self.status.setdefault(info.source_key, SourceStatus())
        st.exchanges += len(exchanges)

    async def _previous_texts(self, exchanges: Sequence[Exchange]) -> dict[str, str]:
        """The last drawer text before each session's first exchange in this batch (its context)."""
        firsts: dict[str, int] = {}
        for ex in exchanges:
            firsts.setdefault(ex.session_id, ex.position)
        out: dict[str, str] = {}
        for session, pos in firsts.items():
            if pos <= 0:
                continue
            flt = Filters(session_id=(session,), position_min=pos - 1, position_max=pos - 1)
            page, _ = await self.store.scroll(flt, 64)
            if page:
                best = max(page, key=lambda p: int(p.payload.get("chunk_index", 0)))
                out[session] = str(best.payload.get("text", ""))
        return out

    async def _changed(self, drawers: Sequence[Drawer]) -> tuple[list[Drawer], int]:
        """The drawers whose content is new, and how many redaction placeholders their stored versions had."""
        if not drawers:
            return [], 0
        wanted = [d.id for d in drawers]
        existing: list[StoredPoint] = []
        for i in range(0, len(wanted), UPSERT_BATCH):  # small store calls: each holds the GIL while it runs
            existing += await self.store.retrieve(wanted[i : i + UPSERT_BATCH])
        deleted = {p.id for p in existing if p.payload.get("status") == "deleted"}
        hashes = {p.id: p.payload.get("content_hash") for p in existing if p.id not in deleted}
        # Same content, new file (rotated, renamed, moved folder): only the citation moves, no re-embedding.
        paths = {p.id: p.payload.get("source_path") for p in existing if p.id not in deleted}
        moved = [d.id for d in drawers if d.id in hashes and hashes[d.id] == d.payload["content_hash"]
                 and paths.get(d.id) != d.payload["source_path"]]
        if moved:
            where = {"source_path": drawers[0].payload["source_path"]}  # one _write call: one file
            await self.store.set_payload(moved, where)
        changed = [d for d in drawers if d.id not in deleted and hashes.get(d.id) != d.payload["content_hash"]]
        ids = {d.id for d in changed}
        before = sum(str(p.payload.get("text", "")).count(REDACTED) for p in existing if p.id in ids)
        return changed, before

    async def _drop_stale_chunks(self, drawers: Sequence[Drawer]) -> None:
        by_ex: dict[str, int] = {}
        for d in drawers:
            if int(d.payload.get("chunk_count", 1)) == int(d.payload["chunk_index"]) + 1 and d.payload["chunk_index"]:
                by_ex[d.payload["exchange_key"]] = int(d.payload["chunk_count"])
        # Only matters for exchanges re-read while growing; cheap count check first.
        for key, n in by_ex.items():
            flt = Filters(exchange_key=(key,))
            total = await self.store.count(flt)
            if total > n:
                stale = [p.id for p in (await self.store.scroll(flt, 1000))[0]
                         if int(p.payload.get("chunk_index", 0)) >= n]
                if stale:
                    await self.store.delete(Filters(ids=tuple(stale)))

    async def _upsert_with_retry(self, points: list[PointData]) -> None:
        delay = 0.5
        while True:
            try:
                await self.store.upsert(points)
                if self.store_warning:
                    log.info("store_recovered")
                self.store_warning = ""
                return
            except StoreError as exc:
                self.store_warning = f"store write failing, retrying: {exc}"
                log.warning("store_write_failed", error=str(exc), retry_in_s=delay)
                await anyio.sleep(delay)
                delay = min(delay * 2, 30.0)


@dataclass(frozen=True, slots=True)
class ProjectSettings:
    wing: str = ""
    rooms: dict[str, str] = field(default_factory=dict)


def project_settings(root: Path) -> ProjectSettings:
    """The project's ``mempal.toml`` (written by ``mempal init``): its wing and folder -> room map."""
    import tomllib

    try:
        raw = tomllib.loads((root / "mempal.toml").read_text())
    except (OSError, ValueError):
        return ProjectSettings()
    wing = raw.get("wing") if isinstance(raw.get("wing"), str) else ""
    rooms = raw.get("rooms")
    if not isinstance(rooms, dict):
        rooms = {}
    return ProjectSettings(str(wing), {str(k): str(v) for k, v in rooms.items() if isinstance(v, str)})


def project_exchanges(path: Path, root: Path, size: int) -> tuple[list[Exchange], str]:
    """Chunks of a code or notes file (about 800 characters, 100 overlap), or the reason it is skipped."""
    from mempald.text.codechunk import chunk_text, is_probably_binary

    if size > 1_000_000:
        return [], "too-large"
    data = path.read_bytes()
    if is_probably_binary(data[:8192]):
        return [], "binary"
    text = data.decode("utf-8", errors="replace")
    rel = path.relative_to(root).as_posix() if path != root else path.name
    out = []
    for chunk in chunk_text(text):
        out.append(Exchange(
            source_kind="project", session_id=rel, key=f"{chunk.start_line}-{chunk.end_line}:{chunk.index}",
            user="", assistant=chunk.text, position=chunk.index, kind="code", title=rel,
            extra=(("lines", f"{chunk.start_line}-{chunk.end_line}"),),
        ))
    return out, ""


def _read_export(root: Path, max_bytes: int = 512 * 1024 * 1024) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    total = 0
    for p in sorted(root.rglob("*.json")):
        if p.is_file():
            data = p.read_bytes()
            total += len(data)
            if total > max_bytes:
                break
            files[p.relative_to(root).as_posix()] = data
    return files


def _detect(path: Path) -> str:
    from mempald.normalize.detect import detect_bytes

    with path.open("rb") as fh:
        head = fh.read(65536)
    if path.name == ".aider.chat.history.md":
        return "aider"
    fmt = detect_bytes(head, path.name)
    if fmt is None:
        return UNKNOWN if path.suffix.lower() in (".json", ".jsonl") else "text"
    return fmt


def _normalize_jsonl(fmt: str, lines: Sequence[Line], ctx: dict[str, str], first_position: int) -> list[Exchange]:
    if fmt == "claude_code":
        return claude_code.parse_lines(lines, first_position=first_position)
    from mempald.normalize import codex

    return codex.parse_lines(lines, session_id=ctx.get("session_id"), cwd=ctx.get("cwd"),
                             git_branch=ctx.get("git_branch"), first_position=first_position)


def _session_context(fmt: str, lines: Sequence[Line]) -> dict[str, str]:
    if fmt == "claude_code":
        return claude_code.session_context(lines)
    from mempald.normalize import codex

    meta = codex.session_meta(lines)
    return {k: v for k, v in meta.items() if k in ("session_id", "cwd", "git_branch") and v}


def _normalize_document(fmt: str, data: bytes, name: str) -> list[Exchange]:
    from mempald.normalize import aider, chatgpt, claude_ai, gemini, plaintext
    from mempald.normalize.model import NormalizeError

    parsers: dict[str, Callable[[bytes, str], list[Exchange]]] = {
        "chatgpt": chatgpt.parse_document,
        "claude_ai": claude_ai.parse_document,
        "gemini": gemini.parse_document,
        "aider": aider.parse_document,
        "text": plaintext.parse_document,
    }
    parser = parsers.get(fmt, plaintext.parse_document)
    try:
        return parser(data, name)
    except NormalizeError as exc:
        log.warning("not_in_detected_format", name=name, format=fmt, error=str(exc))
        return plaintext.parse_document(data, name)
