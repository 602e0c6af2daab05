"""Handlers: watched sources, one-off mining, project settings, migration and pack."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import anyio.to_thread

from mempald.config import SettingsRef, data_dir
from mempald.embed.embedder import Embedder
from mempald.errors import InvalidInput
from mempald.features.pack.run import run_pack, run_prune
from mempald.ops.migrate import migrate
from mempald.rpc.dispatch import Args, Handler
from mempald.sources.admin import SourceAdmin
from mempald.sources.paths import checked_path
from mempald.store.gateway import StoreGateway
from mempald.store.locate import open_location


class SourceMethods:
    def __init__(self, settings: SettingsRef, admin: SourceAdmin, store: StoreGateway, embedder: Embedder) -> None:
        self.settings = settings
        self.admin = admin
        self.store = store
        self.embedder = embedder

    def handlers(self) -> dict[str, Handler]:
        return {"watch_add": self.watch_add, "watch_remove": self.watch_remove, "watch_list": self.watch_list,
                "mine": self.mine, "init": self.init, "migrate": self.migrate, "pack": self.pack,
                "pack_prune": self.pack_prune}

    async def watch_add(self, a: Args) -> Any:
        return await self.admin.watch_add(a["path"], a["mode"], a["wing"], a["token_budget"], a["output"])

    async def watch_remove(self, a: Args) -> Any:
        return await self.admin.watch_remove(a["path"])

    async def watch_list(self, _a: Args) -> Any:
        return self.admin.watch_list()

    async def mine(self, a: Args) -> Any:
        return await self.admin.mine(a["paths"], mode=a["mode"], limit=a["limit"], dry_run=a["dry_run"],
                                     wing=a["wing"], root=a["root"])

    async def init(self, a: Args) -> Any:
        return await self.admin.init(a["path"], a["wing"], a["force"])

    async def migrate(self, a: Args) -> Any:
        """Copy the palace to another store, in batches, resumable from a checkpoint in the data dir, verified."""
        dst = await anyio.to_thread.run_sync(open_location, a["to"], self.settings.current, self.embedder.dim)
        checkpoint = data_dir() / "migrate-checkpoint.json"
        try:
            report = await self.store.exclusive(lambda: migrate(self.store.store, dst, checkpoint=checkpoint))
        finally:
            await anyio.to_thread.run_sync(dst.close)
        return dataclasses.asdict(report) | {"ok": report.ok}

    async def pack(self, a: Args) -> Any:
        root = checked_path(a["dir"])
        if not await anyio.to_thread.run_sync(root.is_dir):
            raise InvalidInput(f"{root} is not a directory")
        out = Path(a["output"] or f"{root}/packed")
        if not out.is_absolute():
            raise InvalidInput("output must be an absolute path")
        return await anyio.to_thread.run_sync(lambda: run_pack(
            self.embedder, root, out, fmt=a["format"], chunk_size=a["chunk_size"],
            compression_target=a["compression_target"], topic=a["topic"], token_budget=a["token_budget"]))

    async def pack_prune(self, a: Args) -> Any:
        file = checked_path(a["file"])
        output = a["output"]
        return await anyio.to_thread.run_sync(lambda: run_prune(
            self.embedder, file, max_tokens=a["max_tokens"], min_importance=a["min_importance"],
            similarity_threshold=a["similarity_threshold"], merge=not a["no_merge"], dry_run=a["dry_run"],
            output=Path(output) if output else None))
