"""Incremental JSONL reading with cursors (blocking; runs in a worker thread).

A cursor is (offset, inode, size, mtime, prefix hash). Only complete lines are returned; a partial last
line waits. If the file shrank, was replaced (new inode) or its bytes before the offset changed, reading
starts again from the beginning (ids are deterministic, so a replay overwrites, never duplicates).
Lines longer than ``max_line`` are skipped with a count, in bounded memory.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from mempald.normalize.model import Line

_HEAD = 4096
_TAIL = 65536
_BLOCK = 1 << 20


def prefix_hash(path: Path, offset: int) -> str:
    """A hash of the bytes before ``offset``: the first 4 KiB and the 64 KiB just before it."""
    h = hashlib.sha256()
    if offset <= 0:
        return h.hexdigest()
    with path.open("rb") as fh:
        h.update(fh.read(min(offset, _HEAD)))
        start = max(_HEAD, offset - _TAIL)
        if start < offset:
            fh.seek(start)
            h.update(fh.read(offset - start))
    return h.hexdigest()


@dataclass(slots=True)
class ReadResult:
    lines: list[Line] = field(default_factory=list)
    start: int = 0  # where reading began (0 after a restart)
    end: int = 0  # offset just after the last complete line read
    size: int = 0
    inode: int = 0
    mtime: float = 0.0
    restarted: bool = False
    more: bool = False  # stopped at the byte budget; more complete lines may follow
    skipped_long: int = 0


def stat_key(path: Path) -> os.stat_result:
    return path.stat()


def read_lines(
    path: Path,
    offset: int,
    inode: int | None,
    expected_hash: str | None,
    *,
    budget: int,
    max_line: int,
) -> ReadResult:
    st = path.stat()
    res = ReadResult(size=st.st_size, inode=st.st_ino, mtime=st.st_mtime)
    restart = (
        (inode is not None and inode != st.st_ino)
        or st.st_size < offset
        or (offset > 0 and expected_hash is not None and prefix_hash(path, offset) != expected_hash)
    )
    if restart:
        offset = 0
        res.restarted = True
    res.start = offset
    res.end = offset
    with path.open("rb") as fh:
        fh.seek(offset)
        pending = b""
        pending_start = offset
        consumed = 0
        skipping = False
        while True:
            block = fh.read(_BLOCK)
            if not block:
                break
            if skipping:
                nl = block.find(b"\n")
                if nl < 0:
                    pending_start += len(block)
                    continue
                pending_start += nl + 1
                block = block[nl + 1 :]
                skipping = False
                res.skipped_long += 1
                res.end = pending_start
            data = pending + block
            pos = 0
            while True:
                nl = data.find(b"\n", pos)
                if nl < 0:
                    break
                raw = data[pos:nl]
                if len(raw) > max_line:
                    res.skipped_long += 1
                elif raw.strip():
                    res.lines.append(Line(pending_start + pos, raw.rstrip(b"\r")))
                pos = nl + 1
            consumed += pos
            pending_start += pos
            pending = data[pos:]
            res.end = pending_start
            if len(pending) > max_line:
                skipping = True
                pending_start += len(pending)
                pending = b""
            if consumed >= budget:
                res.more = fh.tell() < st.st_size or bool(pending)
                break
        if skipping:
            # A giant line with no newline yet: come back to its start later.
            res.end = max(res.end, res.start)
    return res
