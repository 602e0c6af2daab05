"""The daemon's lifetime: single instance, one task group, readiness, signals, ordered shutdown.

Exit codes: 0 clean stop, 2 bad config, 3 never started (model, store or socket could not be opened),
4 another instance runs on this data dir.
"""

from __future__ import annotations

import contextlib
import signal
import sys

import anyio
import anyio.lowlevel
import anyio.to_thread

from mempal.paths import publish_pointer, socket_path, withdraw_pointer
from mempald import __version__, logs
from mempald.config import ConfigError, Settings, data_dir, load_settings
from mempald.embed.embedder import ModelError
from mempald.errors import MempalError
from mempald.runtime.lock import InstanceLock
from mempald.runtime.root import Daemon
from mempald.runtime.sdnotify import Notifier
from mempald.runtime.server import Server, ServerConfig, SocketInUse
from mempald.store.base import StoreError

EXIT_OK = 0
EXIT_CONFIG = 2
EXIT_NOT_STARTED = 3
EXIT_RUNNING = 4

log = logs.get("app")


def run(settings: Settings) -> int:
    ddir = data_dir()
    lock = InstanceLock(ddir / "mempald.lock")
    if not lock.acquire():
        log.error("already_running", data_dir=str(ddir), pid=lock.holder(),
                  message=f"another mempald (pid {lock.holder()}) is running on {ddir}")
        return EXIT_RUNNING
    try:
        try:
            daemon = Daemon.open(settings)
        except (ModelError, StoreError, MempalError, OSError) as exc:
            log.error("cannot_start", error=str(exc))
            return EXIT_NOT_STARTED
        try:
            return anyio.run(_main, daemon)
        finally:
            daemon.close()
    finally:
        lock.release()


async def _main(daemon: Daemon) -> int:
    # Worker threads (parsing, Qdrant Edge calls) hand the GIL back to the event loop every millisecond
    # instead of every 5: `status` stays fast while files are being read.
    sys.setswitchinterval(0.001)
    settings = daemon.settings.current
    notifier = Notifier()
    path = socket_path()
    server = Server(ServerConfig.from_settings(settings.daemon, path), daemon.dispatcher)
    try:
        async with anyio.create_task_group() as tg:
            try:
                await tg.start(server.serve)
            except (OSError, SocketInUse) as exc:
                log.error("cannot_bind", socket=str(path), error=str(exc))
                tg.cancel_scope.cancel()
                return EXIT_NOT_STARTED
            tg.start_soon(_signals, tg.cancel_scope, daemon, notifier)
            daemon.status.ready = True
            publish_pointer(data_dir(), path, version=__version__)  # where clients of this data dir find us
            notifier.ready(f"serving on {path}")
            log.info("ready", socket=str(path), store=daemon.store.location, model=daemon.embedder.info.model_id,
                     sources=daemon.sources.keys())
            await daemon.events.start()
            for loop in daemon.loops():
                tg.start_soon(loop)
            interval = notifier.watchdog_interval()
            if interval:
                tg.start_soon(_watchdog, notifier, interval)
    finally:
        with anyio.CancelScope(shield=True):
            withdraw_pointer(data_dir())
            await daemon.events.stop()
            log.info("stopped")
    return EXIT_OK


async def _watchdog(notifier: Notifier, interval: float) -> None:
    while True:
        notifier.watchdog()
        await anyio.sleep(interval)


async def _signals(scope: anyio.CancelScope, daemon: Daemon, notifier: Notifier) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        async for signum in signals:
            if signum == signal.SIGHUP:
                notifier.reloading()
                await daemon.reload()
                notifier.ready("reloaded")
                continue
            log.info("stopping", signal=signal.Signals(signum).name)
            notifier.stopping()
            await daemon.dispatcher.drain(daemon.settings.current.daemon.shutdown_timeout_s)
            scope.cancel()
            return


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
