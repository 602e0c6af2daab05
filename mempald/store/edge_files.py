"""A Qdrant Edge shard's files read without Qdrant: what the store process checks before it opens a shard,
what ``mempald doctor`` counts, and what ``mempald repair`` salvages when the shard's own bookkeeping is damaged
(a truncated id tracker, a damaged ``segment.json``) while the drawers' payload pages are intact.

Per segment folder (``segments/<uuid>/``):

- ``payload_storage/``: Qdrant's "gridstore". Pages (``page_N.dat``) of 128-byte blocks; each value starts on
  a block and is LZ4-compressed, its decompressed size first (4 bytes, little-endian). Where each point's value
  lies is in ``tracker.dat`` (a count, then 16 bytes per point offset: is-set, page, block, length) and, for
  changes not yet folded into it, ``tracker_journal.dat`` (its byte length and a checksum, then 20 bytes per
  change: point offset, is-set, page, block, length; a later entry wins). A deleted point's pointer is unset.
- ``mutable_id_tracker.mappings``: the point ids, one entry per change: its kind (1 a number set, 2 a UUID set,
  3 a number deleted, 4 a UUID deleted), the id (8 or 16 bytes), and for a set the point offset (4 bytes).
  Qdrant stops reading it at a truncated entry (so a truncated file silently hides every later point).
- ``vector_storage-dense/vectors/``: the dense vectors, ``chunk_N.mmap`` of ``chunk_size_vectors`` vectors
  of ``dim`` float32 each (``config.json``), by point offset.

A drawer's id is also derived from its payload (the caller's ``id_of``: mempald's drawer ids are made from
payload fields), so a drawer whose id is lost with the id tracker is still found. The formats were read from
Qdrant Edge 0.9's files (the version pinned in ``pyproject.toml``); what does not parse is counted, never
guessed.
"""

from __future__ import annotations

import json
import math
import struct
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

UNIT_TOLERANCE = 1e-3  # a cosine store keeps its vectors normalized: |norm - 1| beyond this is damage

BLOCK = 128
_MAX_VALUE = 64 << 20  # a payload larger than this is not one mempald wrote: a damaged pointer
SET = 1
NUM_SET, UUID_SET, NUM_DELETED, UUID_DELETED = 1, 2, 3, 4
ENTRY = {NUM_SET: 13, UUID_SET: 21, NUM_DELETED: 9, UUID_DELETED: 17}  # bytes of an id tracker entry, by kind


class Lz4Error(ValueError):
    pass


def lz4_block(data: bytes, size: int) -> bytes:
    """Decode one LZ4 block up to ``size`` bytes of output (what follows the block in its page is ignored).
    (No LZ4 binding is among the dependencies, and a salvage needs to stop at the declared size.)"""
    out = bytearray()
    i, n = 0, len(data)
    while len(out) < size:
        if i >= n:
            raise Lz4Error("the block ends early")
        token = data[i]
        i += 1
        lit = token >> 4
        if lit == 15:
            while True:
                if i >= n:
                    raise Lz4Error("the block ends early")
                b = data[i]
                i += 1
                lit += b
                if b != 255:
                    break
        out += data[i : i + lit]
        i += lit
        if len(out) >= size:
            break
        if i + 2 > n:
            raise Lz4Error("the block ends early")
        back = data[i] | (data[i + 1] << 8)
        i += 2
        if back == 0 or back > len(out):
            raise Lz4Error("a match points before the start")
        mlen = (token & 15) + 4
        if mlen == 19:
            while True:
                if i >= n:
                    raise Lz4Error("the block ends early")
                b = data[i]
                i += 1
                mlen += b
                if b != 255:
                    break
        start = len(out) - back
        if back >= mlen:
            out += out[start : start + mlen]
        else:  # an overlapping match repeats the last ``back`` bytes
            while mlen > 0:
                piece = out[start : start + min(back, mlen)]
                out += piece
                mlen -= len(piece)
    if len(out) != size:
        raise Lz4Error(f"decoded {len(out)} bytes, expected {size}")
    return bytes(out)


