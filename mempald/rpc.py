"""The method table: JSON-RPC method name -> handler. Explicit registration, typed parameter checks.

Handlers take the palace and a ``Params`` view and return JSON-serialisable results. Expected failures
are ``RpcError`` with a stable code (``client.protocol``); anything else becomes an internal error reply
and a logged traceback (``server``).
"""

from __future__ import annotations

import time
from typing import Any

from client.protocol import FORBIDDEN, RpcError
from mempald.palace import Palace
from mempald.params import Handler, Params, checked_path
from mempald.queues import FRESH
from mempald.ranking import SearchOptions
from mempald.search import SearchRequest


async def status(p: Palace, _params: Params) -> Any:
    return await p.status()


async def ping(_p: Palace, _params: Params) -> Any:
    return {"pong": True}


async def search(p: Palace, params: Params) -> Any:
    query = params.text("query", required=True)
    req = SearchRequest(
        query=query,
        limit=params.integer("limit", p.settings.search.limit, lo=1, hi=200),
        filters=params.filters(),
        options=SearchOptions(
            dense_weight=params.number("dense_weight", p.settings.search.dense_weight),
            candidates=p.settings.search.candidates,
        ),
    )
    hits = await p.searcher.search(req)
    result: dict[str, Any] = {"query": query, "hits": hits}
    related = await _tunnels_for(p, hits)
    if related:
        result["tunnels"] = related
    return result


_TUNNEL_TTL = 60.0


async def _tunnels_for(p: Palace, hits: list[dict[str, Any]]) -> dict[str, list[str]]:
    """For each room among the hits that also exists in other wings: those wings (cached a minute)."""
    from mempald.rpc_palace import room_tunnels

    now = time.monotonic()
    cached = p.cache.get("tunnels")
    if cached is None or now - cached[0] > _TUNNEL_TTL:
        cached = (now, await room_tunnels(p))
        p.cache["tunnels"] = cached
    table: dict[str, list[str]] = cached[1]
    out: dict[str, list[str]] = {}
    for h in hits:
        room, wing = h.get("room"), h.get("wing")
        if room in table:
            others = [w for w in table[room] if w != wing]
            if others:
                out[str(room)] = sorted(set(out.get(str(room), [])) | set(others))
    return out


async def ingest_file(p: Palace, params: Params) -> Any:
    """Ingest one watched file now (hooks call this with the transcript path); waits for the upsert."""
    path = checked_path(params.text("path", required=True))
    source = p.source_for(path)
    if source is None:
        raise RpcError(FORBIDDEN, f"{path} is not inside a watched source; add it with `mempal watch add`")
    res = await p.ingestor.ingest_path(path, source, FRESH)
    while res.more:
        res = await p.ingestor.ingest_path(path, source, FRESH)
    return res.as_dict()


async def drawers(p: Palace, params: Params) -> Any:
    """Page through drawers (for exports, audits and tests): ``{drawers: [...], next: offset|null}``."""
    limit = params.integer("limit", 100, lo=1, hi=1000)
    offset = params.text("offset")
    fields = params.texts("fields")
    page, nxt = await p.runner.run(p.runner.store.scroll, params.filters(), limit, offset)
    out = []
    for pt in page:
        item = {"drawer_id": pt.id}
        item.update({k: v for k, v in pt.payload.items() if not fields or k in fields})
        out.append(item)
    return {"drawers": out, "next": nxt}


METHODS: dict[str, Handler] = {
    "drawers": drawers,
    "ping": ping,
    "status": status,
    "search": search,
    "ingest_file": ingest_file,
}

# Feature modules register their own methods; they import this module's siblings, not this module.
from mempald import rpc_agents, rpc_pack, rpc_palace, rpc_sources  # noqa: E402

for _module in (rpc_palace, rpc_sources, rpc_agents, rpc_pack):
    METHODS.update(_module.METHODS)
