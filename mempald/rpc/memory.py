"""Handlers: saving, deleting, purging and re-embedding memories; AAAK compression."""

from __future__ import annotations

from typing import Any

from mempald.features.compress import Compressor
from mempald.features.memories import Memories
from mempald.rpc.dispatch import Args, Handler


class MemoryMethods:
    def __init__(self, memories: Memories, compressor: Compressor) -> None:
        self.memories = memories
        self.compressor = compressor

    def handlers(self) -> dict[str, Handler]:
        return {"ingest": self.ingest, "delete": self.delete, "restore": self.restore, "purge": self.purge,
                "reindex": self.reindex, "compress": self.compress}

    async def ingest(self, a: Args) -> Any:
        return await self.memories.save(
            a["text"], wing=a["wing"], cwd=a["cwd"], room=a["room"], importance=a["importance"],
            memory_type=a["memory_type"], agent=a.get("agent", "user"), dry_run=a["dry_run"],
            duplicate_threshold=a["duplicate_threshold"])

    async def delete(self, a: Args) -> Any:
        return await self.memories.delete(a["drawer_id"], actor=a.get("actor", "user"), reason=a["reason"])

    async def restore(self, a: Args) -> Any:
        return await self.memories.restore(a["drawer_id"], actor=a.get("actor", "user"))

    async def purge(self, a: Args) -> Any:
        return await self.memories.purge(before=a["before"], dry_run=a["dry_run"], actor=a.get("actor", "user"),
                                         all_machines=a["all_machines"])

    async def reindex(self, _a: Args) -> Any:
        return await self.memories.reindex()

    async def compress(self, a: Args) -> Any:
        return await self.compressor.compress(a["text"], a["wing"], a["dry_run"])
