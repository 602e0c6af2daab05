"""Handlers: one memory across machines (``mempald.sync``)."""

from __future__ import annotations

from typing import Any

from mempald.rpc.dispatch import Args, Handler
from mempald.sync.service import Sync


class SyncMethods:
    def __init__(self, sync: Sync) -> None:
        self.sync = sync

    def handlers(self) -> dict[str, Handler]:
        return {"sync_init": self.init, "sync_join": self.join, "sync_status": self.status,
                "sync_leave": self.leave, "machines": self.machines}

    async def init(self, a: Args) -> Any:
        return await self.sync.init(a["dir"], bool(a["encrypt"]))

    async def join(self, a: Args) -> Any:
        return await self.sync.join(a["dir"], a["key_file"])

    async def status(self, a: Args) -> Any:
        return await self.sync.status()

    async def leave(self, a: Args) -> Any:
        return await self.sync.leave()

    async def machines(self, a: Args) -> Any:
        return await self.sync.machines()
