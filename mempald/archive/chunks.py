"""Archive chunks on disk: bytes compressed with zstandard, checksummed, written 0600 and atomically (blocking)."""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

import zstandard

from mempald.errors import Unavailable

LEVEL = 9  # bench/archive.py: the ratio on the real fixtures, well under 5% of the backfill's CPU
FILE_MODE = 0o600
DIR_MODE = 0o700


class ArchiveDamaged(Unavailable):
    """An archived chunk does not decompress or does not match its checksum: the message names it."""


def digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def ensure_dir(path: Path) -> None:
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)


def write_chunk(path: Path, raw: bytes) -> int:
    """Compress ``raw`` into ``path`` (0600, written to a temporary name, synced, then renamed); its size on
    disk. On failure (a full disk) nothing is left behind and the error is raised."""
    data = zstandard.ZstdCompressor(level=LEVEL).compress(raw)
    ensure_dir(path.parent)
    tmp = path.with_name(path.name + ".tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), FILE_MODE)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return len(data)


def read_chunk(path: Path, sha256: str, length: int) -> bytes:
    """The bytes of a chunk, checked against its length and checksum (``ArchiveDamaged`` otherwise)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ArchiveDamaged(f"archive chunk {path} is missing", {"chunk": str(path)}) from None
    try:
        raw = zstandard.ZstdDecompressor().decompress(data, max_output_size=length)
    except zstandard.ZstdError as exc:
        raise ArchiveDamaged(f"archive chunk {path} is damaged: it does not decompress ({exc})",
                             {"chunk": str(path)}) from None
    if len(raw) != length or digest(raw) != sha256:
        raise ArchiveDamaged(f"archive chunk {path} is damaged: its bytes do not match their sha256 checksum",
                             {"chunk": str(path)})
    return raw
