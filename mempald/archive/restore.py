"""``mempal restore-session``: a session's archived files written back where the agent looks for them.

Every file of the session (the transcript and its sub-agents' files) is rebuilt from its latest version's chunks,
each checked against its checksum, before anything is written: a damaged chunk refuses the whole session with a
message that names it, never a corrupt file. A file is written to its original path (or below ``to``, at its path
relative to the folder it was read from), through a temporary name, and read back: its sha256 must equal the
archived bytes'. An existing file with the same bytes is left as it is; a different one is never replaced
without ``force``. Blocking: the daemon calls it in a worker thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mempald.archive.chunks import ArchiveDamaged, read_chunk
from mempald.archive.index import UnitRow
from mempald.archive.keeper import Archive
from mempald.errors import InvalidInput, NotFound

MODE = 0o600


@dataclass(frozen=True, slots=True)
class Planned:
    unit: UnitRow
    target: Path
    data: bytes
    sha256: str
    state: str  # "write" | "same" (already there, byte-identical) | "replace" (differs: needs force)


def session_units(archive: Archive, ident: str) -> list[UnitRow]:
    """The archived files of a session: by its id (sub-agent files carry their parent's), or a file's stem."""
    if not archive.exists():
        return []
    units = archive.index.units("WHERE session = ?", [ident])
    if not units:
        units = [u for u in archive.index.units() if Path(u.path).stem == ident or u.path.endswith(f"-{ident}.jsonl")]
    return units


def rebuild(archive: Archive, unit: UnitRow) -> bytes:
    """The latest version of an archived file, every chunk checked; ``ArchiveDamaged`` names a bad one."""
    parts, pos = [], 0
    for c in archive.index.chunks(unit.path, unit.version):
        if c.start != pos:
            raise ArchiveDamaged(f"the archive of {unit.path} is damaged: bytes {pos}-{c.start} of version "
                                 f"{unit.version} are missing", {"path": unit.path})
        parts.append(read_chunk(archive.folder / c.file, c.sha256, c.length))
        pos += c.length
    if pos != unit.size:
        raise ArchiveDamaged(f"the archive of {unit.path} is damaged: {unit.size - pos} bytes of version "
                             f"{unit.version} are missing", {"path": unit.path})
    return b"".join(parts)


def _target(unit: UnitRow, to: str) -> Path:
    if not to:
        return Path(unit.path)
    base, path = Path(unit.root), Path(unit.path)
    rel = path.relative_to(base) if path.is_relative_to(base) else Path(path.name)
    return Path(to).expanduser() / rel


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def plan(archive: Archive, ident: str, to: str = "") -> list[Planned]:
    units = session_units(archive, ident)
    if not units:
        raise NotFound(f"no archived session {ident!r} (mempal archive list shows the archived sessions)")
    out = []
    for u in units:
        try:
            data = rebuild(archive, u)
        except ArchiveDamaged as exc:
            raise ArchiveDamaged(f"session {ident} is not restored: {exc.message}; nothing was written "
                                 "(mempal doctor lists the damaged chunks)", exc.data) from None
        target = _target(u, to)
        sha = _sha(data)
        state = "write"
        if target.exists():
            with contextlib.suppress(OSError):
                state = "same" if target.is_file() and _sha(target.read_bytes()) == sha else "replace"
        out.append(Planned(u, target, data, sha, state))
    return out


def _write(p: Planned) -> None:
    p.target.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.target.with_name(f".{p.target.name}.mempal-restore")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), MODE)
        with os.fdopen(fd, "wb") as fh:
            fh.write(p.data)
            fh.flush()
            os.fsync(fh.fileno())
        if _sha(tmp.read_bytes()) != p.sha256:
            raise OSError(f"{tmp}: the bytes written do not match the archive's (sha256): not restored")
        os.replace(tmp, p.target)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def restore_session(archive: Archive, ident: str, *, to: str = "", dry_run: bool = False,
                    force: bool = False) -> dict[str, Any]:
    planned = plan(archive, ident, to)
    conflicts = [str(p.target) for p in planned if p.state == "replace"]
    if conflicts and not force and not dry_run:
        raise InvalidInput(f"not restored: {len(conflicts)} file(s) exist with other bytes ({', '.join(conflicts)}); "
                           "give --force to replace them, or --to another folder", {"conflicts": conflicts})
    files = []
    for p in planned:
        done = p.state
        if not dry_run and p.state != "same":
            _write(p)
            done = "written" if p.state == "write" else "replaced"
        files.append({"path": str(p.target), "archived_path": p.unit.path, "bytes": len(p.data),
                      "sha256": p.sha256, "version": p.unit.version, "action": done})
    return {"session": ident, "dry_run": dry_run, "files": files, "conflicts": conflicts,
            "written": sum(1 for f in files if f["action"] in ("written", "replaced"))}
