"""The ``Look`` the intake hands to a format's hooks (``unit_of``, ``beside``, ``gather``): safe reads beside a
unit (blocking; worker threads). Every read goes through ``mempald.sources.reader``: a FIFO, a socket, a device
or a file over the cap is never waited on, only answered as missing. An editor's database is opened read-only
(``mode=ro``, never ``immutable``: the editor is writing it), with a short busy timeout and one short
statement, so mempald never holds the editor's writer back."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path, PurePath
from typing import Any

from mempald.normalize.model import Line
from mempald.sources.reader import open_regular, read_capped, read_head

BUSY_TIMEOUT_S = 0.05  # how long a query waits for an editor's write lock before it gives up (read again later)


class FileLook:
    """Reads for formats, on the local filesystem. Failures answer "nothing there", never raise."""

    def is_file(self, path: PurePath) -> bool:
        try:
            return stat.S_ISREG(os.stat(path).st_mode)
        except (OSError, ValueError):
            return False

    def is_dir(self, path: PurePath) -> bool:
        try:
            return stat.S_ISDIR(os.stat(path).st_mode)
        except (OSError, ValueError):
            return False

    def entries(self, folder: PurePath) -> tuple[str, ...]:
        try:
            return tuple(sorted(os.listdir(folder)))
        except (OSError, ValueError):
            return ()

    def head(self, path: PurePath, size: int) -> bytes:
        try:
            return read_head(Path(path), size)
        except (OSError, ValueError):
            return b""

    def read(self, path: PurePath, max_bytes: int) -> bytes | None:
        try:
            return read_capped(Path(path), max_bytes)
        except (OSError, ValueError):
            return None

    def lines(self, path: PurePath, max_bytes: int) -> list[Line]:
        out: list[Line] = []
        off = 0
        try:
            with open_regular(Path(path), max_bytes) as fh:
                for raw in fh:
                    body = raw.rstrip(b"\r\n")
                    if body.strip():
                        out.append(Line(off, body))
                    off += len(raw)
        except (OSError, ValueError):
            return []
        return out

    def rows(self, database: PurePath, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """The rows of one read-only query (raises ``sqlite3.Error`` when the database is locked or damaged: the
        unit is read again when it changes)."""
        uri = Path(database).resolve().as_uri() + "?mode=ro"
        con = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                              check_same_thread=False)
        try:
            return con.execute(sql, params).fetchall()
        finally:
            con.close()


LOOK = FileLook()
