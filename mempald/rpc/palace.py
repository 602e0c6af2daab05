"""Handlers: the wake-up layers, the layout, the taxonomy, the knowledge graph and fact-checking."""

from __future__ import annotations

from typing import Any

import anyio.to_thread

from mempald.errors import InvalidInput
from mempald.features import factcheck
from mempald.features.kg import KnowledgeGraph
from mempald.features.layout import Layout
from mempald.features.memories import wing_for
from mempald.features.taxonomy import Taxonomy, load_taxonomy, taxonomy_path
from mempald.features.wakeup import WakeUp
from mempald.rpc.dispatch import Args, Handler
from mempald.state.gateway import StateGateway


class PalaceMethods:
    def __init__(self, wakeup: WakeUp, layout: Layout, taxonomy: Taxonomy, kg: KnowledgeGraph,
                 state: StateGateway) -> None:
        self.wakeup = wakeup
        self.layout = layout
        self.taxonomy_table = taxonomy
        self.graph = kg
        self.state = state  # (the graph's tables are in the state database: its calls run on its thread)

    def handlers(self) -> dict[str, Handler]:
        return {"wake_up": self.wake_up, "recall_room": self.recall_room, "list_wings": self.list_wings,
                "list_rooms": self.list_rooms, "tunnels": self.tunnels, "taxonomy": self.taxonomy, "kg": self.kg,
                "kg_query": self.kg_query,
                "fact_check": self.fact_check}

    async def wake_up(self, a: Args) -> Any:
        wing = wing_for(a["wing"], a["cwd"], default="")
        return await self.wakeup.wake_up(wing, a["budget"], a["format"], explicit=bool(a["wing"]))

    async def recall_room(self, a: Args) -> Any:
        return await self.wakeup.room(a["wing"], a["room"], a["limit"])

    async def list_wings(self, _a: Args) -> Any:
        return {"wings": await self.layout.wings()}

    async def list_rooms(self, a: Args) -> Any:
        return {"wing": a["wing"], "rooms": await self.layout.rooms(a["wing"])}

    async def tunnels(self, _a: Args) -> Any:
        return {"tunnels": await self.layout.tunnels()}

    async def taxonomy(self, a: Args) -> Any:
        """Read the room keywords, or set one room's keywords (``room`` + ``keywords``)."""
        if a["room"] is not None:
            await anyio.to_thread.run_sync(self.taxonomy_table.set_room, a["room"], list(a["keywords"]))
        table = self.taxonomy_table.current() or await anyio.to_thread.run_sync(load_taxonomy)
        return {"taxonomy": table, "path": str(taxonomy_path())}

    async def kg(self, a: Args) -> Any:
        """One method for the graph: ``op`` is add | query | invalidate | timeline | stats."""
        graph = self.graph
        op = a["op"]
        if op == "add":
            t = await self.state.run(lambda: graph.add(
                _required(a, "subject"), _required(a, "predicate"), _required(a, "object"),
                valid_from=a["valid_from"], confidence=a["confidence"], source_drawer=a["source_drawer"]))
            return {"triple": t.to_dict()}
        if op == "query":
            rows = await self.state.run(lambda: graph.query(
                a["subject"], a["predicate"], a["object"], as_of=a["as_of"], include_expired=a["include_expired"]))
            return {"triples": [t.to_dict() for t in rows]}
        if op == "invalidate":
            n = await self.state.run(lambda: graph.invalidate(
                a["id"], subject=a["subject"], predicate=a["predicate"], object=a["object"], ended=a["ended"]))
            return {"invalidated": n}
        if op == "timeline":
            entity = _required(a, "entity")
            rows = await self.state.run(lambda: graph.timeline(entity))
            return {"triples": [t.to_dict() for t in rows]}
        return {"stats": await self.state.run(graph.stats)}

    async def kg_query(self, a: Args) -> Any:
        """``kg``'s reading operations (query, timeline, stats) as a method that writes nothing."""
        return await self.kg(a)

    async def fact_check(self, a: Args) -> Any:
        text = a["text"]
        issues = await self.state.run(lambda: factcheck.fact_check(text, self.graph, today=a["today"]))
        return {"issues": [i.to_dict() for i in issues], "claims": factcheck.extract_triples(text)}


def _required(a: Args, name: str) -> str:
    value = a[name]
    if not value:
        raise InvalidInput(f"missing parameter {name!r}")
    return str(value)
