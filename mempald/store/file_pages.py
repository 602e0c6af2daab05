"""Handing the pages of the store's written files back to the kernel (Linux), in the store's own processes.

Qdrant Edge writes its WAL and its unbuilt segment (vectors, payload pages, field-index pages) through shared
file mappings. Every page written stays mapped in the process that wrote it, so a backfill grew the store
process's RSS by the size of what it wrote (measured during a 1 GB Cursor backfill: +215 MB for the store
process, about 150 MB of it these files; the build process mapped its copy's WAL and indexes again). None of it
is read back on the write path: the WAL only when a shard is opened, the unbuilt segment's pages when a search
or the next build reads them, through the page cache like a built shard's.

``WrittenPages`` keeps those mappings under ``BUDGET`` bytes resident: at most once a second, after a write, it
sums their resident size (``/proc/self/smaps``) and, above the budget, asks the kernel to reclaim them
(``madvise(MADV_PAGEOUT)``, Linux 5.4). That only unmaps and frees pages: a dirty page is written back first
by the kernel, a page read again is read from the page cache or the file, so nothing a write made is lost or
changed. Only shared file mappings under the shard are touched (a private mapping's changes would be dropped);
a built segment's mappings, which searches read, are left alone. Elsewhere (macOS, an older kernel) it does
nothing.
"""

from __future__ import annotations

import ctypes
import errno
import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

BUDGET = 32 << 20  # resident bytes of the written mappings allowed before they are handed back
EVERY_S = 1.0  # checked at most this often, after a write
MADV_PAGEOUT = 21
_UNBUILT_STORAGE = frozenset({"ChunkedMmap", "InRamChunkedMmap", "Memory"})


def _libc_madvise() -> Callable[[int, int, int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    fn.restype = ctypes.c_int
    madvise: Callable[[int, int, int], int] = fn
    return madvise


def unbuilt(segment_dir: Path) -> bool:
    """Whether the segment in ``segment_dir`` is one Qdrant still appends to (plain index, chunked vectors),
    read from its ``segment.json``; False when that cannot be read (left alone)."""
    try:
        config = json.loads((segment_dir / "segment.json").read_text())["config"]
        vectors = config.get("vector_data") or {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False
    if not isinstance(vectors, dict) or not vectors:
        return False
    return any(isinstance(v, dict) and (v.get("storage_type") in _UNBUILT_STORAGE
                                        or (v.get("index") or {}).get("type") == "plain")
               for v in vectors.values())


class WrittenPages:
    """The resident pages of one shard's written files (WAL, unbuilt segments), kept under ``budget``."""

    def __init__(self, shard_dir: Path, budget: int = BUDGET, every_s: float = EVERY_S, pid: int = 0) -> None:
        self.root = str(shard_dir.resolve()) + "/"
        self.smaps = f"/proc/{pid or 'self'}/smaps"  # another process's: read only (``resident``), as tests do
        self.budget = budget
        self.every_s = every_s
        self.released = 0  # how many releases handed pages back
        self._madvise = _libc_madvise()
        self._last = 0.0
        self._unbuilt: dict[str, bool] = {}  # segment dir name -> unbuilt (a segment's config never changes)

    @property
    def enabled(self) -> bool:
        return self._madvise is not None

    def _written(self, path: str) -> bool:
        rest = path[len(self.root):]
        if rest.startswith("wal/"):
            return True
        head, _, tail = rest.partition("/")
        if head != "segments" or not tail:
            return False
        segment = tail.split("/", 1)[0]
        if segment not in self._unbuilt:
            self._unbuilt[segment] = unbuilt(Path(self.root) / "segments" / segment)
        return self._unbuilt[segment]

    def _mappings(self, everything: bool) -> Iterator[tuple[int, int, int]]:
        """(start, end, resident bytes) of the shared file mappings under the shard: the written ones, or all."""
        start = end = 0
        ours = False
        with open(self.smaps, encoding="utf-8", errors="replace") as smaps:
            for line in smaps:
                head = line.split(None, 5)
                if len(head) >= 5 and "-" in head[0] and ":" not in head[0]:
                    path = head[5].rstrip("\n") if len(head) > 5 else ""
                    ours = (len(head[1]) == 4 and head[1][3] == "s" and path.startswith(self.root)
                            and (everything or self._written(path)))
                    if ours:
                        lo, _, hi = head[0].partition("-")
                        start, end = int(lo, 16), int(hi, 16)
                elif ours and head and head[0] == "Rss:":
                    yield start, end, int(head[1]) * 1024
                    ours = False

    def resident(self, everything: bool = False) -> int:
        if not self.enabled:
            return 0
        try:
            return sum(rss for _, _, rss in self._mappings(everything))
        except OSError:
            return 0

    def release(self, everything: bool = False) -> int:
        """Hand the pages of the written mappings (``everything``: all of the shard's) back to the kernel; the
        bytes that were resident. Never raises: an error leaves the pages where they are."""
        fn = self._madvise
        if fn is None or not self.smaps.startswith("/proc/self/"):
            return 0
        freed = 0
        try:
            spans = [(lo, hi, rss) for lo, hi, rss in self._mappings(everything) if rss]
        except OSError:
            return 0
        for lo, hi, rss in spans:
            if fn(lo, hi - lo, MADV_PAGEOUT) == 0:
                freed += rss
            elif ctypes.get_errno() == errno.EINVAL:  # a kernel older than 5.4: nothing to be done here
                self._madvise = None
                break
        if freed:
            self.released += 1
        return freed

    def after_write(self) -> None:
        """Called after each write: at most once every ``every_s``, hand the written pages back if they hold
        more than the budget."""
        now = time.monotonic()
        if self._madvise is None or now - self._last < self.every_s:
            return
        self._last = now
        if self.resident() > self.budget:
            self.release()
