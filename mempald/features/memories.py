"""Memories saved by hand or by an agent, and the life of every drawer: soft delete (audited), restore, purge,
re-embedding with another model."""

from __future__ import annotations

import functools
import hashlib
import sqlite3
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import anyio.to_thread

from mempald import logs
from mempald.archive import views as archive_views
from mempald.config import SettingsRef
from mempald.embed.embedder import Embedder
from mempald.errors import InvalidInput, MempalError, NotFound, Unavailable
from mempald.features.keyword_reindex import KeywordReindex
from mempald.ingest.drawers import SourceInfo
from mempald.ingest.ingestor import Ingestor
from mempald.ingest.queues import BACKFILL, FRESH, DenseQueue
from mempald.ingest.writer import Changes
from mempald.normalize import registry
from mempald.normalize.compaction import compaction_key
from mempald.normalize.model import Exchange
from mempald.normalize.wings import normal_wing, wing_from_cwd
from mempald.state.gateway import StateGateway
from mempald.store.base import Filters, StoreError
from mempald.store.gateway import StoreGateway

log = logs.get("memories")

MAX_SAVE_CHARS = 64_000
SAVE_WAIT_S = 15.0  # a save gives up (saying so) when the store cannot be written for this long (a full disk)
PURGE_BATCH = 500


def wing_for(wing: str | None, cwd: str | None, default: str = "general") -> str:
    """The wing named, else the project of ``cwd``, else ``default``."""
    if wing and normal_wing(wing):
        return normal_wing(wing)
    return wing_from_cwd(cwd, default=default) if cwd else default


