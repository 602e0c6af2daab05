"""The processes around the embedded store, so that no Qdrant Edge call runs in the daemon's process.

Every Qdrant Edge call holds the GIL for its whole run: a shard load (seconds at 100k drawers), an index
build (minutes), even a brute-force query. The daemon therefore keeps its store in a child process and talks
to it over a socket pair (``mempald.store.hosted``):

``python -m mempald.store.host serve --fd N --path DIR --dim D [--shard NAME]``
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
import os
import signal
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from mempald.store.base import StoreError
from mempald.store.edge import EdgeStore, build_index

# Calls a host answers: the store contract plus what the index rebuild needs.
CALLS = frozenset({
    "upsert", "set_dense", "set_payload", "clear_dense", "retrieve", "query", "scroll", "count", "facet",
    "delete", "get_meta", "set_meta", "flush", "points", "index_state", "snapshot_to", "replay", "rank",
})
WRITES = frozenset({"upsert", "set_dense", "set_payload", "clear_dense", "delete"})
BUILD_NICE = 10


def _die_with_parent() -> None:
    """Linux: SIGKILL this process when the thread that started it ends (the daemon's main thread)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _watch_parent(parent: int) -> None:
    """Exit when the daemon is gone, even if the socket's end were held open elsewhere."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(0)


def _apply(store: EdgeStore, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if method not in CALLS:
        raise StoreError(f"the store process has no call {method!r}")
    if method == "replay":
        (ops,) = args
        for name, a, kw in ops:
            if name not in WRITES:
                raise StoreError(f"cannot replay {name!r}")
            getattr(store, name)(*a, **kw)
        return len(ops)
    if method == "snapshot_to":
        return store.snapshot_to(Path(args[0]))
    if method == "rank":  # the whole search ranking next to the data (mempald.ranking: no model, no daemon state)
        from mempald.ranking import rank

        return rank(store, *args, **kwargs)
    return getattr(store, method)(*args, **kwargs)


def serve(conn: Connection, path: Path, dim: int, shard: str | None) -> int:
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    try:
        store = EdgeStore(path, dim, shard)
    except Exception as exc:  # reported to the daemon, which exits with the reason
        conn.send(("err", "store", str(exc)))
        return 1
    try:
        conn.send(("ready", {"shard": store.shard_name, "pid": os.getpid()}))
        while True:
            try:
                method, args, kwargs = conn.recv()
            except (EOFError, OSError):
                return 0
            try:
                reply: tuple[Any, ...] = ("ok", _apply(store, method, args, kwargs))
            except StoreError as exc:
                reply = ("err", "store", str(exc))
            except Exception as exc:  # a bad call must not take the store down
                reply = ("err", type(exc).__name__, str(exc))
            try:
                conn.send(reply)
            except (EOFError, OSError):
                return 0
    finally:
        store.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mempald.store.host")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--fd", type=int, required=True)
    s.add_argument("--path", required=True)
    s.add_argument("--dim", type=int, required=True)
    s.add_argument("--shard", default=None)
    b = sub.add_parser("build")
    b.add_argument("dir")
    b.add_argument("--indexing-threshold-kb", type=int, default=1)
    args = ap.parse_args(argv)
    if args.cmd == "build":
        _die_with_parent()
        with contextlib.suppress(OSError):
            os.nice(BUILD_NICE)
        t0 = time.monotonic()
        try:
            built = build_index(Path(args.dir), args.indexing_threshold_kb)
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
        return serve(conn, Path(args.path), args.dim, args.shard)


if __name__ == "__main__":
    sys.exit(main())
