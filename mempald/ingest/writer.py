"""Writing exchanges to the store: drawers built (``drawers.py``), only what changed upserted with its BM25
vector (keyword-searchable at once), its dense vector queued, and stale chunks dropped.

A drawer whose text is unchanged is not re-embedded; when what is said about it changed (its wing, title,
parent exchange, memory type... after an upgrade of the adapters, or a title found later in the file), those
payload fields are set in place. So re-reading a source brings its drawers up to date with stable ids.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.to_thread

from mempal.methods import drawer as declared
from mempal.methods.drawer import having
from mempald import logs
from mempald.embed.embedder import Embedder
from mempald.embed.sparse import Bm25Encoder
from mempald.ingest.build_pool import MIN_EXCHANGES, BuildPool, Built, build
from mempald.ingest.drawers import Drawer, SourceInfo, index_text
from mempald.ingest.queues import BACKFILL, DenseQueue
from mempald.normalize.model import Exchange
from mempald.state.gateway import StateGateway
from mempald.store.base import Filters, PointData, SparseVec, StoredPoint, StoreError
from mempald.store.gateway import StoreGateway

if TYPE_CHECKING:
    from mempald.ingest.forget_list import Admission
    from mempald.ingest.store_outbox import StoreOutbox, Waiting

log = logs.get("ingest")
REDACTED = "[REDACTED:"  # the start of every redaction placeholder (mempald.text.redact.PLACEHOLDER)
UPSERT_BATCH = 32
# A long write (a database's batch, a large transcript's backfill) goes in parts of this many exchanges, two at a
# time: one part is built (by a worker process) while the one before is upserted (by the store's process), as
# writes of several files overlap, instead of each process waiting for the other (issue 43: a 1 GB Cursor store
# was read at 412 exchanges/s against 683 for Claude Code's files in turn; its building worker was busy 47 % of
# the time against 82 %).
PART_EXCHANGES = 128
PARTS_IN_FLIGHT = 2
# Payload fields a re-read may correct without the text changing (set in place, no re-embedding).
REFRESHED = having(declared.REFRESHED)


class Changes(Protocol):
    """Told what this machine stored and removed, once it is in the store (redacted): the sync's outbox
    (``mempald.sync``). ``op``: forget, delete or purge."""

    async def stored(self, ids: Sequence[str]) -> None: ...

    async def removed(self, ids: Sequence[str], op: str, detail: Mapping[str, Any]) -> None: ...


@dataclass(frozen=True, slots=True)
class Written:
    ids: list[str] = field(default_factory=list)  # every drawer the exchanges make (written or already there)
    written: int = 0  # how many were new or changed
    capped: int = 0  # exchanges cut to their source's max_drawers (ingest.drawers.capped_pieces)


def _first(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first error of a task group's (a part's ``StoreError``, say), as a caller of one write expects it."""
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc


