"""The writes an index rebuild replays into the built shard (``mempald.store.hosted``), kept in a file beside the
store, not in the daemon's memory: a build during a backfill sees thousands of drawers written meanwhile (measured,
a 65,000-drawer Cursor backfill: about 7,000 points per build, which as Python objects grew the daemon by 170 MB).

One pickled ``(method, args)`` after another, read back by the store process that replays them (the daemon
never loads them again). The file is the daemon's own and
is removed when the rebuild ends, whichever way; a crash leaves it for ``remove_stale_journals``."""

from __future__ import annotations

import contextlib
import pickle
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from mempald.store.base import StoreError

SUFFIX = ".journal"


class WriteJournal:
    """Writes kept, in order, while a rebuild runs. ``append`` is called on the store's worker thread; ``drop``
    may come from another thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.points = 0
        self.entries = 0
        self._lock = threading.Lock()
        try:
            self._fh: Any = open(path, "wb")  # noqa: SIM115 (kept open for the rebuild's length)
        except OSError as exc:
            raise StoreError(f"cannot keep the rebuild's journal at {path}: {exc}") from exc

    def append(self, method: str, args: tuple[Any, ...]) -> None:
        points = len(args[0]) if isinstance(args[0], Sequence) else 1
        with self._lock:
            if self._fh is None:
                return
            try:
                pickle.dump((method, args), self._fh, protocol=pickle.HIGHEST_PROTOCOL)
            except (OSError, ValueError) as exc:  # (a full disk): the rebuild cannot be completed; it is dropped
                self._close()
                raise StoreError(f"cannot write the rebuild's journal {self.path}: {exc}") from exc
            self.points += points
            self.entries += 1

    def sync(self) -> None:
        """Everything appended is in the file (before the new store process reads it: ``entries``)."""
        with self._lock:
            if self._fh is None:
                raise StoreError("the rebuild's journal was dropped")
            try:
                self._fh.flush()
            except OSError as exc:
                raise StoreError(f"cannot write the rebuild's journal {self.path}: {exc}") from exc

    def _close(self) -> None:
        if self._fh is not None:
            with contextlib.suppress(OSError):
                self._fh.close()
            self._fh = None

    def drop(self) -> None:
        """Close and remove the file (the rebuild is over)."""
        with self._lock:
            self._close()
        self.path.unlink(missing_ok=True)


def entries(path: Path) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """The writes of the journal at ``path``, in order (read by the store process that replays them)."""
    try:
        with open(path, "rb") as fh:
            while True:
                try:
                    method, args = pickle.load(fh)
                except EOFError:
                    return
                yield str(method), tuple(args)
    except (OSError, pickle.UnpicklingError, ValueError, TypeError) as exc:
        raise StoreError(f"cannot read the rebuild's journal {path}: {exc}") from exc


def remove_stale_journals(path: Path) -> list[str]:
    """Journals a daemon that died mid-rebuild left in the store folder ``path``."""
    removed = []
    for entry in path.glob("*" + SUFFIX) if path.is_dir() else ():
        with contextlib.suppress(OSError):
            entry.unlink()
            removed.append(entry.name)
    return removed
