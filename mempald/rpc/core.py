"""Handlers: the daemon itself, search, and reading drawers."""

from __future__ import annotations

import getpass
import os
from typing import Any

from mempald import __version__
from mempald.config import SettingsRef, data_dir
from mempald.features.disclosure import Disclosure
from mempald.features.layout import Layout
from mempald.features.status import StatusReport
from mempald.intake.admin import SourceAdmin
from mempald.rpc.dispatch import Args, Handler
from mempald.search.ranking import SearchOptions
from mempald.search.searcher import Searcher, SearchRequest
from mempald.store.gateway import StoreGateway


class CoreMethods:
    def __init__(self, settings: SettingsRef, status: StatusReport, searcher: Searcher, layout: Layout,
                 store: StoreGateway, sources: SourceAdmin, disclosure: Disclosure | None = None) -> None:
        self.settings = settings
        self.status_report = status
        self.searcher = searcher
        self.layout = layout
        self.store = store
        self.sources = sources
        self.disclosure = disclosure  # token counts, the index format and the ledger (None: plain results)

    def handlers(self) -> dict[str, Handler]:
        return {"ping": self.ping, "status": self.status, "search": self.search, "drawers": self.drawers,
                "ingest_file": self.ingest_file}

    async def ping(self, a: Args) -> Any:
        if not a["identify"]:
            return {"pong": True}
        return {"pong": True, "pid": os.getpid(), "uid": os.getuid(), "user": getpass.getuser(),
                "data_dir": str(data_dir().absolute()), "version": __version__}

    async def status(self, _a: Args) -> Any:
        report = await self.status_report.report()
        if self.disclosure is not None:
            report["tokens"] = await self.disclosure.ledger.figures()
        return report

    async def search(self, a: Args) -> Any:
        s = self.settings.current.search
        req = SearchRequest(
            query=a["query"], limit=a.get("limit", s.limit), filters=a.filters(),
            options=SearchOptions(dense_weight=a.get("dense_weight", s.dense_weight), candidates=s.candidates,
                                  min_relevance=a.get("min_score", s.min_score)),
        )
        hits = await self.searcher.search(req)
        result: dict[str, Any] = {"query": a["query"], "hits": hits}
        if not hits:
            result["note"] = (f"no memories match (no hit reaches relevance {req.options.min_relevance:g}; "
                              "a lower --min-score shows weaker ones)")
        related = await self.layout.related(hits)
        if related:
            result["tunnels"] = related
        if self.disclosure is not None:
            result = await self.disclosure.search_answer(result, a["format"])
        return result

    async def drawers(self, a: Args) -> Any:
        """Page through drawers: ``{drawers: [...], next: offset|null}``."""
        fields = a["fields"]
        page, nxt = await self.store.scroll(a.filters(), a["limit"], a["offset"])
        out = []
        for pt in page:
            item: dict[str, Any] = {"drawer_id": pt.id}
            item.update({k: v for k, v in pt.payload.items() if not fields or k in fields})
            out.append(item)
        return {"drawers": out, "next": nxt}

    async def ingest_file(self, a: Args) -> Any:
        return await self.sources.ingest_file(a["path"])
