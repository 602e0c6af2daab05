"""The processes around the embedded store, so that no Qdrant Edge call runs in the daemon's process.

Every Qdrant Edge call holds the GIL for its whole run: a shard load (seconds at 100k drawers), an index
build (minutes), even a brute-force query. The daemon therefore keeps its store in a child process and talks
to it over a socket pair (``mempald.store.hosted``):

``python -m mempald.store.host serve --fd N --path DIR --dim D [--shard NAME] [--ranker MODULE:FUNCTION]``
    opens the store and answers calls, one at a time, until the daemon closes the socket or goes away;
``python -m mempald.store.host build DIR``
    builds the vector indexes of a copied shard (low priority, dies with its parent) and exits.

Requests are ``(method, args, kwargs)`` tuples, replies ``("ok", value)`` or ``("err", kind, message)``;
``multiprocessing.connection`` frames and pickles them. Only the daemon (the same user, through an inherited
socket pair) can reach a host.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from mempald.store.base import Filters, Ranker, StoreError
from mempald.store.edge import EdgeStore
from mempald.store.file_pages import WrittenPages
from mempald.store.index_build import BUILD_SEGMENTS, build_index
from mempald.store.journal import entries as journal_entries

BUILD_NICE = 10

# The calls a host answers, each named once: the store contract plus what the index rebuild needs. ``WRITES``
# are those a rebuild journals and replays into the new shard (``mempald.store.hosted``).
CALLS: dict[str, Callable[..., Any]] = {
    "upsert": EdgeStore.upsert,
    "set_dense": EdgeStore.set_dense,
    "set_payload": EdgeStore.set_payload,
    "clear_dense": EdgeStore.clear_dense,
    "set_sparse": EdgeStore.set_sparse,
    "delete": EdgeStore.delete,
    "retrieve": EdgeStore.retrieve,
    "query": EdgeStore.query,
    "scroll": EdgeStore.scroll,
    "count": EdgeStore.count,
    "facet": EdgeStore.facet,
    "rank": EdgeStore.rank,
    "get_meta": EdgeStore.get_meta,
    "set_meta": EdgeStore.set_meta,
    "flush": EdgeStore.flush,
    "points": EdgeStore.points,
    "index_state": EdgeStore.index_state,
    "misplaced_indexes": EdgeStore.misplaced_indexes,
    "snapshot_to": lambda store, dst: store.snapshot_to(Path(dst)),
}
WRITES = frozenset({"upsert", "set_dense", "set_payload", "clear_dense", "set_sparse", "delete"})
# Phrases of Qdrant Edge errors that mean its files are damaged (not a bad request, not a full disk).
DAMAGE_MARKS = ("failed to decode", "failed to decompress", "failed to deserialize", "corrupt", "checksum",
                "no appropriate index", "unexpected end of file", "invalid data", "malformed")


def damage_hint(path: Path, message: str) -> str:
    """``message`` with the fix appended when it says the store's files are damaged, else ""."""
    if not any(mark in message.lower() for mark in DAMAGE_MARKS):
        return ""
    return (f"the store at {path} looks damaged ({message}): stop mempald and run `mempald repair` (it keeps "
            "every drawer it can still read and re-reads the transcripts still on disk)")


def open_problem(store: EdgeStore) -> str:
    """Why a store that opened cannot be used ("" when it can): one whose segments were deleted opens empty and
    without the payload indexes every store is created with, so facets (and ``status``) fail."""
    try:
        store.facet("wing", Filters(), 1)
    except Exception as exc:
        return damage_hint(store.shard_dir, str(exc)) or f"the store at {store.shard_dir} cannot be read: {exc}"
    return ""


def unlisted_points(path: Path, shard: str | None) -> str:
    """Why the shard must not be opened ("" when it may): a segment whose id tracker lists fewer points than its
    payload pages hold (a truncated or damaged tracker). Opening it would serve only the listed points, without
    a word, and Qdrant would then drop the others' payloads for good; ``mempald repair`` reads them from the
    pages. Read from the files alone, before anything opens the shard (16 bytes a point)."""
    from mempald.store.edge import current_shard
    from mempald.store.edge_files import tracker_problems

    try:
        shard_dir = path / (shard or current_shard(path))
    except StoreError:
        return ""  # a damaged CURRENT: the store's own open says so
    problems = tracker_problems(shard_dir)
    if not problems:
        return ""
    return (f"the store at {shard_dir} is damaged ({'; '.join(problems[:3])}): not opened, so nothing more is "
            "lost; stop mempald and run `mempald repair` (it recovers the drawers from the payload pages and "
            "re-reads the transcripts still on disk)")