class Memories:
    def __init__(self, settings: SettingsRef, store: StoreGateway, state: StateGateway, embedder: Embedder,
                 ingestor: Ingestor, dense: DenseQueue, machine: str, user: str,
                 room_keywords: Callable[[], dict[str, list[str]] | None],
                 keywords: KeywordReindex | None = None) -> None:
        self.settings = settings
        self.keywords = keywords
        self.store = store
        self.state = state
        self.embedder = embedder
        self.ingestor = ingestor
        self.dense = dense
        self.machine = machine
        self.changes: Changes | None = None  # told what was deleted and purged (the sync's tombstones)
        self.user = user
        self.room_keywords = room_keywords

    async def save(self, text: str, *, wing: str | None, cwd: str | None, room: str | None, importance: int,
                   memory_type: str | None, agent: str, dry_run: bool, duplicate_threshold: float) -> dict[str, Any]:
        """Save a memory; warns (never blocks) about near-duplicates (cosine >= ``duplicate_threshold``)."""
        text = text.strip()
        if not text:
            raise InvalidInput("text is empty")
        if len(text) > MAX_SAVE_CHARS:
            raise InvalidInput(f"text is longer than {MAX_SAVE_CHARS:,} characters; save it as a file and watch it")
        wing = wing_for(wing, cwd)
        vec = await anyio.to_thread.run_sync(self.embedder.embed_query, text)
        dense_hits, _ = await self.store.query(vec.tolist(), None, Filters(), 5)
        similar = [{"drawer_id": h.id, "score": round(h.score, 4), "wing": h.payload.get("wing"),
                    "room": h.payload.get("room"), "text": str(h.payload.get("text", ""))[:300]}
                   for h in dense_hits if h.score >= duplicate_threshold]
        key = hashlib.sha256(f"{wing}\x1f{text}".encode()).hexdigest()[:32]
        now = datetime.now(UTC).isoformat()
        ex = Exchange(source_kind="manual", session_id=f"manual:{key}", key=key, user="", assistant=text,
                      timestamp=now, agent=agent, kind="note", cwd=cwd)
        info = SourceInfo(kind="manual", path=f"mempal:{agent}", source_key=f"manual:{agent}", machine=self.machine,
                          user=self.user, wing=wing, room=room or "", added_by=agent,
                          redact=self.settings.current.ingest.redact_secrets, extract=True,
                          room_keywords=self.room_keywords(), importance=importance, memory_type=memory_type)
        result: dict[str, Any] = {"wing": wing, "similar": similar, "dry_run": dry_run}
        if similar:
            result["warning"] = f"{len(similar)} similar memories already stored (cosine >= {duplicate_threshold})"
        if dry_run:
            return result
        with anyio.move_on_after(SAVE_WAIT_S) as waited:  # the store's writes are retried while it cannot write
            res = await self.ingestor.write_exchanges([ex], info, FRESH)
        if waited.cancelled_caught:
            why = self.ingestor.store_warning or "the store is unavailable"
            raise Unavailable(f"the store could not be written for {SAVE_WAIT_S:g} s ({why}): the memory may not be "
                              "saved; saving it again is safe (it keeps its id)")
        # Stored from here on (the upsert is retried until it lands): what follows may fail on a full disk
        # without making the save a failure; the reply says what was left undone.
        result["drawer_ids"] = list(res.ids)
        result["written"] = res.written
        undone: list[str] = []
        try:
            page, _ = await self.store.scroll(Filters(exchange_key=(key,), include_deleted=True), 100)
            result["drawer_ids"] = [pt.id for pt in page] or result["drawer_ids"]
            if len(page) == 1 and page[0].payload.get("text") == text:
                # One chunk, no context: the vector computed for the duplicate check is the drawer's own.
                await self.store.set_dense([(page[0].id, vec.tolist())])
        except (StoreError, MempalError) as exc:  # the dense worker embeds it (it was queued by the write)
            undone.append(f"its meaning vector is computed later ({exc})")
        try:
            await self.state.audit(agent, "ingest", key, "", wing=wing)
        except sqlite3.Error as exc:
            undone.append(f"the audit log could not record it ({exc})")
        if undone:
            log.warning("save_partly_done", key=key, undone=undone)
            result["warning"] = "; ".join([*([result["warning"]] if "warning" in result else []),
                                           "saved, but " + "; ".join(undone)])
        return result

    async def save_summary(self, summary: str, *, session_id: str, agent: str, cwd: str | None,
                           transcript_path: str | None, trigger: str | None) -> dict[str, Any]:
        """The host's own summary of a compacted session (Claude Code's PostCompact ``compact_summary``), stored
        with that session: a drawer of kind summary, in the session's wing (the wing its drawers already have,
        else the cwd's project), with its transcript as source. The same summary again changes nothing, and nor
        does one the transcript already gave (``normalize.compaction``: one key for both copies)."""
        summary = summary.strip()
        if not summary:
            raise InvalidInput("summary is empty")
        if len(summary) > MAX_SAVE_CHARS:
            raise InvalidInput(f"summary is longer than {MAX_SAVE_CHARS:,} characters")
        page, _ = await self.store.scroll(Filters(session_id=(session_id,)), 1)
        wing = str(page[0].payload.get("wing") or "") if page else ""
        wing = wing or wing_for(None, cwd)
        # (the key the transcript's copy of the summary gets too: it replaces this one, never the other way round)
        key = compaction_key(session_id, summary) or "compact:" + hashlib.sha256(
            f"{session_id}\x1f{summary}".encode()).hexdigest()[:24]
        own = registry.for_agent(agent)
        kind = own.name if own is not None else agent
        held, _ = await self.store.scroll(Filters(exchange_key=(key,), session_id=(session_id,),
                                                  machine=(self.machine,), include_deleted=True), 100)
        if held:  # already stored: the transcript's copy (with the answers after it), or this one again (or deleted)
            return {"wing": str(held[0].payload.get("wing") or wing), "session_id": session_id, "written": 0,
                    "drawer_ids": [pt.id for pt in held if pt.payload.get("status") != "deleted"]}
        ex = Exchange(source_kind=kind, session_id=session_id, key=key, user="", assistant=summary,
                      timestamp=datetime.now(UTC).isoformat(), agent=agent, kind="summary", cwd=cwd,
                      extra=(("trigger", trigger),) if trigger else ())
        path = transcript_path or f"mempal:compact:{session_id}"
        info = SourceInfo(kind=kind, path=path, source_key=f"compact:{agent}", machine=self.machine, user=self.user,
                          wing=wing, added_by=f"{agent}-postcompact",
                          redact=self.settings.current.ingest.redact_secrets, extract=True,
                          room_keywords=self.room_keywords())
        res = await self.ingestor.write_exchanges([ex], info, FRESH)
        found, _ = await self.store.scroll(Filters(exchange_key=(key,), session_id=(session_id,)), 100)
        return {"wing": wing, "session_id": session_id, "drawer_ids": [pt.id for pt in found], "written": res.written}

    async def delete(self, ids: tuple[str, ...], *, actor: str, reason: str) -> dict[str, Any]:
        """Soft delete: hidden from search, kept until ``purge``; every delete is audited (who, when, why)."""
        found = await self.store.retrieve(list(ids))
        if not found:
            raise NotFound("no drawer with those ids")
        now = time.time()
        await self.store.set_payload([f.id for f in found], {"deleted": True, "status": "deleted", "deleted_at": now,
                                                             "deleted_by": actor, "delete_reason": reason})
        if self.changes is not None:
            await self.changes.removed([f.id for f in found], "delete", {"at": now, "by": actor, "reason": reason})
        for f in found:
            await self.state.audit(actor, "delete", f.id, reason)
        return {"deleted": [f.id for f in found], "missing": sorted(set(ids) - {f.id for f in found})}

    async def restore(self, ids: tuple[str, ...], *, actor: str = "user") -> dict[str, Any]:
        found = await self.store.retrieve(list(ids))
        await self.store.set_payload([f.id for f in found], {"deleted": False, "status": "live"})
        for f in found:
            await self.state.audit(actor, "restore", f.id, "")
        return {"restored": [f.id for f in found], "missing": sorted(set(ids) - {f.id for f in found})}

    async def purge(self, *, before: float | None, dry_run: bool, actor: str,
                    all_machines: bool = False) -> dict[str, Any]:
        """Remove soft-deleted drawers for good (those deleted before ``before``; default: all)."""
        victims: list[str] = []
        # (a store shared with other machines' daemons: this machine's drawers only, unless asked for all)
        mine = (self.machine,) if self.store.shared and not all_machines else ()
        sessions: set[str] = set()
        async for page in self.store.pages(Filters(only_deleted=True, machine=mine)):
            chosen = [pt for pt in page if before is None or float(pt.payload.get("deleted_at") or 0) < before]
            victims += [pt.id for pt in chosen]
            sessions |= {str(pt.payload.get("session_id") or "") for pt in chosen} - {""}
        archived = {"files": 0, "bytes": 0}
        if not dry_run and victims:
            for i in range(0, len(victims), PURGE_BATCH):
                await self.store.delete(Filters(ids=tuple(victims[i : i + PURGE_BATCH]), include_deleted=True))
            if self.changes is not None:
                await self.changes.removed(victims, "purge", {"at": time.time(), "by": actor})
            archived = await self._purge_archived(sessions)
            await self.state.audit(actor, "purge", f"{len(victims)} drawers", "", archive_files_removed=
                                   archived["files"], archive_bytes_removed=archived["bytes"])
        return {"purged": len(victims), "dry_run": dry_run, "archive_removed": archived}

    async def _purge_archived(self, sessions: set[str]) -> dict[str, int]:
        """The archived transcripts of the purged sessions of which no drawer is left (mempald.archive)."""
        archive = self.ingestor.archive
        empty = [s for s in sorted(sessions) if not await self.store.count(Filters(session_id=(s,),
                                                                                   include_deleted=True))]
        if archive is None or not empty:
            return {"files": 0, "bytes": 0}
        return await anyio.to_thread.run_sync(functools.partial(archive_views.remove, archive, sessions=empty))

    async def reindex(self) -> dict[str, Any]:
        """Re-embed every drawer with the configured model; resumable (drawers without a dense vector are found
        again on restart) and visible in ``status`` as the dense backlog. A store whose keyword vectors were
        made by another tokenizer (and whose dense vectors by this model) has its keyword vectors re-encoded
        instead, in the background and resumable (``features.keyword_reindex``); its dense vectors stay."""
        meta = await self.store.get_meta()
        keywords_stale = self.keywords is not None and self.keywords.stale(meta)
        model_stale = meta.get("model") != self.embedder.info.model_id or meta.get("dim") != self.embedder.dim
        n = 0 if keywords_stale and not model_stale else await self._requeue_dense()
        meta = await self.store.get_meta()
        meta.update({"model": self.embedder.info.model_id, "dim": self.embedder.dim, "reindexed_at": time.time()})
        await self.store.set_meta(meta)
        result: dict[str, Any] = {"queued": n, "model": self.embedder.info.model_id}
        if self.keywords is not None:
            result["tokenizer"] = self.keywords.bm25.tokenizer
            result["keywords_queued"] = await self.keywords.start() if keywords_stale else 0
        return result

    async def _requeue_dense(self) -> int:
        n = 0
        async for page in self.store.pages(Filters(include_deleted=True)):
            await self.store.clear_dense([pt.id for pt in page])
            for pt in page:
                self.dense.put(pt.id, float(pt.payload.get("ts") or 0), BACKFILL)
            n += len(page)
        return n


