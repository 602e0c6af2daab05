"""The daemon's lifetime: single instance, one task group, readiness, signals, ordered shutdown.

Exit codes: 0 clean stop, 2 bad config, 3 never started (model, store or socket could not be opened, or
the state database or store is damaged: the message names the file and says to run ``mempald repair``),
4 another instance runs on this data dir.

Everything the daemon makes is the owner's only: the process runs with umask 077 (``mempald.main``), and at
start the data dir, the config dir and ``config.toml`` lose any group or other permission they had. A stop that
cannot finish (a worker thread blocked in the kernel) ends the process after ``daemon.shutdown_timeout_s`` plus
a grace period: committed writes are already durable (SQLite WAL, the store's WAL), as after a ``kill -9``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import sys
import threading
import traceback
from collections.abc import Iterator

import anyio
import anyio.lowlevel
import anyio.to_thread

from mempal.paths import LOCK_NAME, publish_pointer, socket_path, withdraw_pointer
from mempald import __version__, logs
from mempald.config import ConfigError, Settings, config_dir, config_path, data_dir, load_settings, owner_only
from mempald.embed.embedder import ModelError
from mempald.errors import MempalError
from mempald.lock import InstanceLock
from mempald.runtime.root import Daemon
from mempald.runtime.sdnotify import Notifier
from mempald.runtime.server import Server, ServerConfig, SocketInUse
from mempald.store.base import StoreError

EXIT_OK = 0
EXIT_CONFIG = 2
EXIT_NOT_STARTED = 3
EXIT_RUNNING = 4

log = logs.get("app")


FORCE_EXIT_GRACE_S = 10.0
# While the daemon opens (the model, the store process, the state database), systemd is asked every
# OPEN_EXTEND_EVERY_S for OPEN_EXTEND_S more: its start timeout (90 s by default) must not stop a large store
# that is still opening within the store's own deadline (``mempald.store.host_process.open_timeout``).
OPEN_EXTEND_EVERY_S = 20.0
OPEN_EXTEND_S = 60.0


@contextlib.contextmanager
def _extending_start(notifier: Notifier) -> Iterator[None]:
    """Ask the service manager for more start time now and every ``OPEN_EXTEND_EVERY_S`` until the block ends."""
    if not notifier.enabled:
        yield
        return
    done = threading.Event()

    def extend() -> None:
        while True:
            notifier.extend_timeout(OPEN_EXTEND_S)
            if done.wait(OPEN_EXTEND_EVERY_S):
                return

    thread = threading.Thread(target=extend, name="mempald-start-timeout", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=5)


def secure_dirs(settings: Settings) -> None:
    """Take group and other permissions off what the daemon keeps: an existing 0755 data dir let another user
    list the store and read the state database's header."""
    ddir = data_dir()
    ddir.mkdir(parents=True, exist_ok=True, mode=0o700)
    for folder in (ddir, config_dir(), settings.store_path() if settings.store.path else None):
        if folder is not None:
            owner_only(folder, 0o700)
    for file in (config_path(), ddir / "state.sqlite3", ddir / LOCK_NAME):
        owner_only(file, 0o600)


def run(settings: Settings, lock: InstanceLock) -> int:
    """The daemon, from its lock (``mempald.main`` takes it before the runtime's imports; taken here if that
    failed) to its last log line."""
    ddir = data_dir()
    secure_dirs(settings)
    if not lock.held and not lock.acquire():
        log.error("already_running", data_dir=str(ddir), pid=lock.holder(),
                  message=f"another mempald (pid {lock.holder()}) is running on {ddir}")
        return EXIT_RUNNING
    try:
        try:
            with _extending_start(Notifier()):
                daemon = Daemon.open(settings)
        except (ModelError, StoreError, MempalError, OSError) as exc:
            log.error("cannot_start", error=str(exc))
            return EXIT_NOT_STARTED
        except sqlite3.Error as exc:  # damage found past the state database's own start-up check
            log.error("cannot_start", error=f"the state database {ddir / 'state.sqlite3'} is damaged ({exc}): "
                      "stop mempald and run `mempald repair`")
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
            _arm_force_exit(daemon.settings.current.daemon.shutdown_timeout_s + FORCE_EXIT_GRACE_S)
            await daemon.dispatcher.drain(daemon.settings.current.daemon.shutdown_timeout_s)
            scope.cancel()
            return


def _arm_force_exit(after_s: float) -> None:
    """End the process if the orderly stop has not ended it within ``after_s`` (a worker thread stuck in the
    kernel cannot be cancelled, and its task would hold the task group open forever)."""

    def force() -> None:
        frames = sys._current_frames()
        stuck = [" | ".join(line.strip().replace("\n", " ") for line in traceback.format_stack(frames[t.ident])[-2:])
                 for t in threading.enumerate() if t.ident in frames and t.name.startswith("AnyIO worker")]
        log.error("shutdown_forced", after_s=after_s, threads=stuck[:20],
                  message="the stop did not finish in time; exiting (committed writes are durable)")
        os._exit(EXIT_OK)

    timer = threading.Timer(after_s, force)
    timer.daemon = True
    timer.start()


def main_run(lock: InstanceLock, verbose: bool = False) -> int:
    logs.configure(verbose)
    try:
        settings = load_settings()
    except ConfigError as exc:
        log.error("bad_config", error=str(exc))
        lock.release()
        return EXIT_CONFIG
    with contextlib.suppress(KeyboardInterrupt):
        return run(settings, lock)
    return EXIT_OK
