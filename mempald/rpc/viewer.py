"""Handlers: what the web viewer reads (a wing's sessions, a session's drawers, the graph, pack outputs)."""

from __future__ import annotations

from typing import Any

from mempald.features import viewer
from mempald.features.kg import KnowledgeGraph
from mempald.rpc.dispatch import Args, Handler
from mempald.sources.catalog import SourceSet
from mempald.sources.paths import checked_path
from mempald.state.gateway import StateGateway


class ViewerMethods:
    def __init__(self, sessions: viewer.SessionBrowser, kg: KnowledgeGraph, sources: SourceSet,
                 state: StateGateway) -> None:
        self.sessions = sessions
        self.graph = kg
        self.state = state
        self.sources = sources

    def handlers(self) -> dict[str, Handler]:
        return {"wing_sessions": self.wing_sessions, "session_drawers": self.session_drawers,
                "kg_graph": self.kg_graph, "pack_outputs": self.pack_outputs}

    async def wing_sessions(self, a: Args) -> Any:
        return await self.sessions.wing_sessions(a["wing"], a["since"], a["until"], a["limit"])

    async def session_drawers(self, a: Args) -> Any:
        return await self.sessions.session_drawers(a["drawer_id"], a["session_id"], a["start"], a["before"],
                                                   a["after"], a["include_deleted"])

    async def kg_graph(self, a: Args) -> Any:
        return await viewer.kg_graph(self.graph, self.state, a["entity"], a["as_of"], a["include_expired"], a["limit"])

    async def pack_outputs(self, a: Args) -> Any:
        folder = checked_path(a["dir"]) if a["dir"] else None
        return await viewer.pack_outputs(self.sources, folder)