def _die_with_parent() -> None:
    """Linux: SIGKILL this process when the thread that started it ends (the daemon's main thread)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class _Owner:
    """The shard, closed once: by the serving loop when the socket closes, or by the parent watcher when the
    daemon is gone. Calls and the close take the same lock, so the watcher never ends the process in the middle
    of a write or of the close's flush (a process that exits mid-flush leaves the shard as a kill -9 would)."""

    def __init__(self, store: EdgeStore) -> None:
        self.store = store
        self.lock = threading.Lock()
        self.closed = False
        self.pages = WrittenPages(store.shard_dir)

    def apply(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        with self.lock:
            if self.closed:
                raise StoreError("the store process is closing")
            try:
                return _apply(self.store, method, args, kwargs, self.pages.after_write)
            finally:
                if method in WRITES or method == "replay":
                    self.pages.after_write()

    def close(self) -> None:
        with self.lock:
            if not self.closed:
                self.closed = True
                self.store.close()


def _watch_parent(parent: int, owner: list[_Owner]) -> None:
    """Exit when the daemon is gone, even if the socket's end were held open elsewhere: after the call in
    progress, with the shard flushed and closed."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            if owner:
                with contextlib.suppress(Exception):
                    owner[0].close()
            os._exit(0)


def _apply(store: EdgeStore, method: str, args: tuple[Any, ...], kwargs: dict[str, Any],
           wrote: Callable[[], None] = lambda: None) -> Any:
    if method == "replay":  # the writes a rebuild journaled (``mempald.store.journal``), read here
        count = 0
        for name, a in journal_entries(Path(args[0])):
            if name not in WRITES:
                raise StoreError(f"cannot replay {name!r}")
            CALLS[name](store, *a)
            wrote()  # a long replay hands its written pages back as it goes, as writes one by one would
            count += 1
        return count
    call = CALLS.get(method)
    if call is None:
        raise StoreError(f"the store process has no call {method!r}")
    return call(store, *args, **kwargs)


def load_ranker(ref: str) -> Ranker | None:
    """The ranker named ``module:function`` by the daemon (the store package does not import search code; the
    daemon's composition root says which ranker its store runs)."""
    if not ref:
        return None
    module, _, name = ref.partition(":")
    ranker: Ranker = getattr(importlib.import_module(module), name)
    return ranker


def serve(conn: Connection, path: Path, dim: int, shard: str | None, ranker: Ranker | None = None) -> int:
    owner: list[_Owner] = []  # filled once the shard is open
    threading.Thread(target=_watch_parent, args=(os.getppid(), owner), daemon=True).start()
    lost = unlisted_points(path, shard)
    if lost:  # not opened: Qdrant would drop the payloads its damaged id tracker no longer lists
        conn.send(("err", "store", lost))
        return 1
    try:
        store = EdgeStore(path, dim, shard, ranker=ranker)
    except Exception as exc:  # reported to the daemon, which exits with the reason
        conn.send(("err", "store", damage_hint(path, str(exc)) or str(exc)))
        return 1
    owned = _Owner(store)
    owner.append(owned)
    owned.pages.release()  # the load read the WAL and the unbuilt segment's indexes through their mappings
    problem = open_problem(store)
    if problem:
        owned.close()
        conn.send(("err", "store", problem))
        return 1
    try:
        conn.send(("ready", {"shard": store.shard_name, "pid": os.getpid()}))
        while True:
            try:
                method, args, kwargs = conn.recv()
            except (EOFError, OSError):
                return 0
            try:
                reply: tuple[Any, ...] = ("ok", owned.apply(method, args, kwargs))
            except StoreError as exc:
                reply = ("err", "store", str(exc))
            except Exception as exc:  # a bad call must not take the store down
                reply = ("err", type(exc).__name__, str(exc))
            try:
                conn.send(reply)
            except (EOFError, OSError):
                return 0
    finally:
        owned.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mempald.store.host")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--fd", type=int, required=True)
    s.add_argument("--path", required=True)
    s.add_argument("--dim", type=int, required=True)
    s.add_argument("--shard", default=None)
    s.add_argument("--ranker", default="", help="module:function that ranks searches next to the data")
    b = sub.add_parser("build")
    b.add_argument("dir")
    b.add_argument("--indexing-threshold-kb", type=int, default=1)
    b.add_argument("--segments", type=int, default=BUILD_SEGMENTS, help="merge built segments above this many")
    args = ap.parse_args(argv)
    if args.cmd == "build":
        _die_with_parent()
        with contextlib.suppress(OSError):
            os.nice(BUILD_NICE)
        t0 = time.monotonic()
        try:
            built = build_index(Path(args.dir), args.indexing_threshold_kb, max(1, args.segments))
        except Exception as exc:  # the daemon reads the exit code and this line
            print(f"mempald index build failed: {exc}", file=sys.stderr)
            return 1
        print(f"mempald index build: built={built} in {time.monotonic() - t0:.1f} s", file=sys.stderr)
        return 0
    # Ctrl-C on the daemon's terminal, or systemd's SIGTERM to the whole service: the daemon closes its store
    # in order (this process flushes and exits when the socket closes); a dead daemon is noticed by its pid.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with Connection(args.fd) as conn:
        return serve(conn, Path(args.path), args.dim, args.shard, load_ranker(args.ranker))


if __name__ == "__main__":
    sys.exit(main())
