"""Keeping the embedded store fast and small: rebuild its indexes (in a separate process: the ``IndexRebuild``
capability, ``hosted.rebuild_index``) once ``store.index_after`` vectors are not indexed, or a field index is placed
in memory (a palace made by an earlier release, ``mempald.store.field_index``), and the daemon has been idle for
``store.index_quiet_s``; and while it is busy (files read, drawers embedded), each time
``store.index_during_backfill`` drawers were written since the last build. The shard's unbuilt segment keeps its
keyword and field indexes in the store process's memory (measured, a 65,000-drawer Cursor backfill: +409 MB
anonymous, +353 MB file-backed); a built one is read through the page cache. So a backfill's drawers leave that
memory in parts, not at the end. A build during a backfill merges no built segment (up to
``index_build.BACKFILL_SEGMENTS``), so its process stays the size of one part; the next idle build merges them."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio

from mempald import logs
from mempald.config import SettingsRef
from mempald.store.base import IndexRebuild, StoreError
from mempald.store.gateway import StoreGateway

log = logs.get("store")


class IndexMaintainer:
    def __init__(self, settings: SettingsRef, gateway: StoreGateway, store: IndexRebuild | None,
                 idle: Callable[[], bool]) -> None:
        self.settings = settings
        self.gateway = gateway
        self.store = store  # None: the backend rebuilds no index in the background (nothing to build)
        self.idle = idle
        self.report: dict[str, Any] = {"state": "idle", "builds": 0, "last": {}, "last_error": ""}

    def status(self) -> dict[str, Any]:
        return {**self.report, "store_pids": self.store.pids if self.store else []}

    async def run(self) -> None:
        store = self.store
        s = self.settings.current.store
        threshold, quiet_s, during = s.index_after, s.index_quiet_s, s.index_during_backfill
        check_s = min(10.0, max(0.2, quiet_s / 3))
        if store is None or threshold <= 0:
            return
        baseline = 0  # vectors left unindexed by the last build (drawers still without a dense vector)
        merge_due = False  # builds during a backfill left built segments for an idle build to merge
        idle_since: float | None = None
        while True:
            await anyio.sleep(check_s if idle_since else min(check_s, 1.0))  # a backfill is checked every second
            if not self.idle():
                idle_since = None
                if during and store.written_since_build >= during:
                    merge_due |= await self._build(store, backfill=True, reason="backfill",
                                                   written=store.written_since_build)
                continue
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since < quiet_s:
                continue
            _, unindexed = await self.gateway.exclusive(store.index_state)
            misplaced = await self.gateway.exclusive(store.misplaced_indexes)
            if unindexed - baseline < threshold and not misplaced and not merge_due:
                continue
            if await self._build(store, reason="idle", unindexed=unindexed, misplaced_indexes=misplaced):
                merge_due = False
                _, baseline = await self.gateway.exclusive(store.index_state)

    async def _build(self, store: IndexRebuild, backfill: bool = False, **why: Any) -> bool:
        """One build; after a failure the next waits (at least ten minutes)."""
        self.report["state"] = "building"
        log.info("index_build_started", **why)
        try:
            res = await store.rebuild(self.gateway.exclusive, backfill=backfill)
        except StoreError as exc:
            self.report["last_error"] = str(exc)
            log.warning("index_build_failed", error=str(exc))
            await anyio.sleep(max(self.settings.current.store.index_quiet_s, 600.0))
            return False
        finally:
            self.report["state"] = "idle"
        self.report["builds"] += 1
        self.report["last"] = {**res, "reason": why["reason"]}
        self.report["last_error"] = ""
        log.info("index_built", reason=why["reason"], **res)
        return True
