"""Keeping the embedded store fast: rebuild its indexes (in a separate process: the ``IndexRebuild`` capability,
``hosted.rebuild_index``) once ``store.index_after`` vectors are not indexed, or a field index is placed in memory
(a palace made by an earlier release, ``mempald.store.field_index``), and the daemon has been idle for
``store.index_quiet_s``."""

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
        threshold, quiet_s = s.index_after, s.index_quiet_s
        check_s = min(10.0, max(0.2, quiet_s / 3))
        if store is None or threshold <= 0:
            return
        baseline = 0  # vectors left unindexed by the last build (drawers still without a dense vector)
        idle_since: float | None = None
        while True:
            await anyio.sleep(check_s)
            if not self.idle():
                idle_since = None
                continue
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since < quiet_s:
                continue
            _, unindexed = await self.gateway.exclusive(store.index_state)
            misplaced = await self.gateway.exclusive(store.misplaced_indexes)
            if unindexed - baseline < threshold and not misplaced:
                continue
            self.report["state"] = "building"
            log.info("index_build_started", unindexed=unindexed, misplaced_indexes=misplaced)
            try:
                res = await store.rebuild(self.gateway.exclusive)
            except StoreError as exc:
                self.report["last_error"] = str(exc)
                log.warning("index_build_failed", error=str(exc))
                await anyio.sleep(max(quiet_s, 600.0))  # not again at once: the next build waits
                continue
            finally:
                self.report["state"] = "idle"
            self.report["builds"] += 1
            self.report["last"] = res
            self.report["last_error"] = ""
            _, baseline = await self.gateway.exclusive(store.index_state)
            log.info("index_built", unindexed_after=baseline, **res)
