"""The disk-space guard: writes to the embedded store pause before the disk is full, and resume by themselves.

Qdrant Edge keeps its WAL, payload pages and vectors in files it creates at full size but sparse, and maps them
into memory: a page it touches on a full disk cannot be allocated and the store process dies of SIGBUS (a 64 MB
data dir filled by appends: 22 restarts in 30 s, status and search failing). ``df`` does not show that debt, so
the guard counts it: the bytes the store's files may still take (their size minus what is allocated). Writes are
refused, with a ``StoreError`` that says why, while

    free space on the filesystem  -  that debt  <  store.min_free_mb

on the filesystem of the store or of the data directory. Reads never allocate, so search and status go on.
The ingest retries its refused write with a backoff (the cursor stays where it was: nothing is lost) and
continues once space is freed; ``status`` says ingest is paused and why, and the change is logged both ways.
"""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, cast

from mempald import logs
from mempald.store.base import Store, StoreError

log = logs.get("store")

MB = 1024 * 1024
CHECK_EVERY_S = 1.0  # free space is read at most this often
DEBT_EVERY_S = 10.0  # the store's files are walked at most this often


def _file_stats(root: Path) -> Iterator[os.stat_result]:
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            try:
                yield os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue


def sparse_debt(root: Path) -> int:
    """Bytes the files under ``root`` may still take on disk: size minus allocated blocks (sparse files)."""
    return sum(max(0, st.st_size - st.st_blocks * 512) for st in _file_stats(root))


def allocated_bytes(root: Path) -> int:
    """Bytes the files under ``root`` take on disk (their allocated blocks: a sparse file's holes do not count)."""
    return sum(st.st_blocks * 512 for st in _file_stats(root))


def free_bytes(path: Path) -> int:
    """Bytes an unprivileged process may still write on the filesystem holding ``path`` (or its nearest
    existing parent)."""
    for p in (path, *path.parents):
        try:
            return shutil.disk_usage(p).free
        except OSError:
            continue
    return 0


def death_of(path: Path, code: int | None) -> str:
    """Why a store process ended, in words (``code``: its exit status, negative for a signal)."""
    if code is None:
        return "it stopped answering"
    if code >= 0:
        return f"it exited with status {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    text = f"it was killed by {name}"
    if -code == signal.SIGBUS:
        free = free_bytes(path) / MB
        text += (f" (the disk holding {path} is probably full: {free:.1f} MB free, while the store's files may "
                 f"still take {sparse_debt(path) / MB:.1f} MB)")
    return text


class SpaceGuard:
    """Watches the filesystems of ``store_path`` and ``data_dir``; thread-safe (the store runs in a worker
    thread, ``status`` on the event loop)."""

    def __init__(self, store_path: Path, data_dir: Path, min_free_mb: int) -> None:
        self.store_path = store_path
        self.paths = [store_path] + ([data_dir] if data_dir != store_path else [])
        self.min_free = min_free_mb * MB
        self.refused = 0  # writes refused so far
        self._lock = threading.Lock()
        self._checked = 0.0
        self._debt_at = 0.0
        self._debt = 0
        self._reason = ""
        self._figures: dict[str, Any] = {}

    def _device(self, path: Path) -> int | None:
        for p in (path, *path.parents):
            try:
                return os.stat(p).st_dev
            except OSError:
                continue
        return None

    def check(self) -> str:
        """Why writes must wait now ("" when they may go on); recomputed at most every ``CHECK_EVERY_S``."""
        if self.min_free <= 0:
            return ""
        now = time.monotonic()
        with self._lock:
            if now - self._checked < CHECK_EVERY_S:
                return self._reason
            self._checked = now
            if now - self._debt_at >= DEBT_EVERY_S or self._reason:
                self._debt = sparse_debt(self.store_path) if self.store_path.exists() else 0
                self._debt_at = now
            store_dev = self._device(self.store_path)
            worst: tuple[int, Path, int, int] | None = None
            for path in self.paths:
                free = free_bytes(path)
                debt = self._debt if self._device(path) == store_dev else 0
                room = free - debt
                if worst is None or room < worst[0]:
                    worst = (room, path, free, debt)
            assert worst is not None
            room, path, free, debt = worst
            self._figures = {"path": str(path), "free_mb": round(free / MB, 1), "store_may_take_mb":
                             round(debt / MB, 1), "min_free_mb": self.min_free // MB}
            reason = ""
            if room < self.min_free:
                reason = (f"disk almost full: {free / MB:.1f} MB free on the filesystem of {path}, the store's "
                          f"files may still take {debt / MB:.1f} MB of it, and store.min_free_mb keeps "
                          f"{self.min_free // MB} MB spare: ingest is paused (search works) and resumes by itself "
                          "when space is freed")
            if reason and not self._reason:
                log.warning("disk_low", **self._figures, message=reason)
            elif self._reason and not reason:
                log.info("disk_ok", **self._figures, message="space is back: ingest resumes")
            self._reason = reason
            return reason

    def require(self, what: str) -> None:
        """Raise ``StoreError`` if ``what`` (a write) must wait for space."""
        reason = self.check()
        if reason:
            self.refused += 1
            raise StoreError(f"{what} refused: {reason}")

    def status(self) -> dict[str, Any]:
        reason = self.check()
        return {**self._figures, "paused": bool(reason), "writes_refused": self.refused}


class GuardedStore:
    """A store whose writes wait for disk space (``SpaceGuard``); everything else passes through."""

    WRITES = ("upsert", "set_dense", "set_payload", "clear_dense", "set_sparse", "delete", "set_meta")

    def __init__(self, inner: Store, guard: SpaceGuard) -> None:
        self._inner = inner
        self.guard = guard

    def upsert(self, points: Sequence[Any]) -> None:
        self.guard.require("store write")
        self._inner.upsert(points)

    def set_dense(self, vectors: Sequence[tuple[str, Sequence[float]]]) -> None:
        self.guard.require("dense vector write")
        self._inner.set_dense(vectors)

    def set_payload(self, ids: Sequence[str], payload: Any) -> None:
        self.guard.require("store write")
        self._inner.set_payload(ids, payload)

    def clear_dense(self, ids: Sequence[str]) -> None:
        self.guard.require("store write")
        self._inner.clear_dense(ids)

    def set_sparse(self, vectors: Sequence[Any]) -> None:
        self.guard.require("keyword vector write")
        self._inner.set_sparse(vectors)

    def delete(self, filters: Any) -> None:
        self.guard.require("store delete")
        self._inner.delete(filters)

    def set_meta(self, meta: Any) -> None:
        self.guard.require("store metadata write")
        self._inner.set_meta(meta)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def guard_store(store: Store, guard: SpaceGuard | None) -> Store:
    """``store`` with its writes behind ``guard`` (unchanged when there is no guard)."""
    return store if guard is None else cast(Store, GuardedStore(store, guard))
