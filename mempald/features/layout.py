"""The palace's layout: wings, their rooms, and tunnels (rooms shared by several wings)."""

from __future__ import annotations

import time
from typing import Any

from mempald import logs
from mempald.normalize.wings import normal_wing
from mempald.store.base import Filters
from mempald.store.gateway import StoreGateway
from mempald.text.classify import FALLBACK_ROOM

TUNNEL_TTL_S = 60.0  # search results name related wings from a table at most this old
MAX_WINGS = 100_000
RENAME_BATCH = 500

log = logs.get("layout")


class Layout:
    def __init__(self, store: StoreGateway) -> None:
        self.store = store
        self._tunnels: tuple[float, dict[str, list[str]]] | None = None

    async def wings(self) -> dict[str, int]:
        return await self.store.facet("wing", Filters())

    async def normalize_stored(self) -> dict[str, str]:
        """Wings stored under another form than their normal one (an NFD name, fullwidth letters, a zero-width
        or bidi mark: written before wing names were normalised) renamed to it, so a filter on the normal name
        (forget, search, export) finds every drawer; returns old -> new. One facet call when there is none."""
        stored = await self.store.facet("wing", Filters(include_deleted=True), limit=MAX_WINGS)
        renamed = {w: normal_wing(w) or "general" for w in stored if normal_wing(w) != w}
        for old, new in renamed.items():
            ids: list[str] = []
            async for page in self.store.pages(Filters(wing=(old,), include_deleted=True)):
                ids += [p.id for p in page]  # (all first: renaming while paging by that wing would skip some)
            for i in range(0, len(ids), RENAME_BATCH):
                await self.store.set_payload(ids[i : i + RENAME_BATCH], {"wing": new})
            log.info("wing_renamed", old=old, new=new, drawers=len(ids))
        return renamed

    async def rooms(self, wing: str | None) -> dict[str, int]:
        return await self.store.facet("room", Filters(wing=(wing,) if wing else ()))

    async def tunnels(self) -> dict[str, list[str]]:
        """Each room found in more than one wing, with those wings. The catch-all room is left out: it is in
        nearly every wing, so it would link everything to everything."""
        wings = await self.wings()
        by_room: dict[str, list[str]] = {}
        for wing in sorted(wings):
            for room in await self.rooms(wing):
                if room != FALLBACK_ROOM:
                    by_room.setdefault(room, []).append(wing)
        return {r: ws for r, ws in sorted(by_room.items()) if len(ws) > 1}

    async def related(self, hits: list[dict[str, Any]]) -> dict[str, list[str]]:
        """For each room among ``hits`` that other wings share: those wings (from a table cached a minute)."""
        now = time.monotonic()
        if self._tunnels is None or now - self._tunnels[0] > TUNNEL_TTL_S:
            self._tunnels = (now, await self.tunnels())
        table = self._tunnels[1]
        out: dict[str, list[str]] = {}
        for h in hits:
            room, wing = h.get("room"), h.get("wing")
            if room in table:
                others = [w for w in table[room] if w != wing]
                if others:
                    out[str(room)] = sorted(set(out.get(str(room), [])) | set(others))
        return out
