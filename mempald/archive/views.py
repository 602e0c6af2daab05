"""What the archive holds, for ``mempal archive status`` / ``list`` and ``status``; removing what is forgotten;
checking every chunk (``doctor``). Blocking: the daemon calls these in a worker thread."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mempald.archive.chunks import ArchiveDamaged, read_chunk
from mempald.archive.keeper import Archive
from mempald.normalize.wings import normal_wing


def disk_bytes(archive: Archive, chunks: int) -> int:
    """Bytes the archive takes on disk: its chunks (``chunks``, from the index: no walk of the folder) and its
    index database."""
    names = ("index.sqlite3", "index.sqlite3-wal", "index.sqlite3-shm")
    return chunks + sum(os.stat(archive.folder / n).st_size for n in names if (archive.folder / n).exists())


def status(archive: Archive) -> dict[str, Any]:
    """Sessions, files, versions, the bytes archived and on disk, the ratio, and whether archiving is paused."""
    cfg = archive.settings.current.archive
    out: dict[str, Any] = {"enabled": cfg.enabled, "folder": str(archive.folder), "sessions": 0, "files": 0,
                           "versions": 0, "bytes": 0, "bytes_on_disk": 0, "ratio": 0.0,
                           "paused": bool(archive.paused), "paused_reason": archive.paused,
                           "reads_not_archived": archive.skipped}
    if not archive.exists():
        return out
    sessions, files, versions, raw, stored = archive.index.totals()
    on_disk = disk_bytes(archive, stored)
    out.update(sessions=sessions, files=files, versions=versions, bytes=raw, bytes_on_disk=on_disk,
               compressed_bytes=stored, ratio=round(raw / stored, 2) if stored else 0.0)
    return out


def listing(archive: Archive, *, wing: str = "", deleted_upstream: bool = False) -> dict[str, Any]:
    """The archived sessions (newest first), each with its files; ``deleted_upstream``: only those whose original
    transcript is gone from the agent's store."""
    if not archive.exists():
        return {"sessions": [], "count": 0}
    where, params = ("WHERE wing = ?", [normal_wing(wing)]) if wing else ("", [])
    sessions: dict[str, dict[str, Any]] = {}
    for u in archive.index.units(where, params):
        s = sessions.setdefault(u.session, {"session": u.session, "wing": u.wing, "format": u.format, "files": [],
                                            "bytes": 0, "first_at": u.first_at, "updated_at": u.updated_at,
                                            "deleted_upstream": True})
        present = os.path.exists(u.path)
        s["files"].append({"path": u.path, "bytes": u.size, "version": u.version, "present": present})
        s["bytes"] += u.size
        s["first_at"] = min(s["first_at"], u.first_at)
        s["updated_at"] = max(s["updated_at"], u.updated_at)
        s["deleted_upstream"] = s["deleted_upstream"] and not present
    out = sorted(sessions.values(), key=lambda s: -float(s["updated_at"]))
    if deleted_upstream:
        out = [s for s in out if s["deleted_upstream"]]
    return {"sessions": out, "count": len(out)}


def remove(archive: Archive, *, paths: Iterable[str] = (), sessions: Iterable[str] = (),
           wings: Iterable[str] = ()) -> dict[str, int]:
    """Remove every version of the named files, sessions or wings from the archive: {files, bytes}."""
    if not archive.exists():
        return {"files": 0, "bytes": 0}
    index = archive.index
    keys: set[str] = set(p for p in paths if index.unit(p) is not None)
    for s in sessions:
        keys |= {u.path for u in index.units("WHERE session = ?", [s])}
    for w in wings:
        keys |= {u.path for u in index.units("WHERE wing = ?", [normal_wing(w)])}
    removed = 0
    files: list[Path] = []
    for key in sorted(keys):
        chunks = index.chunks(key)
        removed += sum(c.length for c in chunks)
        files += [archive.folder / c.file for c in chunks]
        with index.transaction() as conn:
            conn.execute("DELETE FROM chunks WHERE path = ?", (key,))
            conn.execute("DELETE FROM units WHERE path = ?", (key,))
    for f in files:
        f.unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # (its folder, once empty)
            f.parent.rmdir()
    return {"files": len(keys), "bytes": removed}


def damaged(archive: Archive) -> list[dict[str, str]]:
    """Every chunk that is missing, does not decompress or does not match its checksum, named."""
    if not archive.exists():
        return []
    out = []
    for c in archive.index.all_chunks():
        try:
            read_chunk(archive.folder / c.file, c.sha256, c.length)
        except ArchiveDamaged as exc:
            session = next((u.session for u in archive.index.units("WHERE path = ?", [c.path])), "")
            out.append({"chunk": str(archive.folder / c.file), "path": c.path, "session": session,
                        "version": str(c.version), "error": exc.message})
    return out
