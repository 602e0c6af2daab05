"""The archive in a backup: copied whole into ``<backup>/archive`` (``mempal backup``) and back into an empty data
dir (``mempald restore``). Blocking. While it is copied, archiving waits (the index's lock is held): the copied
index names exactly the chunks copied beside it, each checked against its checksum on the way."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

from mempald.archive.chunks import DIR_MODE, FILE_MODE, ensure_dir
from mempald.archive.keeper import Archive

FOLDER = "archive"
INDEX = "index.sqlite3"


def stored_bytes(archive: Archive) -> int:
    """What a copy of the archive takes (its chunks and its index)."""
    if not archive.exists():
        return 0
    return archive.index.totals()[4] + (archive.folder / INDEX).stat().st_size


def copy_to(archive: Archive, target: Path) -> dict[str, int]:
    """Copy the archive into ``target / "archive"``: {files, bytes} (nothing when there is no archive)."""
    if not archive.exists():
        return {"files": 0, "bytes": 0}
    index = archive.index
    dst = target / FOLDER
    ensure_dir(dst)
    copied = 0
    with index.lock:
        out = sqlite3.connect(str(dst / INDEX))
        try:
            index.conn.backup(out)
        finally:
            out.close()
        os.chmod(dst / INDEX, FILE_MODE)
        chunks = index.all_chunks()
        for c in chunks:
            ensure_dir((dst / c.file).parent)
            shutil.copyfile(archive.folder / c.file, dst / c.file)
            os.chmod(dst / c.file, FILE_MODE)
            copied += c.stored
    return {"files": len(chunks) + 1, "bytes": copied + (dst / INDEX).stat().st_size}


def restore_from(src: Path, data: Path) -> int:
    """Copy a backup's archive (``src / "archive"``) into the data dir ``data``; the chunks copied (0: none)."""
    folder = src / FOLDER
    if not folder.is_dir():
        return 0
    dst = data / FOLDER
    shutil.copytree(folder, dst)
    n = 0
    for p in [dst, *dst.rglob("*")]:
        os.chmod(p, DIR_MODE if p.is_dir() else FILE_MODE)
        n += p.suffix == ".zst"
    return n
