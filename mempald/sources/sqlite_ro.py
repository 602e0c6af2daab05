"""Reading a database another program owns and writes (an editor's ``state.vscdb``), without disturbing it.

Blocking; runs in a worker thread. The one way the daemon reads a SQLite file it does not own:

- opened read-only by URI (``file:...?mode=ro``), never ``immutable`` (the file is live: an immutable reader
  would trust stale pages and could read a torn row), with ``query_only`` set besides: no journal, WAL or lock
  file is ever created next to it by mempald (a WAL database's own ``-wal``/``-shm``, which the editor keeps, are
  used as SQLite's protocol requires);
- a short busy timeout: a database locked by its writer answers ``Unreadable("locked")`` at once, to be tried
  again when it changes, never a wait that holds the writer up in turn;
- one statement, one short implicit transaction, one fresh connection closed at once: no read transaction is
  ever held open between queries, and a statement running longer than ``max_s`` is interrupted
  (``Unreadable("slow")``), so in a rollback-journal database the writer waits at most that long;
- every failure is an ``Unreadable`` (a ``sqlite3.OperationalError``) naming the reason: ``missing``,
  ``refused`` (a FIFO, a device), ``locked``, ``corrupt`` (a bad page, not a database), ``schema`` (a table or
  column the editor no longer has), ``slow``.

``signature`` notices a change cheaply from the file system alone (the database's and its ``-wal``'s size and
mtime): ``PRAGMA data_version`` only compares within one connection, and none is kept open here.
"""

from __future__ import annotations

import sqlite3
import time
import urllib.parse
from pathlib import Path, PurePath
from typing import Any

from mempald.sources.reader import Refused, check_file

BUSY_TIMEOUT_S = 0.05  # how long a query waits for the writer's lock before answering "locked"
MAX_QUERY_S = 0.08  # how long one statement may hold its read snapshot before it is interrupted
_PROGRESS_STEPS = 2000  # SQLite VM steps between checks of the statement's age


class Unreadable(sqlite3.OperationalError):
    """The database could not be read now: ``reason`` is missing, refused, locked, corrupt, schema or slow (a
    ``sqlite3.Error``, as the intake expects of ``Look.rows``: the unit is read again when it changes)."""

    def __init__(self, path: PurePath | str, reason: str, detail: str = "") -> None:
        super().__init__(f"{path}: {reason}" + (f" ({detail})" if detail else ""))
        self.path = str(path)
        self.reason = reason
        self.detail = detail


def _uri(path: Path) -> str:
    return "file:" + urllib.parse.quote(str(path.absolute())) + "?mode=ro"


def _reason(exc: sqlite3.Error) -> str:
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return "locked"
    if "interrupted" in text:
        return "slow"
    if "no such table" in text or "no such column" in text:
        return "schema"
    if "malformed" in text or "not a database" in text or "corrupt" in text or "disk i/o" in text:
        return "corrupt"
    if "unable to open" in text:
        return "missing"
    return "corrupt"


def query(db_path: PurePath | str, sql: str, params: tuple[Any, ...] = (), *, timeout_s: float = BUSY_TIMEOUT_S,
          max_s: float = MAX_QUERY_S) -> list[tuple[Any, ...]]:
    """The rows of one read-only statement on ``db_path`` (module docstring); ``Unreadable`` when it cannot be
    read now. ``sql`` must be a single SELECT (the connection refuses writes whatever it is)."""
    path = Path(db_path)
    try:
        check_file(path)
    except FileNotFoundError:
        raise Unreadable(path, "missing") from None
    except Refused as exc:
        raise Unreadable(path, "refused", exc.reason) from None
    except OSError as exc:
        raise Unreadable(path, "missing", type(exc).__name__) from None
    started = time.monotonic()
    try:
        conn = sqlite3.connect(_uri(path), uri=True, timeout=timeout_s, isolation_level=None,
                               check_same_thread=False)
    except sqlite3.Error as exc:
        raise Unreadable(path, _reason(exc), str(exc)) from None
    try:
        conn.execute("PRAGMA query_only = 1")
        conn.set_progress_handler(lambda: 1 if time.monotonic() - started > max_s else 0, _PROGRESS_STEPS)
        return list(conn.execute(sql, params).fetchall())
    except sqlite3.Error as exc:
        raise Unreadable(path, _reason(exc), str(exc)) from None
    finally:
        conn.close()


def signature(db_path: PurePath | str) -> tuple[int, int, int, int]:
    """(size, mtime_ns) of the database and of its ``-wal`` file (zeros for one that is not there): it changes
    whenever a write is committed, in either journal mode."""
    out: list[int] = []
    for p in (Path(db_path), Path(str(db_path) + "-wal")):
        try:
            st = p.stat()
            out += [st.st_size, st.st_mtime_ns]
        except OSError:
            out += [0, 0]
    return (out[0], out[1], out[2], out[3])
