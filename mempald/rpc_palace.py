"""Socket methods for the palace's memory features: manual saves, soft delete and purge, reindex, wake-up
layers, wings/rooms/tunnels, taxonomy, the knowledge graph, fact-check and AAAK compression."""

from __future__ import annotations

import hashlib
import time
from datetime import UTC, datetime
from typing import Any

import anyio.to_thread

from client.protocol import INVALID_PARAMS, NOT_FOUND, RpcError
from mempald import aaak, factcheck, layers
from mempald.classify import FALLBACK_ROOM
from mempald.drawers import SourceInfo
from mempald.kg import KGError, KnowledgeGraph
from mempald.normalize.model import Exchange
from mempald.normalize.wings import wing_from_cwd
from mempald.palace import Palace
from mempald.params import Handler, Params
from mempald.queues import BACKFILL, FRESH
from mempald.search import parse_time
from mempald.store.base import Filters
from mempald.taxonomy import load_taxonomy, save_taxonomy, taxonomy_path

DUPLICATE_THRESHOLD = 0.92
MEMORY_TYPES = ("decision", "preference", "milestone", "problem", "emotional")


def _kg(p: Palace) -> KnowledgeGraph:
    kg = KnowledgeGraph(p.state.conn, lock=p.state.lock)
    kg.ensure_schema()
    return kg


def _wing(p: Palace, params: Params, default: str = "general") -> str:
    wing = params.text("wing")
    if wing:
        return str(wing)
    cwd = params.text("cwd")
    return wing_from_cwd(cwd, default=default) if cwd else default


# ingest / delete / purge / reindex -------------------------------------------------------------------------
async def ingest(p: Palace, params: Params) -> Any:
    """Save a memory by hand or from an agent; warns (never blocks) about near-duplicates."""
    text = params.text("text", required=True).strip()
    if not text:
        raise RpcError(INVALID_PARAMS, "text is empty")
    if len(text) > 64_000:
        raise RpcError(INVALID_PARAMS, "text is longer than 64,000 characters; save it as a file and watch it")
    wing = _wing(p, params)
    room = params.text("room") or ""
    importance = params.integer("importance", 3, lo=0, hi=5)
    mtype = params.text("memory_type")
    if mtype is not None and mtype not in (*MEMORY_TYPES, "none"):
        raise RpcError(INVALID_PARAMS, f"memory_type must be one of {', '.join(MEMORY_TYPES)} or none")
    agent = params.text("agent") or params.text("added_by") or "user"
    dry_run = params.flag("dry_run")
    vec = await anyio.to_thread.run_sync(p.embedder.embed_query, text)
    dense_hits, _ = await p.runner.run(p.runner.store.query, vec.tolist(), None, Filters(), 5)
    threshold = params.number("duplicate_threshold", DUPLICATE_THRESHOLD)
    similar = [{"drawer_id": h.id, "score": round(h.score, 4), "wing": h.payload.get("wing"),
                "room": h.payload.get("room"), "text": str(h.payload.get("text", ""))[:300]}
               for h in dense_hits if h.score >= threshold]
    key = hashlib.sha256(f"{wing}\x1f{text}".encode()).hexdigest()[:32]
    now = datetime.now(UTC).isoformat()
    ex = Exchange(source_kind="manual", session_id=f"manual:{key}", key=key, user="", assistant=text,
                  timestamp=now, agent=agent, kind="note", cwd=params.text("cwd"))
    info = SourceInfo(kind="manual", path=f"mempal:{agent}", source_key=f"manual:{agent}", machine=p.machine,
                      user=p.user, wing=wing, room=room, added_by=agent, redact=p.settings.ingest.redact_secrets,
                      extract=True, room_keywords=p.ingestor.room_keywords, importance=importance,
                      memory_type=mtype)
    result: dict[str, Any] = {"wing": wing, "similar": similar, "dry_run": dry_run}
    if similar:
        result["warning"] = f"{len(similar)} similar memories already stored (cosine >= {threshold})"
    if dry_run:
        return result
    res = await p.ingestor.write_exchanges([ex], info, FRESH)
    ids = await p.runner.run(p.runner.store.scroll, Filters(exchange_key=(key,), include_deleted=True), 100)
    result["drawer_ids"] = [pt.id for pt in ids[0]]
    if len(ids[0]) == 1 and ids[0][0].payload.get("text") == text:
        # One chunk, no context: the vector computed for the duplicate check is the drawer's own.
        await p.runner.run(p.runner.store.set_dense, [(ids[0][0].id, vec.tolist())])
    result["written"] = res.written
    await anyio.to_thread.run_sync(lambda: p.state.audit(agent, "ingest", key, "", wing=wing))
    return result