def payload_pointers(storage: Path) -> dict[int, tuple[int, int, int]]:
    """Point offset -> (page, block, length) of its current payload, from the tracker and its journal."""
    out: dict[int, tuple[int, int, int]] = {}
    try:
        tracker = (storage / "tracker.dat").read_bytes()
    except OSError:
        tracker = b""
    if len(tracker) >= 4:
        count = struct.unpack_from("<I", tracker, 0)[0]
        for offset in range(min(count, (len(tracker) - 4) // 16)):
            is_set, page, block, length = struct.unpack_from("<IIII", tracker, 4 + 16 * offset)
            if is_set == SET:
                out[offset] = (page, block, length)
    try:
        journal = (storage / "tracker_journal.dat").read_bytes()
    except OSError:
        journal = b""
    if len(journal) >= 8:
        size = min(struct.unpack_from("<I", journal, 0)[0], len(journal) - 8)
        for k in range(size // 20):
            offset, is_set, page, block, length = struct.unpack_from("<IIIII", journal, 8 + 20 * k)
            if is_set == SET:
                out[offset] = (page, block, length)
            else:
                out.pop(offset, None)
    return out


def read_payload(storage: Path, pointer: tuple[int, int, int], pages: dict[int, bytes]) -> dict[str, Any]:
    """The payload at ``pointer`` (raises ``ValueError`` when it does not decode to a JSON object)."""
    page, block, length = pointer
    if page not in pages:
        pages[page] = (storage / f"page_{page}.dat").read_bytes()
    raw = pages[page][block * BLOCK : block * BLOCK + length]
    if len(raw) < 4:
        raise ValueError("the pointer is past the page's end")
    size = struct.unpack_from("<I", raw, 0)[0]
    if not 0 < size <= _MAX_VALUE:
        raise ValueError(f"an impossible value size {size}")
    value = json.loads(lz4_block(raw[4:], size))
    if not isinstance(value, dict):
        raise ValueError("not a payload")  # noqa: TRY004 (damaged bytes: the caller counts every ValueError)
    return value


def id_mappings(segment: Path) -> tuple[dict[int, str], bool]:
    """Point offset -> id from the mutable id tracker, and whether the file read to its end cleanly."""
    try:
        data = (segment / "mutable_id_tracker.mappings").read_bytes()
    except OSError:
        return {}, False
    out: dict[int, str] = {}
    at = 0
    while at < len(data):
        kind = data[at]
        size = ENTRY.get(kind)
        if size is None or at + size > len(data):
            return out, False
        if kind in (UUID_SET, UUID_DELETED):
            pid = str(uuid.UUID(bytes=data[at + 1 : at + 17]))
        else:
            pid = str(struct.unpack_from("<Q", data, at + 1)[0])
        if kind in (UUID_SET, NUM_SET):
            out[struct.unpack_from("<I", data, at + size - 4)[0]] = pid
        else:
            out = {o: p for o, p in out.items() if p != pid}
        at += size
    return out, True


class DenseReader:
    """Dense vectors of one segment by point offset (``None`` when missing or damaged: re-embedded later)."""

    def __init__(self, segment: Path) -> None:
        folder = segment / "vector_storage-dense" / "vectors"
        try:
            cfg = json.loads((folder / "config.json").read_text())
            self.dim = int(cfg["dim"])
            self.per_chunk = int(cfg["chunk_size_vectors"])
        except (OSError, ValueError, KeyError, TypeError):
            self.dim = 0
            self.per_chunk = 0
        self.folder = folder
        self._chunks: dict[int, bytes] = {}

    def get(self, offset: int) -> list[float] | None:
        if not self.dim or not self.per_chunk:
            return None
        chunk, at = divmod(offset, self.per_chunk)
        if chunk not in self._chunks:
            try:
                self._chunks[chunk] = (self.folder / f"chunk_{chunk}.mmap").read_bytes()
            except OSError:
                self._chunks[chunk] = b""
        raw = self._chunks[chunk][at * self.dim * 4 : (at + 1) * self.dim * 4]
        if len(raw) != self.dim * 4:
            return None
        vec = list(struct.unpack(f"<{self.dim}f", raw))
        return vec if unit_vector(vec) else None


def unit_vector(vec: list[float]) -> bool:
    """Finite and of unit length, as a cosine store keeps every dense vector (all zeros: never written)."""
    total = 0.0
    for x in vec:
        if not math.isfinite(x):
            return False
        total += x * x
    return abs(math.sqrt(total) - 1.0) <= UNIT_TOLERANCE


@dataclass
class RawPoint:
    id: str
    payload: dict[str, Any]
    dense: list[float] | None


@dataclass
class RawRead:
    points: dict[str, RawPoint] = field(default_factory=dict)
    values: int = 0  # payload pointers found
    unreadable: int = 0  # pointers whose payload did not decode
    unnamed: int = 0  # payloads whose id is neither in the id tracker nor derivable from the payload
    tracker_damaged: list[str] = field(default_factory=list)  # segments whose id tracker does not read whole


def _mutable(segment: Path) -> bool:
    """A segment with a mutable id tracker (built segments keep theirs otherwise: not read here)."""
    return (segment / "mutable_id_tracker.versions").exists() or (segment / "mutable_id_tracker.mappings").exists()


def segments(shard_dir: Path) -> Iterator[Path]:
    folder = shard_dir / "segments"
    if folder.is_dir():
        yield from sorted(p for p in folder.iterdir() if (p / "payload_storage").is_dir())


def read_raw(shard_dir: Path, id_of: Callable[[dict[str, Any]], str | None]) -> RawRead:
    """Every payload the shard's pages still hold, by point id (``id_of`` the payload, else the id tracker's);
    never raises on damaged files."""
    res = RawRead()
    # a point in two segments: the appendable (mutable) segment's copy is the newer one, so it is read last
    for seg in sorted(segments(shard_dir), key=_mutable):
        storage = seg / "payload_storage"
        pointers = payload_pointers(storage)
        mapped, whole = id_mappings(seg)
        if _mutable(seg) and (not whole or len(mapped) < len(pointers)):
            res.tracker_damaged.append(seg.name)
        dense = DenseReader(seg)
        pages: dict[int, bytes] = {}
        for offset, pointer in sorted(pointers.items()):
            res.values += 1
            try:
                payload = read_payload(storage, pointer, pages)
            except (OSError, ValueError):
                res.unreadable += 1
                continue
            pid = id_of(payload) or mapped.get(offset)
            if pid is None:
                res.unnamed += 1
                continue
            res.points[pid] = RawPoint(pid, payload, dense.get(offset))
    return res


def tracker_problems(shard_dir: Path) -> list[str]:
    """Segments whose id tracker names fewer points than their payload pages hold (cheap: no payload read)."""
    out = []
    for seg in segments(shard_dir):
        pointers = payload_pointers(seg / "payload_storage")
        mapped, whole = id_mappings(seg)
        if _mutable(seg) and (not whole or len(mapped) < len(pointers)):
            out.append(f"segment {seg.name}: its id tracker names {len(mapped)} points, its payload pages hold "
                       f"{len(pointers)}")
    return out
