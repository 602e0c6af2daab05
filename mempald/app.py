"""The daemon's lifetime: single instance, one task group, readiness, signals, ordered shutdown.

Exit codes: 0 clean stop, 2 bad config, 3 never started (model, store or socket could not be opened),
4 another instance runs on this data dir.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import sys
from pathlib import Path
from typing import IO

import anyio
import anyio.lowlevel
import anyio.to_thread

from client.paths import socket_path
from mempald import logs
from mempald.config import ConfigError, Settings, data_dir, load_settings
from mempald.embed import ModelError
from mempald.palace import Palace
from mempald.queues import BACKFILL, FRESH
from mempald.sdnotify import Notifier
from mempald.server import Server, SocketInUse
from mempald.sources.registry import resolve_sources
from mempald.sources.watch import Watcher
from mempald.store.base import StoreError

EXIT_OK = 0
EXIT_CONFIG = 2
EXIT_NOT_STARTED = 3
EXIT_RUNNING = 4

log = logs.get("mempald.app")


class InstanceLock:
    """``flock`` on ``<data dir>/mempald.lock``: one daemon per data dir; released by the kernel on crash."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: IO[str] | None = None

    def acquire(self) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fh = self.path.open("a+")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            return False
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        self._fh = fh
        return True

    def holder(self) -> str:
        try:
            return self.path.read_text().strip() or "?"
        except OSError:
            return "?"

    def release(self) -> None:
        if self._fh is not None:
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None


def run(settings: Settings) -> int:
    ddir = data_dir()
    lock = InstanceLock(ddir / "mempald.lock")
    if not lock.acquire():
        log.error("already_running", data_dir=str(ddir), pid=lock.holder(),
                  message=f"another mempald (pid {lock.holder()}) is running on {ddir}")
        return EXIT_RUNNING
    try:
        try:
            palace = Palace.open(settings)
        except (ModelError, StoreError, OSError) as exc:
            log.error("cannot_start", error=str(exc))
            return EXIT_NOT_STARTED
        try:
            return anyio.run(_main, palace)
        finally:
            palace.close()
    finally:
        lock.release()


async def _main(palace: Palace) -> int:
    # Worker threads (parsing, Qdrant Edge calls) hand the GIL back to the event loop every millisecond
    # instead of every 5: `status` stays fast while files are being read.
    sys.setswitchinterval(0.001)
    settings = palace.settings
    notifier = Notifier()
    path = socket_path()
    server = Server(
        palace, path, max_line=settings.daemon.max_line_bytes, idle_timeout=settings.daemon.idle_timeout_s,
        request_timeout=settings.daemon.request_timeout_s, max_clients=settings.daemon.max_clients,
    )
    send, recv = anyio.create_memory_object_stream[Path](max_buffer_size=settings.ingest.event_buffer)
    watcher = Watcher(send, anyio.lowlevel.current_token())
    palace.watcher = watcher if settings.ingest.watch_events else None
    exit_code = EXIT_OK
    try:
        async with anyio.create_task_group() as tg:
            try:
                await tg.start(server.serve)
            except (OSError, SocketInUse) as exc:
                log.error("cannot_bind", socket=str(path), error=str(exc))
                tg.cancel_scope.cancel()
                return EXIT_NOT_STARTED
            tg.start_soon(_signals, tg.cancel_scope, palace, server, notifier)
            palace.ready = True
            notifier.ready(f"serving on {path}")
            log.info("ready", socket=str(path), store=palace.runner.store.location,
                     model=palace.embedder.info.model_id, sources=[s.key for s in palace.sources])
            if settings.ingest.watch_events:
                await anyio.to_thread.run_sync(watcher.sync, [s.root for s in palace.sources])
                await anyio.to_thread.run_sync(watcher.start)
            else:
                log.info("watch_events_off", reconcile_interval_s=settings.ingest.reconcile_interval_s)
            tg.start_soon(palace.watch_loop, recv)
            tg.start_soon(palace.ingest_loop)
            tg.start_soon(palace.ingest_loop, (FRESH,))
            tg.start_soon(palace.densifier.run)
            tg.start_soon(_catch_up, palace)
            tg.start_soon(palace.reconcile_loop)
            tg.start_soon(palace.pack_loop)
            tg.start_soon(palace.index_loop)
            interval = notifier.watchdog_interval()
            if interval:
                tg.start_soon(_watchdog, notifier, interval)
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(watcher.stop)
            log.info("stopped")
    return exit_code


async def _catch_up(palace: Palace) -> None:
    missing = await palace.densifier.requeue_missing()
    queued = await palace.reconcile(BACKFILL)
    log.info("catch_up", files=queued, dense_missing=missing)


async def _watchdog(notifier: Notifier, interval: float) -> None:
    while True:
        notifier.watchdog()
        await anyio.sleep(interval)


async def _signals(scope: anyio.CancelScope, palace: Palace, server: Server, notifier: Notifier) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        async for signum in signals:
            if signum == signal.SIGHUP:
                notifier.reloading()
                await reload(palace)
                notifier.ready("reloaded")
                continue
            log.info("stopping", signal=signal.Signals(signum).name)
            notifier.stopping()
            await server.drain(palace.settings.daemon.shutdown_timeout_s)
            scope.cancel()
            return


async def reload(palace: Palace) -> None:
    """Re-read the config: sources added or removed take effect now; other changes need a restart."""
    try:
        settings = load_settings()
    except ConfigError as exc:
        log.error("reload_failed", error=str(exc))
        return
    palace.settings = settings
    palace.sources = resolve_sources(settings)
    if palace.watcher is not None:
        await anyio.to_thread.run_sync(palace.watcher.sync, [s.root for s in palace.sources])
    queued = await palace.reconcile(BACKFILL)
    log.info("reloaded", sources=[s.key for s in palace.sources], queued=queued)


def main_run(verbose: bool = False) -> int:
    logs.configure(verbose)
    try:
        settings = load_settings()
    except ConfigError as exc:
        log.error("bad_config", error=str(exc))
        return EXIT_CONFIG
    with contextlib.suppress(KeyboardInterrupt):
        return run(settings)
    return EXIT_OK
