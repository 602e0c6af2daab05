"""The daemon's two work queues, both with a fresh lane that goes ahead of the backfill.

- ``FileQueue``: files to (re)read. Watcher events and hook calls go in the fresh lane; the reconcile scan
  fills the backfill lane, newest file first. A file already queued is not queued twice.
- ``DenseQueue``: drawers that are keyword-searchable but still lack their dense vector. Fresh drawers
  first, then the backfill newest first.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque

import anyio

FRESH = 0
BACKFILL = 1


class FileQueue:
    def __init__(self) -> None:
        self._lanes: tuple[deque[str], deque[str]] = (deque(), deque())
        self._queued: dict[str, int] = {}
        self._event = anyio.Event()
        self.active = 0  # files being ingested right now

    def put(self, path: str, lane: int = BACKFILL) -> None:
        prev = self._queued.get(path)
        if prev is not None:
            if prev <= lane:
                return
            self._lanes[prev].remove(path)
        self._queued[path] = lane
        self._lanes[lane].append(path)
        self._event.set()

    def put_many(self, paths: list[str], lane: int = BACKFILL) -> None:
        for p in paths:
            self.put(p, lane)

    async def get(self, lanes: tuple[int, ...] = (FRESH, BACKFILL)) -> tuple[str, int]:
        """The next path from the first non-empty lane among ``lanes`` (several getters may wait at once)."""
        while True:
            for lane in lanes:
                dq = self._lanes[lane]
                if dq:
                    path = dq.popleft()
                    del self._queued[path]
                    return path, lane
            if self._event.is_set():
                self._event = anyio.Event()
            await self._event.wait()

    def pending(self) -> list[str]:
        return list(self._lanes[FRESH]) + list(self._lanes[BACKFILL])

    def __len__(self) -> int:
        return len(self._queued)


class DenseQueue:
    def __init__(self) -> None:
        self._heap: list[tuple[int, float, int, str]] = []
        self._lane: dict[str, int] = {}
        self._seq = itertools.count()
        self._event = anyio.Event()

    def put(self, point_id: str, ts: float, lane: int = BACKFILL) -> None:
        prev = self._lane.get(point_id)
        if prev is not None and prev <= lane:
            return
        self._lane[point_id] = lane
        heapq.heappush(self._heap, (lane, -ts, next(self._seq), point_id))
        self._event.set()

    def take(self, n: int) -> list[str]:
        out: list[str] = []
        while self._heap and len(out) < n:
            lane, _ts, _seq, pid = heapq.heappop(self._heap)
            if self._lane.get(pid) != lane:
                continue  # superseded by a fresher entry
            del self._lane[pid]
            out.append(pid)
        return out

    async def wait(self) -> None:
        while not self._lane:
            self._event = anyio.Event()
            await self._event.wait()

    def fresh_waiting(self) -> bool:
        return bool(self._heap) and self._heap[0][0] == FRESH

    def __len__(self) -> int:
        return len(self._lane)