async def delete(p: Palace, params: Params) -> Any:
    """Soft delete: hidden from search, kept until ``purge``; every delete is audited (who, when, why)."""
    ids = params.texts("drawer_id") or params.texts("drawer_ids")
    if not ids:
        raise RpcError(INVALID_PARAMS, "give drawer_id (one id or a list)")
    actor = params.text("actor") or "user"
    reason = params.text("reason") or ""
    found = await p.runner.run(p.runner.store.retrieve, list(ids))
    if not found:
        raise RpcError(NOT_FOUND, "no drawer with those ids")
    now = time.time()
    await p.runner.run(p.runner.store.set_payload, [f.id for f in found],
                       {"deleted": True, "status": "deleted", "deleted_at": now, "deleted_by": actor,
                        "delete_reason": reason})
    for f in found:
        await anyio.to_thread.run_sync(p.state.audit, actor, "delete", f.id, reason)
    return {"deleted": [f.id for f in found], "missing": sorted(set(ids) - {f.id for f in found})}


async def restore(p: Palace, params: Params) -> Any:
    ids = params.texts("drawer_id")
    found = await p.runner.run(p.runner.store.retrieve, list(ids))
    await p.runner.run(p.runner.store.set_payload, [f.id for f in found], {"deleted": False, "status": "live"})
    return {"restored": [f.id for f in found]}


async def purge(p: Palace, params: Params) -> Any:
    """Remove soft-deleted drawers for good (those deleted before ``before``, default: all)."""
    before = parse_time(params.raw.get("before"), "before")
    dry_run = params.flag("dry_run")
    victims: list[str] = []
    async for page in p.runner.pages(Filters(only_deleted=True)):
        victims += [pt.id for pt in page if before is None or float(pt.payload.get("deleted_at") or 0) < before]
    if not dry_run and victims:
        for i in range(0, len(victims), 500):
            await p.runner.run(p.runner.store.delete, Filters(ids=tuple(victims[i : i + 500]), include_deleted=True))
        actor = params.text("actor") or "user"
        await anyio.to_thread.run_sync(lambda: p.state.audit(actor, "purge", f"{len(victims)} drawers", ""))
    return {"purged": len(victims), "dry_run": dry_run}


async def reindex(p: Palace, params: Params) -> Any:
    """Re-embed every drawer with the configured model; resumable (drawers without a dense vector are
    found again on restart) and visible in ``status`` as the dense backlog."""
    n = 0
    async for page in p.runner.pages(Filters(include_deleted=True)):
        await p.runner.run(p.runner.store.clear_dense, [pt.id for pt in page])
        for pt in page:
            p.dense.put(pt.id, float(pt.payload.get("ts") or 0), BACKFILL)
        n += len(page)
    meta = await p.runner.run(p.runner.store.get_meta)
    meta.update({"model": p.embedder.info.model_id, "dim": p.embedder.dim, "reindexed_at": time.time()})
    await p.runner.run(p.runner.store.set_meta, meta)
    return {"queued": n, "model": p.embedder.info.model_id}


# layers ------------------------------------------------------------------------------------------------------
async def _wing_drawers(p: Palace, wing: str, room: str | None = None, cap: int = 5000) -> list[tuple[str, Any]]:
    """Candidates for the wake-up layers: the wing's important drawers (importance >= 3), or all of them
    when it has fewer than 40 of those; at most ``cap``."""
    for min_imp in (3.0, None):
        out: list[tuple[str, Any]] = []
        flt = Filters(wing=(wing,), room=(room,) if room else (), min_importance=min_imp)
        async for page in p.runner.pages(flt):
            out += [(pt.id, pt.payload) for pt in page if pt.payload.get("kind") != "aaak"]
            if len(out) >= cap:
                break
        if len(out) >= 40:
            break
    return out[:cap]


