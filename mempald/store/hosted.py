"""The daemon's embedded store, kept in a child process, and the index rebuild that swaps in a faster shard.

Why a child process: every Qdrant Edge call holds the GIL (a 100k-drawer shard load takes seconds, an index
build minutes), so a store opened in the daemon freezes its event loop whenever it works hard. Here the
daemon only pickles calls over a socket pair (``mempald.store.host``) and waits with the GIL released.

The index rebuild (``rebuild_index``), run when enough drawers are not indexed yet and the daemon is idle:

1. the host flushes and copies its shard folder (writes wait for the copy; searches are served before and
   after it); from then on every write is also kept, in order, in a journal file beside the store
   (``mempald.store.journal``);
2. ``python -m mempald.store.host build`` builds the HNSW and sparse indexes on the copy, at low priority;
3. a second host opens the built copy, reads the journal and applies it, and is flushed;
4. ``CURRENT`` is switched to the new folder (one atomic rename), calls go to the new host, the old host
   closes and its folder is removed.

A crash before step 4 leaves the old shard current and complete (it got every write); after it, the new
shard has the copy plus the replayed journal. Leftover folders are removed when the daemon next starts.

A store process that dies is started again and the call repeated once; one that keeps dying (three deaths
within a minute) is left down for a pause that doubles up to a minute, so a store that cannot run (a full disk:
SIGBUS) never crash-loops. Its death is explained (a signal, and for SIGBUS the free space left). A store whose
files are damaged says so in every error, with the fix (``mempald repair``), and ``damaged`` holds the reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from mempald import logs
from mempald.store.base import (
    DamageReport,
    Exclusive,
    Fields,
    Filters,
    Hit,
    IndexRebuild,
    PointData,
    RankRequest,
    Snapshots,
    SparseVec,
    Store,
    StoredPoint,
    StoreError,
)
from mempald.store.edge import BUILDING, LEGACY_SHARD, current_shard, remove_stale_shards, set_current_shard
from mempald.store.gateway import StoreGateway
from mempald.store.host import WRITES, damage_hint
from mempald.store.host_process import START_TIMEOUT_S, HostGone, HostProcess, child_env, open_timeout
from mempald.store.index_build import BACKFILL_SEGMENTS, BUILD_SEGMENTS
from mempald.store.journal import SUFFIX as JOURNAL
from mempald.store.journal import WriteJournal, remove_stale_journals
from mempald.store.space import MB, death_of, free_bytes, sparse_debt

log = logs.get("store")

# Writes kept for replay during one rebuild (points, in a file: ``mempald.store.journal``); past this the rebuild
# is dropped and retried later.
JOURNAL_MAX_POINTS = 50_000
START_ATTEMPTS = 5
DEATHS_BEFORE_PAUSE = 3  # store process deaths within DEATH_WINDOW_S before restarts are paused
DEATH_WINDOW_S = 60.0
PAUSE_MAX_S = 60.0


class HostedEdgeStore(Store, Snapshots, IndexRebuild, DamageReport):
    """The ``Store`` contract, answered by a child process that owns the Qdrant Edge shard. ``ranker`` names the
    ``module:function`` the child ranks searches with (the daemon's composition root chooses it)."""

    backend = "qdrant-edge"

    def __init__(self, path: Path, dim: int, *, ranker: str = "") -> None:
        self.path = path
        self.dim = dim
        self.ranker = ranker
        self.location = f"edge:{path}"
        path.mkdir(parents=True, exist_ok=True)
        removed = remove_stale_shards(path)
        if removed:
            log.info("stale_shards_removed", folders=removed)
        removed = remove_stale_journals(path)
        if removed:
            log.info("stale_journals_removed", files=removed)
        self._journal: WriteJournal | None = None
        self._dropped = ""  # why the last rebuild's journal was dropped
        self._written = 0  # points written since the last build began (``written_since_build``)
        self._closed = False
        self._deaths: list[float] = []  # when store processes died (the last minute's)
        self._paused_until = 0.0
        self._pause_s = 0.0
        self._probing = False
        self._death = ""
        self.restarts = 0
        self.damaged = ""  # why the store's files look damaged ("" while nothing says so)
        self._host = self._start(None)

    def _start(self, shard: str | None) -> HostProcess:
        """Start a host; retried briefly, as a host of a daemon that just died may still hold the shard."""
        try:
            timeout = open_timeout(self.path / (shard or current_shard(self.path)))
        except StoreError:  # a damaged CURRENT file: the store process says what is wrong
            timeout = START_TIMEOUT_S
        for attempt in range(START_ATTEMPTS):
            host = HostProcess(self.path, self.dim, shard, self.ranker)
            try:
                host.wait_ready(timeout)
                return host
            except StoreError as exc:
                held = any(w in str(exc).lower() for w in ("wouldblock", "lock"))  # the WAL's file lock
                if attempt == START_ATTEMPTS - 1 or not held:
                    raise
                time.sleep(1.0)
        raise AssertionError("unreachable")

    @property
    def pids(self) -> list[int]:
        return [self._host.pid]

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if self._closed:
            raise StoreError("the store is closed")
        try:
            if time.monotonic() < self._paused_until:
                raise HostGone("the store process is down")
            return self._checked(self._host, method, args, kwargs)
        except HostGone:
            # Every call is safe to repeat (writes are upserts by id, deletes by filter): restart, retry once.
            self._restart()
            return self._checked(self._host, method, args, kwargs)

    def _checked(self, host: HostProcess, method: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        try:
            return host.call(method, args, kwargs)
        except HostGone:
            raise
        except StoreError as exc:
            hint = damage_hint(self.path / host.shard, str(exc))
            if not hint:
                raise
            if not self.damaged:
                log.error("store_damaged", path=str(self.path / host.shard), error=str(exc), message=hint)
            self.damaged = hint
            raise StoreError(hint) from None

    def _restart(self) -> None:
        """Start a new store process after one died. Once three died within a minute, each further start waits
        for a pause that doubles up to a minute (and gets one try): a store that cannot run never crash-loops."""
        now = time.monotonic()
        if now < self._paused_until:
            raise StoreError(f"the store process keeps dying ({self._death}); it is started again in "
                             f"{self._paused_until - now:.0f} s")
        if not self._probing:
            self._death = death_of(self.path, self._host.exit_code())
            recent = [t for t in self._deaths if now - t < DEATH_WINDOW_S]
            if not recent:
                self._pause_s = 0.0
            self._deaths = [*recent, now]
            if len(self._deaths) > DEATHS_BEFORE_PAUSE:
                self._pause_s = min(PAUSE_MAX_S, max(2.0, self._pause_s * 2))
                self._paused_until = now + self._pause_s
                self._probing = True  # when the pause is over, one start is tried
                log.error("store_process_paused", reason=self._death, retry_in_s=self._pause_s)
                raise StoreError(f"the store process keeps dying ({self._death}); it is started again in "
                                 f"{self._pause_s:.0f} s")
        self._probing = False
        log.warning("store_process_restarted", reason=self._death, pid=self._host.pid)
        self._host.close(timeout=5)
        self.restarts += 1
        self._host = self._start(self._host.shard)

    def _write(self, method: str, *args: Any) -> None:
        assert method in WRITES, method  # only these are journaled and replayed
        self._call(method, *args)
        points = len(args[0]) if isinstance(args[0], Sequence) else 1
        self._written += points
        journal = self._journal  # (``abort_rebuild`` may drop it from another thread)
        if journal is None:
            return
        try:
            journal.append(method, args)
        except StoreError as exc:  # the write is done; only the rebuild cannot be: it is dropped
            self._drop_journal(str(exc))
            return
        if journal.points > JOURNAL_MAX_POINTS:
            self._drop_journal(f"too many writes arrived while the index was built ({journal.points} points)")

    def _drop_journal(self, why: str = "") -> None:
        journal, self._journal = self._journal, None
        if journal is not None:
            journal.drop()
            if why:
                self._dropped = why
                log.warning("index_rebuild_dropped", reason=why)

    # the Store contract --------------------------------------------------------------------------------
    def upsert(self, points: Sequence[PointData]) -> None:
        if points:
            self._write("upsert", list(points))

    def set_dense(self, vectors: Sequence[tuple[str, Sequence[float]]]) -> None:
        if vectors:
            self._write("set_dense", [(i, [float(x) for x in v]) for i, v in vectors])

    def set_payload(self, ids: Sequence[str], payload: Mapping[str, Any]) -> None:
        if ids:
            self._write("set_payload", list(ids), dict(payload))

    def set_sparse(self, vectors: Sequence[tuple[str, SparseVec]]) -> None:
        self._write("set_sparse", list(vectors))  # (nothing to write is a no-op there)

    def clear_dense(self, ids: Sequence[str]) -> None:
        if ids:
            self._write("clear_dense", list(ids))

    def delete(self, filters: Filters) -> None:
        self._write("delete", filters)

    def retrieve(self, ids: Sequence[str], *, with_vectors: bool = False, with_payload: bool = True,
                 fields: Fields = None) -> list[StoredPoint]:
        if not ids:
            return []
        return list(self._call("retrieve", list(ids), with_vectors=with_vectors, with_payload=with_payload,
                               fields=fields))

    def query(
        self, dense: Sequence[float] | None, sparse: SparseVec | None, filters: Filters, limit: int, *,
        fields: Fields = None,
    ) -> tuple[list[Hit], list[Hit]]:
        dense_list = None if dense is None else [float(x) for x in dense]
        dense_hits, sparse_hits = self._call("query", dense_list, sparse, filters, limit, fields=fields)
        return list(dense_hits), list(sparse_hits)

    def scroll(self, filters: Filters, limit: int, offset: str | None = None, *,
               with_vectors: bool = False, fields: Fields = None) -> tuple[list[StoredPoint], str | None]:
        page, nxt = self._call("scroll", filters, limit, offset, with_vectors=with_vectors, fields=fields)
        return list(page), nxt

    def rank(self, request: RankRequest) -> list[dict[str, Any]]:
        """The search ranked in the store process: only the final hits are pickled back."""
        return list(self._call("rank", request))

    def count(self, filters: Filters) -> int:
        return int(self._call("count", filters))

    def facet(self, key: str, filters: Filters, limit: int = 1000) -> dict[str, int]:
        return dict(self._call("facet", key, filters, limit))

    def get_meta(self) -> dict[str, Any]:
        return dict(self._call("get_meta"))

    def set_meta(self, meta: Mapping[str, Any]) -> None:
        self._call("set_meta", dict(meta))

    def points(self) -> int:
        return int(self._call("points"))

    def flush(self) -> None:
        self._call("flush")

    def close(self) -> None:
        self._closed = True
        self._host.close()

    # the index rebuild (steps in the module docstring) ---------------------------------------------------
    def index_state(self) -> tuple[int, int]:
        points, unindexed = self._call("index_state")
        return int(points), int(unindexed)

    def misplaced_indexes(self) -> list[str]:
        return list(self._call("misplaced_indexes"))

    @property
    def written_since_build(self) -> int:
        return self._written

    def snapshot_to(self, dst: Path) -> None:
        """Flush and copy the live shard folder to ``dst`` (a backup: call it on the store's worker thread with
        nothing in between, ``StoreGateway.exclusive``, as step 1 of a rebuild does)."""
        self._call("snapshot_to", str(dst))

    def begin_rebuild(self) -> Path:
        """Step 1, on the store's worker thread (no other call runs meanwhile)."""
        shard_dir = self.path / self._host.shard
        need = sum(f.stat().st_size for f in shard_dir.rglob("*") if f.is_file()) + sparse_debt(self.path)
        free = free_bytes(self.path)
        if free < need + 256 * MB:
            raise StoreError(f"not enough disk space to rebuild the index: the copy needs up to {need / MB:.0f} MB "
                             f"and {free / MB:.0f} MB are free")
        building = self.path / f"{LEGACY_SHARD}-{time.time_ns() // 1_000_000}{BUILDING}"
        self._call("snapshot_to", str(building))
        self._journal = WriteJournal(building.with_name(building.name.removesuffix(BUILDING) + JOURNAL))
        self._written = 0
        return building

    def spawn_host(self, shard: str) -> HostProcess:
        """Step 3: start a host on the built copy (call from the daemon's main thread; wait with ``wait_ready``)."""
        return HostProcess(self.path, self.dim, shard, self.ranker)

    def finish_rebuild(self, new: HostProcess) -> tuple[HostProcess, int]:
        """Step 3-4, on the store's worker thread: replay, flush, switch. Returns the old host to close."""
        journal = self._journal
        if journal is None:
            raise StoreError(f"the writes made during the build could not be kept ({self._dropped}); the index "
                             "will be built later")
        journal.sync()
        new.call("replay", (str(journal.path),), {})
        new.call("flush", (), {})
        set_current_shard(self.path, new.shard)
        old, self._host = self._host, new
        self._drop_journal()
        return old, journal.entries

    def abort_rebuild(self) -> None:
        self._drop_journal()

    async def rebuild(self, exclusive: Exclusive, *, backfill: bool = False) -> dict[str, Any]:
        """``IndexRebuild``: the steps of the module docstring."""
        return await _rebuild(exclusive, self, BACKFILL_SEGMENTS if backfill else BUILD_SEGMENTS)


def _remove_folder(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def build_command(shard_dir: Path, segments: int = BUILD_SEGMENTS) -> list[str]:
    return [sys.executable, "-m", "mempald.store.host", "build", str(shard_dir), "--segments", str(segments)]


async def rebuild_index(gateway: StoreGateway, store: HostedEdgeStore) -> dict[str, Any]:
    """Build the store's indexes in a separate process and swap the built shard in (module docstring)."""
    return await store.rebuild(gateway.exclusive)


async def _rebuild(exclusive: Exclusive, store: HostedEdgeStore, segments: int) -> dict[str, Any]:
    t0 = time.monotonic()
    building = await exclusive(store.begin_rebuild)
    copied = time.monotonic()
    final = building.with_name(building.name.removesuffix(BUILDING))
    new: HostProcess | None = None
    swapped = False
    try:
        res = await anyio.run_process(build_command(building, segments), check=False, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=child_env())
        if res.returncode != 0:
            tail = res.stderr.decode(errors="replace").strip().splitlines()[-1:] or [f"exit {res.returncode}"]
            raise StoreError(f"index build failed: {tail[0]}")
        built = time.monotonic()
        await anyio.to_thread.run_sync(os.rename, building, final)
        new = store.spawn_host(final.name)
        await anyio.to_thread.run_sync(new.wait_ready, open_timeout(final))
        loaded = time.monotonic()
        old, replayed = await exclusive(lambda: store.finish_rebuild(new))
        swapped = True
    finally:
        if not swapped:
            with anyio.CancelScope(shield=True):
                store.abort_rebuild()
                if new is not None:
                    await anyio.to_thread.run_sync(new.close, 10.0)
                current = await anyio.to_thread.run_sync(current_shard, store.path)
                for folder in (building, final):
                    if folder.name != current:  # never the live shard, whatever failed
                        await anyio.to_thread.run_sync(_remove_folder, folder)
    done = time.monotonic()
    await anyio.to_thread.run_sync(old.close)
    await anyio.to_thread.run_sync(_remove_folder, store.path / old.shard)
    return {"copy_s": round(copied - t0, 2), "build_s": round(built - copied, 1),
            "open_s": round(loaded - built, 2), "swap_s": round(done - loaded, 3), "replayed_writes": replayed,
            "shard": final.name}
