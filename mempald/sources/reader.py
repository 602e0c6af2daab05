"""Incremental JSONL reading with cursors (blocking; runs in a worker thread), and what may be read at all.

A cursor is (offset, inode, size, mtime, prefix hash). Only complete lines are returned; a partial last
line waits. If the file shrank, was replaced (new inode) or its bytes before the offset changed, reading
starts again from the beginning (ids are deterministic, so a replay overwrites, never duplicates).
Lines longer than ``max_line`` are skipped with a count, in bounded memory.

Only regular files are read: a FIFO would block a worker thread forever on ``open``, a device (``/dev/zero``)
never ends, and the files of ``/proc`` and ``/sys`` hold the machine's secrets (``/proc/self/environ``).
``refusal`` says why a file is not read (its ``stat``, links followed), ``check_file`` raises ``Refused`` for
it, and ``open_regular`` opens without blocking and checks what it opened (no race with a rename in between).
Files over ``ingest.max_file_bytes`` are refused by the callers that read whole files. A link in a watched
folder whose target lies outside every watched folder is not read either (``link_refusal``), in conversation
folders as in code projects (whose walk never follows a link): watching the target reads it.

This is the one way the daemon opens a file a user controls (a watched folder's, a pack's input, a peeked
transcript, an ignore file): ``open_regular`` to stream it, ``read_capped`` to read it whole within a cap (the
cap's setting named in the refusal), ``read_head`` for its first bytes. All three raise ``Refused`` (an
``OSError``) for a FIFO, a socket, a device or a file of ``/proc``, without waiting on it (issues 22 and 47).
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from mempald.normalize.model import Line

_HEAD = 4096
_TAIL = 65536
_BLOCK = 1 << 20


PSEUDO_ROOTS = ("/proc", "/sys", "/dev")
TOO_LARGE = "too_large"
BINARY = "binary"  # a file whose content is not text (a database, an archive, an image): refused, never read as text
BINARY_PROBE = 8192  # how much of a file's start is looked at for binary content
_MAGIC = ((b"SQLite format 3\x00", "a SQLite database"), (b"\x7fELF", "an executable"),
          (b"PK\x03\x04", "a zip archive"), (b"%PDF-", "a PDF document"), (b"\x89PNG\r\n", "a PNG image"),
          (b"\xff\xd8\xff", "a JPEG image"), (b"\x1f\x8b", "gzip-compressed data"), (b"GIF8", "a GIF image"))
LINK_OUTSIDE = "link_outside"


class Refused(OSError):
    """A file that is not read. ``reason`` is the key counted in ``status`` (``fifo``, ``socket``, ``device``,
    ``directory``, ``pseudo_file``, ``too_large``); the message names the file and the reason."""

    def __init__(self, path: Path | str, reason: str, detail: str) -> None:
        super().__init__(f"{path}: {detail}: not read")
        self.path = str(path)
        self.reason = reason
        self.detail = detail


@functools.cache
def _pseudo_devices() -> frozenset[int]:
    """The devices of the kernel's pseudo filesystems (procfs, sysfs, devtmpfs), where they exist."""
    devs = set()
    for root in PSEUDO_ROOTS:
        try:
            devs.add(os.stat(root).st_dev)
        except OSError:
            continue
    return frozenset(devs)


def kind_of(mode: int) -> str:
    """What a file of this mode is, in a word ("regular" for one that may be read)."""
    if stat.S_ISREG(mode):
        return "regular"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special"


_WHAT = {"fifo": "a FIFO (named pipe)", "socket": "a socket", "device": "a device", "directory": "a directory",
         "special": "not a regular file"}


MAX_FILE_SETTING = "ingest.max_file_bytes"


def refusal(st: os.stat_result, max_bytes: int | None = None, *, pseudo_only: bool = False,
            limit: str = MAX_FILE_SETTING) -> tuple[str, str] | None:
    """(reason, detail) when a file with this ``stat`` (links followed) is not to be read, else None.
    ``pseudo_only``: only whether it lies on a pseudo filesystem (for a folder); ``limit``: the name of the
    setting (or constant) ``max_bytes`` comes from, for the message."""
    kind = kind_of(st.st_mode)
    if kind != "regular" and not pseudo_only:
        return kind, f"{_WHAT[kind]}, not a regular file"
    if st.st_dev in _pseudo_devices():
        return "pseudo_file", "a file of a kernel pseudo filesystem (/proc, /sys, /dev)"
    if max_bytes is not None and st.st_size > max_bytes:
        advice = "; raise it to read this file" if limit == MAX_FILE_SETTING else ""
        return TOO_LARGE, f"{st.st_size:,} bytes, over {limit} ({max_bytes:,}){advice}"
    return None