BELIEFS_SHOWN = 12  # agent-memory files listed by the wake-up
BELIEF_CHARS = 220
BELIEF_ROOMS = tuple(sorted({f.room for f in registry.FORMATS if f.room}))  # the rooms formats fix (agent-memory)


def note_parts(text: str) -> tuple[str, str]:
    """A Markdown note's front matter ``description`` (or "") and its body after the front matter."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return "", text
    end = next((i for i, ln in enumerate(lines[1:], 1) if ln.strip() == "---"), len(lines))
    described = next((ln.split(":", 1)[1].strip().strip("'\"") for ln in lines[1:end]
                      if ln.strip().startswith("description:")), "")
    return described, "\n".join(lines[end + 1:])


def belief_line(payload: Mapping[str, Any], text: str) -> str:
    """One line about an agent's memory file: its title, then its description or its first statements."""
    body, rest = note_parts(text)
    if not body:  # its first statements (not its headings), as many as the line holds
        said = [ln.strip().lstrip("-*> ").strip() for ln in rest.splitlines()
                if ln.strip() and not ln.lstrip().startswith(("#", "<!--", "---"))]
        body = "; ".join(x.rstrip(";") for x in said if len(x) >= 4)[: BELIEF_CHARS * 2]
    line = f"{payload.get('title') or payload.get('kind')}: {' '.join(body.split())}"
    return line if len(line) <= BELIEF_CHARS else line[:BELIEF_CHARS].rsplit(" ", 1)[0] + "…"


async def agent_beliefs(store: StoreGateway, wing: str, limit: int = BELIEFS_SHOWN) -> list[str]:
    """What the agents already believe about ``wing`` (the rooms a format fixes: agent-memory, the agents' own
    memory files): a line a file of this project or of the user (no project), the newest first. Read only:
    mempald never writes those files."""
    if not BELIEF_ROOMS:
        return []
    firsts: dict[str, tuple[float, Mapping[str, Any], str]] = {}
    async for page in store.pages(Filters(room=BELIEF_ROOMS)):
        for pt in page:
            p = pt.payload
            if int(p.get("chunk_index") or 0) or (p.get("wing") != wing and p.get("cwd")):
                continue
            firsts[str(p.get("source_path"))] = (float(p.get("ts") or 0.0), p, str(p.get("text") or ""))
    ranked = sorted(firsts.values(), key=lambda t: (bool(t[1].get("cwd")), t[0]), reverse=True)
    return [belief_line(p, text) for _ts, p, text in ranked[:limit]]
