"""The daemon's end of one store process (``python -m mempald.store.host serve``): its start, the wait for it
to open its shard, its calls and its close. ``mempald.store.hosted`` keeps one of these serving (and restarts
it); an index rebuild starts a second on the built copy.

A large store takes longer to open: the wait grows with the shard's files (``open_timeout``), and a slow open
is logged while it goes on, so that it is seen and not taken for a hang.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from mempald import logs
from mempald.store.base import StoreError
from mempald.store.space import MB, allocated_bytes, death_of

log = logs.get("store")

START_TIMEOUT_S = 120.0  # to open a store, plus OPEN_S_PER_GB for each GB of its files
OPEN_S_PER_GB = 60.0  # a disk read at 17 MB/s: an unbuilt 1M-drawer store (5 GB) opened here in under 30 s
OPEN_LOG_EVERY_S = 30.0


class HostGone(StoreError):
    """The store process died or closed its socket."""


def child_env() -> dict[str, str]:
    """The daemon's environment, with this ``mempald`` first on the path (a source checkout run with
    ``python -m mempald`` starts the same code in its children)."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return env


def open_timeout(shard_dir: Path) -> float:
    """How long a store process may take to open ``shard_dir``: ``START_TIMEOUT_S`` and ``OPEN_S_PER_GB`` for
    each GB of its files (a store too large for the fixed figure would otherwise never start)."""
    return START_TIMEOUT_S + OPEN_S_PER_GB * allocated_bytes(shard_dir) / (1024 * MB)


class HostProcess:
    """One ``mempald.store.host serve`` process and the daemon's end of its socket pair."""

    def __init__(self, path: Path, dim: int, shard: str | None, ranker: str = "") -> None:
        ours, theirs = socket.socketpair()
        cmd = [sys.executable, "-m", "mempald.store.host", "serve", "--fd", str(theirs.fileno()),
               "--path", str(path), "--dim", str(dim)]
        if shard:
            cmd += ["--shard", shard]
        if ranker:
            cmd += ["--ranker", ranker]
        try:
            self.proc = subprocess.Popen(cmd, pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, env=child_env())
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        self.lock = threading.Lock()
        self.shard = shard or ""
        self.path = path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> None:
        """Wait for the store process to open its shard, up to ``timeout`` (a line in the log every
        ``OPEN_LOG_EVERY_S``, so a slow open of a large store is seen, not taken for a hang). One that dies meanwhile
        closes its end of the socket: ``poll`` returns at once and ``recv`` says so."""
        t0 = time.monotonic()
        try:
            while not self.conn.poll(min(OPEN_LOG_EVERY_S, max(0.0, t0 + timeout - time.monotonic()))):
                waited = time.monotonic() - t0
                if waited >= timeout:
                    raise StoreError(f"the store process did not open the store within {timeout:.0f} s")
                log.info("store_opening", waited_s=round(waited), timeout_s=round(timeout), pid=self.pid)
            msg = self.conn.recv()
        except (EOFError, OSError):
            code = self.proc.wait(5)
            raise HostGone(f"the store process exited ({code}) before it opened the store: "
                           f"{death_of(self.path, code)}") from None
        except StoreError:
            self.close(timeout=1)
            raise
        if msg[0] != "ready":
            self.close(timeout=5)
            raise StoreError(str(msg[2]))
        self.shard = str(msg[1]["shard"])

    def call(self, method: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        with self.lock:
            try:
                self.conn.send((method, args, dict(kwargs)))
                reply = self.conn.recv()
            except (EOFError, OSError) as exc:
                raise HostGone(f"the store process is gone ({exc or 'closed'})") from None
        if reply[0] == "ok":
            return reply[1]
        kind, message = reply[1], reply[2]
        raise StoreError(message if kind == "store" else f"{kind}: {message}")

    def exit_code(self) -> int | None:
        try:
            return self.proc.wait(2)
        except subprocess.TimeoutExpired:
            return None

    def close(self, timeout: float = 60.0) -> None:
        """Close the socket: the host flushes, closes its shard and exits."""
        with self.lock:
            self.conn.close()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
