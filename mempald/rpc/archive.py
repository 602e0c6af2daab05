"""Handlers: the byte-exact transcript archive (status, list) and a session restored for resume."""

from __future__ import annotations

import functools
from typing import Any

import anyio.to_thread

from mempald.archive import restore, views
from mempald.archive.keeper import Archive
from mempald.rpc.dispatch import Args, Handler
from mempald.state.gateway import StateGateway


class ArchiveMethods:
    def __init__(self, archive: Archive, state: StateGateway) -> None:
        self.archive = archive
        self.state = state

    def handlers(self) -> dict[str, Handler]:
        return {"archive_status": self.status, "archive_list": self.listing, "restore_session": self.restore}

    async def status(self, a: Args) -> Any:
        return await anyio.to_thread.run_sync(views.status, self.archive)

    async def listing(self, a: Args) -> Any:
        out = await anyio.to_thread.run_sync(functools.partial(
            views.listing, self.archive, wing=a["wing"] or "", deleted_upstream=a["deleted_upstream"]))
        out["sessions"] = out["sessions"][: a["limit"]]
        return out

    async def restore(self, a: Args) -> Any:
        out: dict[str, Any] = await anyio.to_thread.run_sync(functools.partial(
            restore.restore_session, self.archive, a["id"], to=a["to"] or "", dry_run=a["dry_run"],
            force=a["force"]))
        if out["written"]:
            await self.state.audit("user", "restore", f"session={a['id']}", "restore-session",
                                   files=[f["path"] for f in out["files"] if f["action"] != "same"])
        return out
