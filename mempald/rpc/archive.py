"""Handlers: the byte-exact transcript archive (status, list) and a session restored for resume."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable
from typing import Any

import anyio.to_thread

from mempald.archive import restore, views
from mempald.archive.keeper import Archive
from mempald.errors import Unavailable
from mempald.rpc.dispatch import Args, Handler
from mempald.state.gateway import StateGateway


class ArchiveMethods:
    def __init__(self, archive: Archive, state: StateGateway) -> None:
        self.archive = archive
        self.state = state

    def handlers(self) -> dict[str, Handler]:
        return {"archive_status": self.status, "archive_list": self.listing, "restore_session": self.restore}

    async def _run(self, call: Callable[[], Any]) -> Any:
        try:
            return await anyio.to_thread.run_sync(call)
        except sqlite3.Error as exc:  # a damaged index: said, with what to do
            raise Unavailable(f"the transcript archive's index cannot be read: {exc}; run `mempald doctor`") from None

    async def status(self, a: Args) -> Any:
        return await self._run(functools.partial(views.status, self.archive))

    async def listing(self, a: Args) -> Any:
        out = await self._run(functools.partial(
            views.listing, self.archive, wing=a["wing"] or "", deleted_upstream=a["deleted_upstream"]))
        out["sessions"] = out["sessions"][: a["limit"]]
        return out

    async def restore(self, a: Args) -> Any:
        out: dict[str, Any] = await self._run(functools.partial(
            restore.restore_session, self.archive, a["id"], to=a["to"] or "", dry_run=a["dry_run"],
            force=a["force"]))
        if out["written"]:
            await self.state.audit("user", "restore", f"session={a['id']}", "restore-session",
                                   files=[f["path"] for f in out["files"] if f["action"] != "same"])
        return out