def binary_content(head: bytes) -> str | None:
    """Why the bytes a file starts with are not text (its magic number, or NUL bytes: text in UTF-8 or any
    legacy 8-bit encoding has none; UTF-16 has them and is not read either), or None when they may be."""
    for magic, what in _MAGIC:
        if head.startswith(magic):
            return f"{what}, binary content, not text"
    if b"\x00" in head[:BINARY_PROBE]:
        return "binary content (NUL bytes), not text"
    return None


def check_text(path: Path, head: bytes) -> None:
    """Raise ``Refused`` (reason ``binary``) when ``head``, the start of ``path``, is binary content."""
    why = binary_content(head)
    if why is not None:
        raise Refused(path, BINARY, why)


def link_refusal(path: Path, root: Path, watched: Iterable[Path] = ()) -> tuple[str, str] | None:
    """(reason, detail) when ``path``, in the watched folder ``root``, is a symbolic link whose target lies outside
    ``root`` and outside every folder of ``watched`` (issue #41 section 7: a ``.jsonl`` link in a conversation
    folder to a file elsewhere was read, while a code project refuses the same link). None for anything else: not
    a link, a link within the watched tree, a dangling link or a loop (refused when it is opened)."""
    if not os.path.islink(path):
        return None
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    for base in (root, *watched):
        if target == base or base in target.parents:
            return None
    return LINK_OUTSIDE, f"a link to {target}, outside the watched folder {root} (watch its target to read it)"


def check_file(path: Path, max_bytes: int | None = None) -> os.stat_result:
    """``stat`` a file that is about to be read (links followed); raises ``Refused`` if it may not be."""
    st = path.stat()
    why = refusal(st, max_bytes)
    if why is not None:
        raise Refused(path, *why)
    return st


def open_regular(path: Path, max_bytes: int | None = None, *, limit: str = MAX_FILE_SETTING) -> BinaryIO:
    """Open a file for reading only if it is a regular file (and within ``max_bytes``): the open never blocks
    (``O_NONBLOCK``: a FIFO with no writer would hang it), and what was opened is checked, not the name."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        why = refusal(os.fstat(fd), max_bytes, limit=limit)
        if why is not None:
            raise Refused(path, *why)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_capped(path: Path, max_bytes: int, *, limit: str = MAX_FILE_SETTING) -> bytes:
    """The whole of a regular file of at most ``max_bytes`` (``Refused`` otherwise), in bounded memory even if
    the file grows while it is read."""
    with open_regular(path, max_bytes, limit=limit) as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise Refused(path, TOO_LARGE, f"grew past {limit} ({max_bytes:,}) while read")
    return data


def read_head(path: Path, max_bytes: int) -> bytes:
    """At most the first ``max_bytes`` of a regular file, whatever its size (``Refused`` for one that is not)."""
    with open_regular(path) as fh:
        return fh.read(max_bytes)


def prefix_hash(path: Path, offset: int) -> str:
    """A hash of the bytes before ``offset``: the first 4 KiB and the 64 KiB just before it."""
    h = hashlib.sha256()
    if offset <= 0:
        return h.hexdigest()
    with open_regular(path) as fh:
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


def read_lines(
    path: Path,
    offset: int,
    inode: int | None,
    expected_hash: str | None,
    *,
    budget: int,
    max_line: int,
) -> ReadResult:
    with open_regular(path) as fh:
        st = os.fstat(fh.fileno())
        return _read_open(fh, st, path, offset, inode, expected_hash, budget=budget, max_line=max_line)


def _read_open(fh: BinaryIO, st: os.stat_result, path: Path, offset: int, inode: int | None,
               expected_hash: str | None, *, budget: int, max_line: int) -> ReadResult:
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