async def wake_up(p: Palace, params: Params) -> Any:
    """L0 identity + L1 essential story of the wing (from ``wing`` or the ``cwd``)."""
    wing = _wing(p, params, default="")
    budget = params.integer("budget", p.settings.wakeup.l1_budget, lo=50, hi=20_000)
    fmt = params.text("format") or "text"
    if fmt not in ("text", "aaak"):
        raise RpcError(INVALID_PARAMS, "format must be text or aaak")
    ident = await anyio.to_thread.run_sync(layers.identity, p.settings.identity_path())
    if not wing:
        wings = await p.runner.run(p.runner.store.facet, "wing", Filters())
        wing = max(wings, key=lambda w: wings[w]) if wings else "general"
    packed = next((s.pack_output() / "knowledge_base.md" for s in p.sources
                   if s.mode == "pack" and s.wing == wing and (s.pack_output() / "knowledge_base.md").is_file()), None)
    if packed is not None and fmt == "text":
        # A pack-mode wing's packed knowledge base is its essential story.
        text_pack = await anyio.to_thread.run_sync(packed.read_text)
        body = await anyio.to_thread.run_sync(p.embedder.fit_tokens, text_pack, budget)
        story = layers.Story(body, 0, ())
        drawers = []
    else:
        drawers = await _wing_drawers(p, wing)
        story = await anyio.to_thread.run_sync(
            lambda: layers.essential_story(wing, drawers, budget, p.embedder.count_tokens))
        body = story.text
    if fmt == "aaak":
        texts = [(str(dict(d).get("text", "")), did) for did, d in drawers if did in set(story.drawers)]
        doc = aaak.compress_many(texts, wing=wing, people=dict(p.settings.people))
        body = aaak.encode(doc)
    text = (f"## L0: identity\n{ident}\n\n" if ident else "") + body
    tokens = await anyio.to_thread.run_sync(p.embedder.count_tokens, text)
    return {"wing": wing, "text": text, "tokens": tokens, "drawers": list(story.drawers), "format": fmt}


async def recall(p: Palace, params: Params) -> Any:
    """L2: the drawers of one room of a wing, most important and newest first."""
    wing = params.text("wing", required=True)
    room = params.text("room", required=True)
    limit = params.integer("limit", 20, lo=1, hi=500)
    drawers = await _wing_drawers(p, wing, room)
    now = time.time()
    drawers.sort(key=lambda d: (-layers.story_score(d[1], now), d[0]))
    return {"wing": wing, "room": room, "drawers": [
        {"drawer_id": did, "text": pl.get("text", ""), "timestamp": pl.get("timestamp"),
         "memory_type": pl.get("memory_type"), "importance": pl.get("importance"),
         "source_path": pl.get("source_path")} for did, pl in drawers[:limit]]}


async def list_wings(p: Palace, _params: Params) -> Any:
    return {"wings": await p.runner.run(p.runner.store.facet, "wing", Filters())}


async def list_rooms(p: Palace, params: Params) -> Any:
    wing = params.text("wing")
    return {"wing": wing, "rooms": await p.runner.run(p.runner.store.facet, "room",
                                                       Filters(wing=(wing,) if wing else ()))}


async def tunnels(p: Palace, _params: Params) -> Any:
    """Rooms that appear in several wings: the corridors between projects."""
    return {"tunnels": await room_tunnels(p)}


async def room_tunnels(p: Palace) -> dict[str, list[str]]:
    """Each room found in more than one wing, with those wings. The catch-all room is left out: it is in
    nearly every wing, so it would link everything to everything."""
    wings = await p.runner.run(p.runner.store.facet, "wing", Filters())
    by_room: dict[str, list[str]] = {}
    for wing in sorted(wings):
        rooms = await p.runner.run(p.runner.store.facet, "room", Filters(wing=(wing,)))
        for room in rooms:
            if room != FALLBACK_ROOM:
                by_room.setdefault(room, []).append(wing)
    return {r: ws for r, ws in sorted(by_room.items()) if len(ws) > 1}


# taxonomy ----------------------------------------------------------------------------------------------------
async def taxonomy(p: Palace, params: Params) -> Any:
    """Read the room keywords, or set one room's keywords (``room`` + ``keywords``)."""
    room = params.text("room")
    if room is not None:
        words = list(params.texts("keywords"))
        table = await anyio.to_thread.run_sync(load_taxonomy)
        if words:
            table[room] = words
        else:
            table.pop(room, None)
        await anyio.to_thread.run_sync(save_taxonomy, table)
        p.ingestor.room_keywords = table
    return {"taxonomy": p.ingestor.room_keywords or await anyio.to_thread.run_sync(load_taxonomy),
            "path": str(taxonomy_path())}