class DrawerWriter:
    def __init__(self, *, state: StateGateway, store: StoreGateway, embedder: Embedder, bm25: Bm25Encoder,
                 dense: DenseQueue, max_tokens: int, admit: Admission | None = None,
                 pool: BuildPool | None = None) -> None:
        self.pool = pool  # worker processes for the backfill's building (None: always in a thread)
        self.admit = admit  # what may be stored: not what the user forgot or excluded (None: everything)
        self.state = state
        self.store = store
        self.embedder = embedder
        self.bm25 = bm25
        self.dense = dense
        self.max_tokens = max_tokens
        self.warning = ""
        self.changes: Changes | None = None  # told of the drawers written (the sync's outbox; None: nobody)
        # A store other machines share (a Qdrant server): while it does not answer, drawers wait in this local
        # outbox and are written in order when it answers again (``drain``). None: retried in place.
        self.outbox: StoreOutbox | None = None
        self.waiting = 0  # drawers in the outbox

    async def write(self, exchanges: Sequence[Exchange], info: SourceInfo, lane: int) -> Written:
        """Store ``exchanges``: the drawers they make, and how many had to be written. A long write goes in parts
        (``PART_EXCHANGES``), ``PARTS_IN_FLIGHT`` at a time; the first failure is raised (as from one part)."""
        if len(exchanges) <= PART_EXCHANGES:
            return await self._write_part(exchanges, info, lane)
        parts = [exchanges[i : i + PART_EXCHANGES] for i in range(0, len(exchanges), PART_EXCHANGES)]
        done: list[Written] = [Written()] * len(parts)
        limiter = anyio.CapacityLimiter(PARTS_IN_FLIGHT)

        async def one(i: int) -> None:
            async with limiter:
                done[i] = await self._write_part(parts[i], info, lane)

        try:
            async with anyio.create_task_group() as tg:
                for i in range(len(parts)):
                    tg.start_soon(one, i)
        except BaseExceptionGroup as group:
            raise _first(group) from None
        return Written([i for w in done for i in w.ids], sum(w.written for w in done), sum(w.capped for w in done))

    async def _write_part(self, exchanges: Sequence[Exchange], info: SourceInfo, lane: int) -> Written:
        if not exchanges:
            return Written()
        offline = bool(self.waiting)  # (the shared store did not answer: what is written waits in the outbox)
        try:
            previous = {} if offline else await self._previous_texts(exchanges)
        except StoreError:
            if self.outbox is None:
                raise
            previous, offline = {}, True
        built = await self._build(exchanges, info, previous, lane)
        drawers = built.drawers
        if self.admit is not None:
            drawers = self.admit.drawers(drawers, info)
        try:
            # (offline: every drawer is sent; ``drain`` leaves out what the store already holds or deleted)
            copy_of = info.path if info.copy else None
            changed, redacted_before = (list(drawers), 0) if offline else await self._changed(drawers, copy_of)
        except StoreError:
            if self.outbox is None:
                raise
            (changed, redacted_before), offline = (list(drawers), 0), True
        if changed:
            points = await anyio.to_thread.run_sync(
                lambda: [PointData(d.id, d.payload, self._sparse(d, built)) for d in changed]
            )
            if offline or not await self._upsert_all(points):
                await self._keep(points, lane)  # (their vectors are queued when they are written)
                offline = True
            else:
                for d in changed:
                    self.dense.put(d.id, float(d.payload.get("ts") or 0.0), lane)
                if self.changes is not None:
                    await self.changes.stored([d.id for d in changed])
        # Stale chunks of a re-read exchange that shrank: drop chunk indexes past the new count.
        if not offline and not info.copy:  # (a copy may split an exchange in fewer pieces than its original)
            await self._drop_stale_chunks(drawers)
        if built.redactions:
            # Count what this write newly redacted: a re-read exchange (the last one of a growing file) was
            # counted when it was first stored, so placeholders already stored in its drawers are subtracted.
            fresh = sum(d.text.count(REDACTED) for d in changed) - redacted_before
            if fresh > 0:
                await self.state.bump(info.source_key, "redactions", fresh)
        capped = {d.payload["exchange_key"] for d in drawers if d.payload.get("capped")}
        return Written([d.id for d in drawers], len(changed), len(capped))

    async def _build(self, exchanges: Sequence[Exchange], info: SourceInfo, previous: dict[str, str],
                     lane: int) -> Built:
        """The drawers of ``exchanges``: by a worker process for the backfill (their keyword vectors too), else
        in a thread."""
        if self.pool is not None and self.pool.enabled and lane == BACKFILL and len(exchanges) >= MIN_EXCHANGES:
            built = await self.pool.build(exchanges, info, previous)
            if built is not None:
                return built
        return await anyio.to_thread.run_sync(
            lambda: build(exchanges, info, self.embedder.count_tokens, self.max_tokens, previous, None))

    def _sparse(self, drawer: Drawer, built: Built) -> SparseVec:
        """A drawer's keyword vector: the one its worker encoded when it indexes the same text (the admission
        may have given it another context), else encoded here."""
        text = index_text(drawer.payload)
        done = built.sparse.get(drawer.id)
        return done[1] if done is not None and done[0] == text else self.bm25.document(text)

    async def retitle(self, source_path: str, session_id: str, title: str) -> bool:
        """Give every drawer of a session read from ``source_path`` the title found later in the file. A shared
        store that does not answer: the drawers waiting in the outbox get it, and False says the stored ones
        did not (the caller asks again at the next read)."""
        if self.outbox is not None:
            outbox = self.outbox
            await self.state.run(lambda: outbox.retitle(source_path, session_id, title))
        flt = Filters(source_path=(source_path,), session_id=(session_id,))
        try:
            async for page in self.store.pages(flt):
                ids = [p.id for p in page if p.payload.get("title") != title]
                if ids:
                    await self.store.set_payload(ids, {"title": title})
        except StoreError as exc:
            if self.outbox is None:
                raise
            log.info("retitle_waits", session=session_id, error=str(exc))
            return False
        return True

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

    async def _changed(self, drawers: Sequence[Drawer], copy_of: str | None = None) -> tuple[list[Drawer], int]:
        """The drawers whose content is new, and how many redaction placeholders their stored versions had.
        Drawers with the same text whose metadata changed get the new fields set in place. ``copy_of`` (the path
        of a copy of chats another reading stores, ``Format.copy``): the drawers another file wrote are kept as
        they are (this file's own are brought up to date as usual: an answer that grew)."""
        if not drawers:
            return [], 0
        wanted = [d.id for d in drawers]
        existing: list[StoredPoint] = []
        for i in range(0, len(wanted), UPSERT_BATCH):  # small store calls: each holds the GIL while it runs
            existing += await self.store.retrieve(wanted[i : i + UPSERT_BATCH])
        deleted = {p.id for p in existing if p.payload.get("status") == "deleted"}
        if copy_of is not None:
            others = {p.id for p in existing if p.payload.get("source_path") != copy_of}
            drawers = [d for d in drawers if d.id not in others]
            existing = [p for p in existing if p.id not in others]
        stored = {p.id: p.payload for p in existing if p.id not in deleted}
        updates: dict[str, dict[str, Any]] = {}
        for d in drawers:
            old = stored.get(d.id)
            if old is None or old.get("content_hash") != d.payload["content_hash"]:
                continue
            # Same content: only what is said about it may move (a new file path, fields a re-read corrects).
            diff = {k: d.payload.get(k) for k in ("source_path", *REFRESHED) if old.get(k) != d.payload.get(k)}
            if diff:
                updates[d.id] = diff
        for group in _grouped(updates):
            await self.store.set_payload(group[0], group[1])
        changed = [d for d in drawers if d.id not in deleted and stored.get(d.id, {}).get("content_hash")
                   != d.payload["content_hash"]]
        ids = {d.id for d in changed}
        before = sum(str(p.payload.get("text", "")).count(REDACTED) for p in existing if p.id in ids)
        return changed, before

    async def _drop_stale_chunks(self, drawers: Sequence[Drawer]) -> None:
        by_ex: dict[tuple[str, str], int] = {}
        for d in drawers:
            if int(d.payload.get("chunk_count", 1)) == int(d.payload["chunk_index"]) + 1 and d.payload["chunk_index"]:
                by_ex[(d.payload["exchange_key"], d.payload["machine"])] = int(d.payload["chunk_count"])
        # Only matters for exchanges re-read while growing; cheap count check first. (This machine's drawers only.)
        for (key, machine), n in by_ex.items():
            flt = Filters(exchange_key=(key,), machine=(machine,))
            total = await self.store.count(flt)
            if total > n:
                stale = [p.id for p in (await self.store.scroll(flt, 1000))[0]
                         if int(p.payload.get("chunk_index", 0)) >= n]
                if stale:
                    await self.store.delete(Filters(ids=tuple(stale)))

    async def _upsert_all(self, points: list[PointData]) -> bool:
        """Upsert in small batches (qdrant-edge holds the GIL for a whole call: 256 points about 80 ms at 100k
        drawers, the event loop frozen meanwhile; 32: a few ms). A shared store that does not answer: False
        (the caller keeps them in the outbox); any other store is retried until it takes them."""
        for i in range(0, len(points), UPSERT_BATCH):
            if self.outbox is None:
                await self._upsert_with_retry(points[i : i + UPSERT_BATCH])
                continue
            try:
                await self.store.upsert(points[i : i + UPSERT_BATCH])
            except StoreError as exc:
                log.warning("store_unreachable_outbox", error=str(exc))
                return False
        return True

    async def _keep(self, points: list[PointData], lane: int) -> None:
        outbox = self.outbox
        assert outbox is not None
        await self.state.run(lambda: outbox.put(points, lane))
        self.waiting = await self.state.run(lambda: len(outbox))
        self.warning = f"store unreachable: {self.waiting} drawers wait in the local outbox until it answers"

    async def drain(self) -> int:
        """Write what waits in the outbox, oldest first, leaving out what the store already holds unchanged or
        holds deleted; returns how many were written (0 when nothing waits), ``StoreError`` while it does not
        answer."""
        outbox = self.outbox
        if outbox is None:
            return 0
        batch: list[Waiting] = await self.state.run(lambda: outbox.take(UPSERT_BATCH))
        if not batch:
            if self.waiting:
                log.info("store_outbox_drained")
            self.waiting, self.warning = 0, ""
            return 0
        stored = {p.id: p.payload for p in await self.store.retrieve([w.point.id for w in batch])}
        fresh = [w for w in batch if stored.get(w.point.id) is None or (
            stored[w.point.id].get("status") != "deleted"
            and stored[w.point.id].get("content_hash") != w.point.payload.get("content_hash"))]
        if fresh:
            await self.store.upsert([w.point for w in fresh])
        await self.state.run(lambda: outbox.done(batch))
        for w in fresh:
            self.dense.put(w.point.id, float(w.point.payload.get("ts") or 0.0), w.lane)
        if self.changes is not None and fresh:
            await self.changes.stored([w.point.id for w in fresh])
        self.waiting = await self.state.run(lambda: len(outbox))
        return len(fresh) or len(batch)

    async def run_outbox(self) -> None:
        """The outbox's loop: drained as soon as the store answers (tried every second, backing off to 30 s)."""
        if self.outbox is None:
            return
        outbox = self.outbox
        self.waiting = await self.state.run(lambda: len(outbox))
        delay = 1.0
        while True:
            if not self.waiting:
                await anyio.sleep(1.0)
                self.waiting = await self.state.run(lambda: len(outbox))
                continue
            try:
                while await self.drain():
                    pass
                delay = 1.0
            except StoreError as exc:
                self.warning = f"store unreachable: {self.waiting} drawers wait in the local outbox ({exc})"
                await anyio.sleep(delay)
                delay = min(delay * 2, 30.0)

    async def _upsert_with_retry(self, points: list[PointData]) -> None:
        delay = 0.5
        while True:
            try:
                await self.store.upsert(points)
                if self.warning:
                    log.info("store_recovered")
                self.warning = ""
                return
            except StoreError as exc:
                self.warning = f"store write failing, retrying: {exc}"
                log.warning("store_write_failed", error=str(exc), retry_in_s=delay)
                await anyio.sleep(delay)
                delay = min(delay * 2, 30.0)


def _grouped(updates: dict[str, dict[str, Any]]) -> list[tuple[list[str], dict[str, Any]]]:
    """Drawers that need the same payload change, together (one store call each)."""
    groups: dict[str, tuple[list[str], dict[str, Any]]] = {}
    for pid, diff in updates.items():
        sig = repr(sorted(diff.items()))
        groups.setdefault(sig, ([], diff))[0].append(pid)
    return list(groups.values())
