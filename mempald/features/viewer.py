"""What the web viewer reads that other methods do not give cheaply: a wing's sessions by start, a session's
drawers in order, the knowledge graph as nodes and edges, and pack outputs.

Everything here uses the store's indexed filters so that a page costs milliseconds at 100k drawers:

- a session's start is its drawer at position 0 (every normalizer numbers a session's exchanges from 0), so a
  wing's sessions are one filtered scroll of ``wing = W and position <= 0`` (a few hundred drawers, not the
  wing's thousands) plus exact facets of ``session_id`` (the drawer counts) and ``room`` (the wing's rooms).
  Sessions with no drawer at position 0 (its exchange was empty, or deleted) are dated by any one of their
  drawers, up to ``FALLBACK_LOOKUPS`` per listing; the rest are counted as ``undated``. The listing is cached
  per wing until the store is next written to and then, while two counts of that wing do not move, for up to
  ``REUSE_S`` (writes elsewhere do not rebuild it); a rebuild re-reads the counts but re-uses the sessions'
  first drawers while none went away (it reads only new sessions' ones), for ``STARTS_REUSE_S``;
  ``bench/viewer.py`` times the cached and the first view;
- a session's window is a ``session_id = S and a <= position <= b`` scroll.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio.to_thread

from mempal.methods import drawer as declared
from mempal.methods.drawer import having
from mempald.errors import InvalidInput, NotFound
from mempald.features.kg import KnowledgeGraph, Triple, normalize_date, normalize_name
from mempald.features.pack.output import load_pack, twin_json
from mempald.features.pack.result import PackError
from mempald.sources.catalog import SourceSet
from mempald.state.gateway import StateGateway
from mempald.store.base import Filters, StoredPoint
from mempald.store.gateway import StoreGateway

FALLBACK_LOOKUPS = 64  # sessions without a drawer at position 0, dated one store call each, per listing
CACHED_WINGS = 16
REUSE_S = 60.0  # a listing whose wing's counts did not move is kept this long across writes to other wings
STARTS_REUSE_S = 600.0  # sessions' first drawers re-used by later listings for this long (then all read again)
MAX_WINDOW = 400  # drawers in one session window (chunks of long exchanges included)
EXCERPT = 240  # characters of a session's first exchange in a listing
HIDDEN = having(declared.HIDDEN)  # payload fields never sent: the indexing context repeats the drawer before


def drawer_record(pt: StoredPoint) -> dict[str, Any]:
    """A drawer as the viewer shows it: its id and payload, without the indexing context."""
    out: dict[str, Any] = {"drawer_id": pt.id}
    out.update({k: v for k, v in pt.payload.items() if k not in HIDDEN})
    return out


def _start(pt: StoredPoint) -> dict[str, Any]:
    p = pt.payload
    text = str(p.get("text") or "")
    return {
        "session_id": str(p.get("session_id") or ""), "first_drawer": pt.id, "ts": float(p.get("ts") or 0.0),
        "timestamp": str(p.get("timestamp") or ""), "title": str(p.get("title") or ""),
        "excerpt": text[:EXCERPT], "agent": str(p.get("agent") or ""), "source_kind": str(p.get("source_kind") or ""),
        "source_path": str(p.get("source_path") or ""), "git_branch": str(p.get("git_branch") or ""),
        "cwd": str(p.get("cwd") or ""), "room": str(p.get("room") or ""),
        "chunk": int(p.get("chunk_index") or 0), "dated": True,
    }


@dataclass
class _Listing:
    """A wing's sessions as last listed: valid while the store's write count is ``writes``, or while the wing's
    ``mark`` (drawer count, session-start count) is unchanged, for ``REUSE_S`` after it was built. ``starts``
    (each session's first drawer, read ``starts_read``) is re-used by the next listing while no session start
    went away, for ``STARTS_REUSE_S``: drawers appended to known sessions (the usual write) cost the two
    facets, a new session one more small scroll, not the scroll of every start."""

    writes: int
    mark: tuple[int, int]
    built: float
    sessions: list[dict[str, Any]]
    undated: int
    rooms: dict[str, int]
    starts: dict[str, dict[str, Any]]
    starts_read: float


class SessionBrowser:
    """A wing's sessions and a session's drawers, from the store's indexes."""

    def __init__(self, store: StoreGateway) -> None:
        self.store = store
        self._cache: dict[str, _Listing] = {}

    async def _mark(self, wing: str) -> tuple[int, int]:
        """Two exact counts (milliseconds) that move when the wing gains, loses or hides drawers or sessions."""
        return (await self.store.count(Filters(wing=(wing,))),
                await self.store.count(Filters(wing=(wing,), position_max=0)))

    async def _listing(self, wing: str) -> _Listing:
        """Every session of ``wing`` (newest first), how many could not be dated, and the wing's rooms. Writes to
        other wings (a backfill elsewhere) cost two counts, not a new listing."""
        writes = self.store.writes
        hit = self._cache.get(wing)
        if hit is not None and hit.writes == writes and not self.store.shared:  # (shared: others write too)
            return hit
        mark = await self._mark(wing)
        if hit is not None and hit.mark == mark and time.monotonic() - hit.built < REUSE_S:
            hit.writes = writes
            return hit
        counts = await self.store.facet("session_id", Filters(wing=(wing,)), limit=1_000_000)
        rooms = await self.store.facet("room", Filters(wing=(wing,)))
        now = time.monotonic()
        new: list[str] = []
        if hit is not None and hit.mark[1] <= mark[1] and now - hit.starts_read < STARTS_REUSE_S:
            # no session start went away: the known ones are re-used, only new sessions' starts are read
            starts, starts_read = {k: v for k, v in hit.starts.items() if k in counts}, hit.starts_read
            new = [sid for sid in counts if sid not in starts][:FALLBACK_LOOKUPS]
            for sid in new:
                page, _ = await self.store.scroll(Filters(wing=(wing,), session_id=(sid,), position_max=0), 64)
                for pt in page:
                    st = _start(pt)
                    if sid not in starts or st["chunk"] < starts[sid]["chunk"]:
                        starts[sid] = st
        else:
            starts, starts_read = await self._starts(wing), now
        missing = [sid for sid in counts if sid not in starts]
        for sid in missing[:FALLBACK_LOOKUPS]:
            page, _ = await self.store.scroll(Filters(wing=(wing,), session_id=(sid,)), 1)
            if page:
                starts[sid] = {**_start(page[0]), "dated": False}
        sessions = [{**s, "drawers": counts.get(sid, 0)} for sid, s in starts.items() if sid in counts]
        sessions.sort(key=lambda s: (-s["ts"], s["session_id"]))
        listing = _Listing(writes, mark, now, sessions, max(0, len(missing) - FALLBACK_LOOKUPS), rooms, starts,
                           starts_read)
        self._cache.pop(wing, None)
        if len(self._cache) >= CACHED_WINGS:
            self._cache.pop(next(iter(self._cache)))
        self._cache[wing] = listing
        return listing

    async def _starts(self, wing: str) -> dict[str, dict[str, Any]]:
        """Each session's first drawer (position 0, its lowest chunk), by session id."""
        starts: dict[str, dict[str, Any]] = {}
        async for page in self.store.pages(Filters(wing=(wing,), position_max=0), size=256):
            for pt in page:
                s = _start(pt)
                have = starts.get(s["session_id"])
                if have is None or s["chunk"] < have["chunk"]:
                    starts[s["session_id"]] = s
        return starts

    async def wing_sessions(self, wing: str, since: float | None, until: float | None, limit: int) -> dict[str, Any]:
        got = await self._listing(wing)
        chosen = [s for s in got.sessions
                  if (since is None or s["ts"] >= since) and (until is None or s["ts"] <= until)]
        return {"wing": wing, "sessions": chosen[:limit], "total": len(got.sessions), "matching": len(chosen),
                "more": len(chosen) > limit, "undated": got.undated, "rooms": got.rooms}

    async def session_drawers(self, drawer_id: str | None, session_id: str | None, start: int, before: int,
                              after: int, include_deleted: bool) -> dict[str, Any]:
        machine: tuple[str, ...] = ()
        anchor: dict[str, Any] | None = None
        if drawer_id:
            found = await self.store.retrieve([drawer_id])
            if not found:
                raise NotFound(f"no drawer {drawer_id}")
            anchor = drawer_record(found[0])
            session_id = str(anchor.get("session_id") or "")
            machine = (str(anchor["machine"]),) if anchor.get("machine") else ()
            pos = int(anchor.get("position") or 0)
            lo, hi = max(0, pos - before), pos + after
        elif session_id:
            lo, hi = start, start + after
        else:
            raise InvalidInput("give a drawer_id or a session_id")
        if not session_id:  # a drawer that belongs to no session is shown alone
            return {"session_id": "", "anchor": anchor, "drawers": [anchor], "first": lo, "last": hi,
                    "earlier": False, "later": False, "total": 1}
        base = Filters(session_id=(session_id,), machine=machine, include_deleted=include_deleted)
        window = Filters(session_id=base.session_id, machine=machine, include_deleted=include_deleted,
                         position_min=lo, position_max=hi)
        page, _ = await self.store.scroll(window, MAX_WINDOW)
        drawers = sorted((drawer_record(pt) for pt in page),
                         key=lambda d: (int(d.get("position") or 0), int(d.get("chunk_index") or 0), d["drawer_id"]))
        if anchor is not None and all(d["drawer_id"] != anchor["drawer_id"] for d in drawers):
            drawers.append(anchor)  # a deleted drawer asked for by id is shown even without include_deleted
            drawers.sort(key=lambda d: (int(d.get("position") or 0), int(d.get("chunk_index") or 0)))
        earlier = lo > 0 and bool((await self.store.scroll(
            Filters(session_id=base.session_id, machine=machine, position_max=lo - 1), 1))[0])
        later = bool((await self.store.scroll(
            Filters(session_id=base.session_id, machine=machine, position_min=hi + 1), 1))[0])
        total = await self.store.count(base)
        return {"session_id": session_id, "anchor": anchor, "drawers": drawers, "first": lo, "last": hi,
                "earlier": earlier, "later": later, "total": total}


# the knowledge graph ----------------------------------------------------------------------------------------
def graph_data(triples: list[Triple], *, entity: str | None, limit: int, now: str) -> dict[str, Any]:
    """Nodes (entities with their number of facts) and edges (facts with their interval) for a picture: the
    ``limit`` most connected entities, or ``entity`` and its most connected neighbours."""
    spelling: dict[str, str] = {}
    degree: Counter[str] = Counter()
    for t in triples:
        for name in (t.subject, t.object):
            key = name.casefold()
            spelling.setdefault(key, name)
            degree[key] += 1
    ranked = sorted(degree, key=lambda k: (-degree[k], k))
    centre = None
    if entity:
        centre = normalize_name(entity).casefold()
        neighbours = {o for t in triples for s, o in ((t.subject.casefold(), t.object.casefold()),
                                                      (t.object.casefold(), t.subject.casefold())) if s == centre}
        chosen = ([centre] if centre in degree else []) + [k for k in ranked if k in neighbours and k != centre]
    else:
        chosen = ranked
    keep = set(chosen[:limit])
    edges = [{"id": t.id, "subject": t.subject, "predicate": t.predicate, "object": t.object,
              "valid_from": t.valid_from, "valid_to": t.valid_to, "confidence": t.confidence,
              "source_drawer": t.source_drawer, "created_at": t.created_at, "current": t.is_valid_at(now)}
             for t in triples if t.subject.casefold() in keep and t.object.casefold() in keep]
    nodes = [{"name": spelling[k], "degree": degree[k], "centre": k == centre} for k in chosen[:limit]]
    return {"nodes": nodes, "edges": edges, "entities": len(degree), "triples": len(triples),
            "truncated": len(chosen) > limit, "entity": spelling.get(centre, entity) if centre else None}


async def kg_graph(graph: KnowledgeGraph, state: StateGateway, entity: str | None, as_of: str | None,
                   include_expired: bool, limit: int) -> dict[str, Any]:
    def run() -> dict[str, Any]:
        triples = graph.query(as_of=as_of, include_expired=include_expired)
        now = normalize_date(as_of) if as_of else normalize_date(datetime.now(UTC))
        return graph_data(triples, entity=entity, limit=limit, now=now)

    return await state.run(run)  # (the graph is in the state database)


# pack outputs -----------------------------------------------------------------------------------------------
def _pack(out: Path) -> dict[str, Any]:
    """One pack folder's output: the header figures, overview and topics (centroids left out)."""
    record: dict[str, Any] = {"output": str(out), "written": False}
    js = twin_json(out)
    if not js.is_file():
        return record
    try:
        data = load_pack(js).to_json()
    except PackError as exc:
        return {**record, "error": str(exc)}
    files = sorted(out.iterdir()) if out.is_dir() else [js]
    return {
        **record, "written": True, "json": str(js), "modified": js.stat().st_mtime,
        "files": [{"name": f.name, "bytes": f.stat().st_size} for f in files if f.is_file() and
                  not f.name.startswith(".")],
        "header": data["header"], "overview": data["overview"], "notes": data["notes"],
        "sources": data["files"],
        "topics": [{k: v for k, v in t.items() if k != "centroid"} for t in data["topics"]],
    }


async def pack_outputs(sources: SourceSet, folder: Path | None) -> dict[str, Any]:
    def run() -> dict[str, Any]:
        if folder is not None:
            return {"packs": [{"source": None, "root": None, **_pack(folder)}]}
        return {"packs": [{"source": s.key, "root": str(s.root), **_pack(s.pack_output())}
                          for s in sources if s.mode == "pack"]}

    return await anyio.to_thread.run_sync(run)
