"""Memories that may be out of date: a memory that wrote lines into a file (an ``Edit``, a ``Write``, an
``apply_patch``; digests kept by ``mempald.normalize.quotes``) or quotes a code block under a file's name is
checked against that file as it is now, when recall or the file gate shows it. Where none of the lines it wrote
are in the file any more (or the file is gone), it says so in one short clause and is shown after the memories
that still hold.

Cheap and never blocking: only the files a shown memory names are read, only regular files up to
``MAX_BYTES`` (never a FIFO or a device: opened non-blocking and checked after opening), each file's line
digests cached by (device, inode, size, mtime); the caller bounds the time it waits.
"""

from __future__ import annotations

import os
import posixpath
import stat
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from mempald.normalize import quotes

MAX_BYTES = 4 * 1024 * 1024  # a larger file is not read (its memories are shown as they are)
MAX_FILES = 6  # files checked per memory
CACHE_FILES = 512

_Key = tuple[int, int, int, int]


class FileLines:
    """The line digests of files as they are now, cached by identity, size and mtime."""

    def __init__(self, max_bytes: int = MAX_BYTES, size: int = CACHE_FILES) -> None:
        self.max_bytes = max_bytes
        self.size = size
        self._cache: OrderedDict[str, tuple[_Key, frozenset[str]]] = OrderedDict()

    def digests(self, path: str) -> frozenset[str] | None:
        """The digests of ``path``'s lines; an empty set when it is gone (its folder is here, the file is not);
        None when it cannot be told (not on this machine, not a regular file, too large, unreadable)."""
        try:
            st = os.stat(path)
        except FileNotFoundError:
            # gone from a folder that is here; a folder that is not (another machine's path) tells nothing
            return frozenset() if os.path.isdir(os.path.dirname(path)) else None
        except (OSError, ValueError):
            return None
        if not stat.S_ISREG(st.st_mode) or st.st_size > self.max_bytes:
            return None
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        hit = self._cache.get(path)
        if hit is not None and hit[0] == key:
            self._cache.move_to_end(path)
            return hit[1]
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
        except OSError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped for something else since the stat
                return None
            with os.fdopen(fd, "rb", closefd=False) as f:
                data = f.read(self.max_bytes + 1)
        except OSError:
            return None
        finally:
            os.close(fd)
        if len(data) > self.max_bytes:
            return None
        found = frozenset(quotes.digest(ln) for ln in data.decode("utf-8", "replace").splitlines() if ln.strip())
        self._cache[path] = (key, found)
        while len(self._cache) > self.size:
            self._cache.popitem(last=False)
        return found


def written_lines(payload: Mapping[str, Any]) -> dict[str, list[str]]:
    """What a memory says it put in files: its stored quotes, and the code blocks of its text that open under a
    file's name (joined to its cwd), as absolute path -> line digests."""
    cwd = str(payload.get("cwd") or "")
    out: dict[str, list[str]] = {}
    found = dict(quotes.decode(payload.get("quotes")))
    for path, code in quotes.fenced(str(payload.get("text") or "")).items():
        digs = quotes.telling(code.splitlines())
        if digs:
            found.setdefault(path, digs)
    for named, digs in found.items():
        if named.startswith("/"):
            full = named
        elif cwd.startswith("/"):
            full = posixpath.normpath(posixpath.join(cwd, named))
        else:
            continue
        if digs:
            out[full] = digs
        if len(out) >= MAX_FILES:
            break
    return out


def shown_path(path: str, cwd: str) -> str:
    if cwd.startswith("/") and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1 :]
    return path


def out_of_date(payload: Mapping[str, Any], files: FileLines) -> str | None:
    """One short clause when the lines this memory wrote are gone from the file (None: current, or nothing to
    check)."""
    cwd = str(payload.get("cwd") or "")
    changed: list[str] = []
    gone: list[str] = []
    for path, digs in written_lines(payload).items():
        now = files.digests(path)
        if now is None:
            continue
        if not now:
            gone.append(path)
        elif not any(d in now for d in digs):
            changed.append(path)
    if not changed and not gone:
        return None
    since = str(payload.get("timestamp") or "")[:10]
    path = (changed or gone)[0]
    what = "changed" if changed else "is gone"
    more = len(changed) + len(gone) - 1
    tail = f" (and {more} more file{'s' if more > 1 else ''})" if more else ""
    return f"may be out of date: {shown_path(path, cwd)} {what}{' since ' + since if since else ''}{tail}"


def mark(memories: list[dict[str, Any]], payloads: Mapping[str, Mapping[str, Any]],
         files: FileLines) -> list[dict[str, Any]]:
    """``memories`` with ``stale`` set where they may be out of date, the current ones first (order kept
    otherwise). ``payloads``: each memory's stored payload by drawer id (for its quotes)."""
    out: list[dict[str, Any]] = []
    for h in memories:
        payload = {**h, **payloads.get(str(h.get("drawer_id")), {})}
        clause = out_of_date(payload, files)
        out.append({**h, "stale": clause} if clause else h)
    return [h for h in out if not h.get("stale")] + [h for h in out if h.get("stale")]
