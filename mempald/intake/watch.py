"""The watchdog bridge: filesystem events from the observer thread into a bounded anyio stream.

Events are hints, not the truth: a full stream (an event storm) sets ``overflowed`` and the daemon runs a
reconcile scan instead, so a lost event never loses data; until that scan starts, further events are
dropped here (it covers them). Directory events (created, moved) also trigger a scan of that directory. A
default root that does not exist yet (``~/.codex/sessions`` before Codex first ran) is waited for from its
nearest existing parent: the folders made there are passed on, and the router starts watching the root once
it exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import anyio.from_thread
from anyio.lowlevel import EventLoopToken
from anyio.streams.memory import MemoryObjectSendStream
from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from mempald import logs

log = logs.get("watch")

# The kernel is asked only for these (inotify mask): no open/access/close-without-write events (the daemon's
# own reads would echo back), and no "directory modified" (sent for the parent of every change; it would
# trigger a scan of the whole source per file written). Measured: 20,000 folders watched in about 1 s.
EVENTS: list[type[FileSystemEvent]] = [
    FileCreatedEvent, FileModifiedEvent, FileMovedEvent, FileDeletedEvent, FileClosedEvent,
    DirCreatedEvent, DirMovedEvent, DirDeletedEvent,
]


class _Bridge(FileSystemEventHandler):
    def __init__(self, send: MemoryObjectSendStream[Path], token: EventLoopToken, watcher: Watcher) -> None:
        self._send = send
        self._token = token
        self._watcher = watcher

    def _push(self, path: str | bytes) -> None:
        p = Path(path.decode() if isinstance(path, bytes) else path)
        try:
            anyio.from_thread.run_sync(self._send.send_nowait, p, token=self._token)
        except anyio.WouldBlock:
            self._watcher.overflowed = True
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, RuntimeError):
            pass  # the daemon is shutting down

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        if self._watcher.overflowed:
            return  # a reconcile scan is due and covers this event: no round trip into the loop for it
        self._push(event.src_path)
        dest = getattr(event, "dest_path", "")
        if dest:
            self._push(dest)


class _Arrivals(FileSystemEventHandler):
    """On the nearest existing parent of a root that does not exist yet: folders created or moved in (the
    router asks the source set whether one is, or leads to, a root it waits for)."""

    def __init__(self, bridge: _Bridge) -> None:
        self._bridge = bridge

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory and event.event_type in ("created", "moved"):
            self._bridge._push(getattr(event, "dest_path", "") or event.src_path)


ARRIVAL_EVENTS: list[type[FileSystemEvent]] = [DirCreatedEvent, DirMovedEvent]


def nearest_existing(path: Path) -> Path | None:
    """``path``'s nearest parent folder that exists."""
    for parent in path.parents:
        if parent.is_dir():
            return parent
    return None


class Watcher:
    """Owns the observer thread; ``start``/``stop`` are blocking and called from a worker thread."""

    def __init__(self, send: MemoryObjectSendStream[Path], token: EventLoopToken) -> None:
        self.overflowed = False
        self._observer = Observer()
        self._handler = _Bridge(send, token, self)
        self._arrivals = _Arrivals(self._handler)
        self._watches: dict[Path, object] = {}
        self._parents: dict[Path, object] = {}  # non-recursive watches for roots that do not exist yet

    def sync(self, roots: Sequence[Path], waiting: Sequence[Path] = ()) -> None:
        """Watch exactly ``roots`` (those that exist), adding and removing as needed; and, for each root of
        ``waiting`` (roots that do not exist yet), its nearest existing parent, for the folders made in it."""
        wanted = {r for r in roots if r.exists()}
        for root in list(self._watches):
            if root not in wanted:
                self._observer.unschedule(self._watches.pop(root))  # type: ignore[arg-type]
        for root in wanted - set(self._watches):
            try:
                self._watches[root] = self._observer.schedule(
                    self._handler, str(root), recursive=root.is_dir(), event_filter=EVENTS)
            except OSError as exc:
                log.warning("watch_failed", root=str(root), error=str(exc))
        # A parent inside a watched root is not watched again: the root's recursive watch already reports the
        # folders made there (and a second, narrower watch of the same folder replaced the root's: a Cline root
        # waited for inside Cursor's watched User folder silenced Cursor's database events)
        parents = {p for p in map(nearest_existing, waiting)
                   if p is not None and not any(p == r or r in p.parents for r in wanted)}
        for parent in list(self._parents):
            if parent not in parents:
                self._observer.unschedule(self._parents.pop(parent))  # type: ignore[arg-type]
        for parent in parents - set(self._parents):
            try:
                self._parents[parent] = self._observer.schedule(
                    self._arrivals, str(parent), recursive=False, event_filter=ARRIVAL_EVENTS)
            except OSError as exc:
                log.warning("watch_failed", root=str(parent), error=str(exc))

    @property
    def roots(self) -> list[Path]:
        return sorted(self._watches)

    def start(self) -> None:
        self._observer.daemon = True
        self._observer.start()

    def stop(self) -> None:
        if not self._observer.is_alive():
            return  # never started (events off, or the socket could not be bound): joining would raise
        self._observer.stop()
        self._observer.join(timeout=5)
