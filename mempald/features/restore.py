"""``mempald restore PATH``: a backup (``mempald.features.backup``) brought back into an empty data dir, without a
daemon (it takes the data dir's instance lock: a daemon running there is refused).

In order: every file of the backup is checked against its manifest (size, SHA-256), and the backup is refused
if the manifest is empty or implausible (no state database, no store, entries without size and hash), if the
folder holds a file the manifest does not list, or any symbolic link or special file; config files are put back
where none exists (one that exists is kept, the backup's written beside it as ``NAME.from-backup``); the data
dir must hold no store and no state database; the store and the state database are copied beside their place
and renamed into it (a crash leaves no half-restored palace under the real names); the state database must
pass SQLite's integrity check and the store must open with as many drawers as the backup recorded. The
transcript archive (``archive/``, checked with the rest against the manifest) is copied back last.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mempald.archive import copy as archive_copy
from mempald.config import Settings, config_dir, data_dir, load_settings
from mempald.errors import Busy, InvalidInput, MempalError
from mempald.features.backup import STATE_FILE, check_room, data_dir_contents, read_manifest
from mempald.features.export import owner_dir
from mempald.store.base import Filters


class RestoreFailed(MempalError):
    """The restored copy does not check out (it is removed; the data dir is left as it was)."""


def _copy_config(src: Path) -> dict[str, str]:
    """Put the backup's config files back where none exists; returns what became of each."""
    out: dict[str, str] = {}
    folder = src / "config"
    if not folder.is_dir():
        return out
    dest = config_dir()
    owner_dir(dest)
    for f in sorted(folder.iterdir()):
        target = dest / f.name
        if not f.is_file() or f.is_symlink():  # (read_manifest refused these; never follow one)
            raise InvalidInput(f"{f} is not a regular file: a backup's config holds only files")
        if not target.exists():
            shutil.copyfile(f, target, follow_symlinks=False)
            os.chmod(target, 0o600)
            out[f.name] = "restored"
        elif filecmp.cmp(f, target, shallow=False):
            out[f.name] = "already there"
        else:
            beside = target.with_name(f.name + ".from-backup")
            shutil.copyfile(f, beside)
            os.chmod(beside, 0o600)
            out[f.name] = f"kept yours; the backup's is {beside}"
    return out


def sparse_copy(src: str, dst: str) -> str:
    """Copy a file leaving its zero blocks as holes: the store's preallocated files (mostly zeros, sparse in a
    live store, written out whole in a backup) take their real size again."""
    block = 1 << 16
    zero = bytes(block)
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        while chunk := fin.read(block):
            if chunk == zero[: len(chunk)]:
                fout.seek(len(chunk), os.SEEK_CUR)
            else:
                fout.write(chunk)
        fout.truncate()
    shutil.copystat(src, dst)
    return dst


def _integrity(path: Path) -> str:
    conn = sqlite3.connect(str(path))
    try:
        row = conn.execute("PRAGMA integrity_check").fetchone()
    finally:
        conn.close()
    return str(row[0]) if row else "no answer"


def _check_empty() -> Settings:
    settings = load_settings()
    if settings.store.url:
        raise InvalidInput(f"the config names a Qdrant server (store.url = {settings.store.url}): a backup "
                           "restores an embedded store; unset store.url first")
    there = data_dir_contents(settings)
    if there:
        raise InvalidInput(f"{data_dir()} is not empty ({', '.join(there)}): restore into an empty data dir "
                           "(move these away, or point MEMPAL_DATA_DIR at a new folder)")
    return settings


def restore(src: Path, progress: Callable[[str], None] = lambda _m: None) -> dict[str, Any]:
    """Restore the backup at ``src`` into this data dir (module docstring). Blocking."""
    from mempald.lock import instance_lock

    src = src.expanduser().resolve()
    if not src.is_dir():
        raise InvalidInput(f"{src} is not a backup folder")
    lock = instance_lock(data_dir())
    if not lock.acquire():
        raise Busy(f"a daemon (pid {lock.holder()}) runs on {data_dir()}: stop it first; a restore goes into an "
                   "empty data dir")
    try:
        _check_empty()  # before the long check of the backup
        progress(f"checking every file of {src} against its manifest")
        manifest = read_manifest(src)
        config = _copy_config(src)
        settings = _check_empty()  # (the restored config may name another store folder)
        store = settings.store_path()
        state = data_dir() / STATE_FILE
        sizes = sum(int(f["size"]) for f in manifest["files"].values())
        check_room(store.parent if not store.exists() else store, sizes, "restore")
        owner_dir(data_dir())
        owner_dir(store.parent)
        tmp_store = store.with_name(f".{store.name}.restoring-{os.getpid()}")
        tmp_state = state.with_name(f".{STATE_FILE}.restoring-{os.getpid()}")
        try:
            progress("copying the store")
            shutil.rmtree(tmp_store, ignore_errors=True)
            shutil.copytree(src / "store", tmp_store, copy_function=sparse_copy)
            shutil.copyfile(src / STATE_FILE, tmp_state)
            os.chmod(tmp_state, 0o600)
            verdict = _integrity(tmp_state)
            if verdict != "ok":
                raise RestoreFailed(f"the backup's state database fails SQLite's integrity check: {verdict}")
            progress("opening the restored store")
            drawers = _count(tmp_store, int(manifest.get("dim") or 0))
            if drawers != manifest["drawers"]:
                raise RestoreFailed(f"the restored store holds {drawers} drawers, the backup recorded "
                                    f"{manifest['drawers']}")
        except BaseException:
            shutil.rmtree(tmp_store, ignore_errors=True)
            tmp_state.unlink(missing_ok=True)
            raise
        if store.exists():
            store.rmdir()  # empty (checked above)
        os.rename(tmp_store, store)
        os.rename(tmp_state, state)
        archived = archive_copy.restore_from(src, data_dir())  # (the transcript archive, when the backup has one)
    finally:
        lock.release()
    return {"path": str(src), "data_dir": str(data_dir()), "store": str(store), "drawers": drawers,
            "created_at": manifest.get("created_at"), "config": config, "model": manifest.get("model"),
            "archive_chunks": archived}


def _count(store: Path, dim: int) -> int:
    from mempald.embed.embedder import DEFAULT_DIM
    from mempald.store.edge import EdgeStore

    opened = EdgeStore(store, dim or DEFAULT_DIM)
    try:
        return opened.count(Filters(include_deleted=True))
    finally:
        opened.close()