# knowledge graph and fact-check ------------------------------------------------------------------------------
async def kg(p: Palace, params: Params) -> Any:
    """One method for the graph: ``op`` is add | query | invalidate | timeline | stats."""
    op = params.text("op", required=True)
    graph = await anyio.to_thread.run_sync(_kg, p)
    try:
        if op == "add":
            t = await anyio.to_thread.run_sync(lambda: graph.add(
                params.text("subject", required=True), params.text("predicate", required=True),
                params.text("object", required=True), valid_from=params.text("valid_from"),
                confidence=params.number("confidence", 1.0), source_drawer=params.text("source_drawer")))
            return {"triple": t.to_dict()}
        if op == "query":
            rows = await anyio.to_thread.run_sync(lambda: graph.query(
                params.text("subject"), params.text("predicate"), params.text("object"),
                as_of=params.text("as_of"), include_expired=params.flag("include_expired")))
            return {"triples": [t.to_dict() for t in rows]}
        if op == "invalidate":
            n = await anyio.to_thread.run_sync(lambda: graph.invalidate(
                params.raw.get("id") if isinstance(params.raw.get("id"), int) else None,
                subject=params.text("subject"), predicate=params.text("predicate"), object=params.text("object"),
                ended=params.text("ended")))
            return {"invalidated": n}
        if op == "timeline":
            rows = await anyio.to_thread.run_sync(graph.timeline, params.text("entity", required=True))
            return {"triples": [t.to_dict() for t in rows]}
        if op == "stats":
            return {"stats": await anyio.to_thread.run_sync(graph.stats)}
    except KGError as exc:
        raise RpcError(INVALID_PARAMS, str(exc)) from None
    raise RpcError(INVALID_PARAMS, "op must be add, query, invalidate, timeline or stats")


async def fact_check(p: Palace, params: Params) -> Any:
    text = params.text("text", required=True)
    graph = await anyio.to_thread.run_sync(_kg, p)
    issues = await anyio.to_thread.run_sync(lambda: factcheck.fact_check(text, graph, today=params.text("today")))
    return {"issues": [i.to_dict() for i in issues], "claims": factcheck.extract_triples(text)}


# AAAK --------------------------------------------------------------------------------------------------------
async def compress(p: Palace, params: Params) -> Any:
    """AAAK-compress a text, or a wing's drawers (stored as one drawer in room ``aaak`` unless dry_run).
    The dialect is lossy: the ratio reported is measured with the model's tokenizer."""
    text = params.text("text")
    wing = params.text("wing")
    people = dict(p.settings.people)
    if text:
        doc = aaak.compress(text, people=people)
        source = text
    elif wing:
        drawers = await _wing_drawers(p, wing)
        pairs = [(str(d.get("text", "")), did) for did, d in drawers]
        doc = aaak.compress_many(pairs, wing=wing, people=people)
        source = "\n\n".join(t for t, _ in pairs)
    else:
        raise RpcError(INVALID_PARAMS, "give text or wing")
    encoded = aaak.encode(doc)
    before = await anyio.to_thread.run_sync(p.embedder.count_tokens, source)
    after = await anyio.to_thread.run_sync(p.embedder.count_tokens, encoded)
    out: dict[str, Any] = {"aaak": encoded, "tokens_before": before, "tokens_after": after,
                           "ratio": round(before / after, 2) if after else None, "zettels": len(doc.zettels),
                           "lossy": True}
    if wing and not text and not params.flag("dry_run"):
        key = "aaak:" + hashlib.sha256(encoded.encode()).hexdigest()[:24]
        ex = Exchange(source_kind="aaak", session_id=f"aaak:{wing}", key=key, user="", assistant=encoded,
                      timestamp=datetime.now(UTC).isoformat(), kind="aaak")
        info = SourceInfo(kind="aaak", path=f"mempal:aaak:{wing}", source_key=f"aaak:{wing}", machine=p.machine,
                          user=p.user, wing=wing, room="aaak", redact=False, extract=False, importance=1)
        await p.ingestor.write_exchanges([ex], info, BACKFILL)
        out["stored"] = True
    return out


METHODS: dict[str, Handler] = {
    "ingest": ingest,
    "delete": delete,
    "restore": restore,
    "purge": purge,
    "reindex": reindex,
    "wake_up": wake_up,
    "recall_room": recall,
    "list_wings": list_wings,
    "list_rooms": list_rooms,
    "tunnels": tunnels,
    "taxonomy": taxonomy,
    "kg": kg,
    "fact_check": fact_check,
    "compress": compress,
}
