"""One daemon per data directory: an ``flock`` on ``<data dir>/mempald.lock`` (released by the kernel on a crash).
``mempald`` subcommands that open the store without a daemon take the same lock."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO

from mempal.paths import LOCK_NAME


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

    @property
    def held(self) -> bool:
        return self._fh is not None

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


def instance_lock(ddir: Path) -> InstanceLock:
    """The lock of the data dir ``ddir`` (clients read the pid in it: ``mempal.paths.starting_daemon``)."""
    return InstanceLock(ddir / LOCK_NAME)
