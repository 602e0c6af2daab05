"""``mempal backup PATH``: a consistent snapshot of the store, the state database and the config, taken by the
running daemon while it ingests; ``mempald restore PATH`` brings it back into an empty data dir.

Consistency. The copy is made on the store's worker thread with nothing in between (``StoreGateway.exclusive``:
ingest writes wait, as they do for step 1 of an index rebuild): first the state database (SQLite's online
backup API, under the state's lock), then the store (the store process flushes and copies its live shard:
``snapshot_to``, the call index rebuilds use: the ``Snapshots`` capability a backend declares; a Qdrant server
has none and a backup answers ``StoreLacks``). A file's cursor advances only after its drawers' upsert returned,
and no upsert can land between the two copies, so every cursor in the backup is covered by the store in the
backup; at most the last exchanges before a cursor that moved meanwhile are read again after a restore, under
the same drawer ids (replays overwrite: nothing is duplicated, nothing lost). Drawers still waiting for their
dense vector get it when the restored daemon starts (it queues every drawer without one).

The backup folder: ``store/`` (``CURRENT``, the shard, ``mempal-meta.json``), ``state.sqlite3``, ``config/``
(config.toml, the identity file, the taxonomy, where they exist), ``archive/`` (the transcript archive, copied with
its index: ``mempald.archive.copy``) and ``MANIFEST.json``, written last, with
every file's size and SHA-256 (a folder without it is an interrupted backup; ``restore`` refuses it).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import stat
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio.to_thread

from mempald import __version__
from mempald.archive import copy as archive_copy
from mempald.archive.keeper import Archive
from mempald.config import Settings, SettingsRef, config_path, data_dir
from mempald.errors import InvalidInput, LimitExceeded
from mempald.features.export import check_target, owner_dir
from mempald.features.taxonomy import taxonomy_path
from mempald.state.db import State
from mempald.store.base import SNAPSHOTS, Filters, Snapshots, Store
from mempald.store.edge import META_FILE, current_shard, set_current_shard
from mempald.store.gateway import StoreGateway

MANIFEST = "MANIFEST.json"
BACKUP_VERSION = 1
STATE_FILE = "state.sqlite3"
MB = 1024 * 1024
MARGIN = 1.05  # free space needed beyond what is copied


def config_files(settings: Settings) -> list[Path]:
    return [config_path(), settings.identity_path(), taxonomy_path()]


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.is_dir() else 0


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(MB), b""):
            h.update(block)
    return h.hexdigest()


def free_at(path: Path) -> int:
    """Free bytes on the disk that holds ``path`` (or would: its nearest existing folder)."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return shutil.disk_usage(probe).free


def check_room(target: Path, needed: int, what: str) -> None:
    free = free_at(target)
    if free < needed * MARGIN:
        raise LimitExceeded(f"{target}: too small for the {what}: it needs about {needed * MARGIN / MB:.1f} MB and "
                            f"{free / MB:.1f} MB are free there", {"needed": int(needed * MARGIN), "free": free})


def _empty_target(target: Path) -> None:
    if target.exists():
        if not target.is_dir():
            raise InvalidInput(f"{target} is a file: a backup is a folder (name a new or empty one)")
        if any(target.iterdir()):
            raise InvalidInput(f"{target} is not empty: a backup goes into a new or empty folder")


class Backup:
    """The daemon's half: ``backup`` while it runs."""

    def __init__(self, settings: SettingsRef, store: StoreGateway, state: State, backend: Store,
                 archive: Archive | None = None) -> None:
        self.archive = archive  # the transcript archive (mempald.archive): copied into the backup's archive/
        self.settings = settings
        self.store = store
        self.state = state
        self.backend = backend  # the store's backend, under the wrappers the gateway calls through (its capabilities)

    async def backup(self, raw: str) -> dict[str, Any]:
        settings = self.settings.current
        snapshots = SNAPSHOTS.required(self.backend)  # (a Qdrant server: back it up with Qdrant's own snapshots)
        store_path = settings.store_path()
        target = check_target(raw, protected=(store_path,))
        await anyio.to_thread.run_sync(_empty_target, target)
        state_files = (self.state.path, self.state.path.with_name(STATE_FILE + "-wal"))  # (their sizes: no query)
        needed = await anyio.to_thread.run_sync(lambda: _size(store_path / current_shard(store_path)) + sum(
            _size(p) for p in (*state_files, *config_files(settings))) + (
                archive_copy.stored_bytes(self.archive) if self.archive is not None else 0))
        await anyio.to_thread.run_sync(check_room, target, needed, "backup")
        await anyio.to_thread.run_sync(owner_dir, target)
        t0 = time.monotonic()
        try:
            figures = await self.store.exclusive(lambda: self._snapshot(snapshots, store_path, target))
            held = time.monotonic() - t0
            copied = await anyio.to_thread.run_sync(self._config, settings, target)
            archived = ({"files": 0, "bytes": 0} if self.archive is None else
                        await anyio.to_thread.run_sync(archive_copy.copy_to, self.archive, target))
            manifest = await anyio.to_thread.run_sync(
                _write_manifest, target, {**figures, "config": copied, "created_at": datetime.now(UTC).isoformat(),
                                          "mempald": __version__, "backup": BACKUP_VERSION})
        except BaseException:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(lambda: shutil.rmtree(target, ignore_errors=True))
            raise
        return {"path": str(target), "drawers": figures["drawers"], "shard": figures["shard"],
                "files": len(manifest["files"]), "bytes": sum(f["size"] for f in manifest["files"].values()),
                "config": copied, "archive": archived, "store_held_s": round(held, 2),
                "seconds": round(time.monotonic() - t0, 2)}

    def _snapshot(self, snapshots: Snapshots, store_path: Path, target: Path) -> dict[str, Any]:
        """On the store's worker thread, nothing else in between: the state, then the store (module docstring)."""
        with self.state.lock:
            dst = sqlite3.connect(str(target / STATE_FILE))
            try:
                self.state.conn.backup(dst)
            finally:
                dst.close()
        os.chmod(target / STATE_FILE, 0o600)
        shard = current_shard(store_path)
        owner_dir(target / "store")
        snapshots.snapshot_to(target / "store" / shard)
        set_current_shard(target / "store", shard)
        meta = self.store.store.get_meta()
        (target / "store" / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True))
        drawers = self.store.store.count(Filters(include_deleted=True))
        return {"drawers": drawers, "live": self.store.store.count(Filters()), "shard": shard,
                "model": meta.get("model"), "dim": meta.get("dim")}

    @staticmethod
    def _config(settings: Settings, target: Path) -> list[str]:
        owner_dir(target / "config")
        copied = []
        for f in config_files(settings):
            if f.is_file():
                shutil.copyfile(f, target / "config" / f.name)
                os.chmod(target / "config" / f.name, 0o600)
                copied.append(f.name)
        return copied


def _files(root: Path) -> list[Path]:
    """Every file of the backup (``restore`` refuses one its manifest does not list)."""
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name != MANIFEST)


def _write_manifest(target: Path, info: dict[str, Any]) -> dict[str, Any]:
    files = {p.relative_to(target).as_posix(): {"size": p.stat().st_size, "sha256": _sha256(p)}
             for p in _files(target)}
    manifest = {**info, "files": files}
    tmp = target / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True))
    os.chmod(tmp, 0o600)
    os.replace(tmp, target / MANIFEST)
    return manifest


def _on_disk(src: Path) -> set[str]:
    """Every file in the backup folder (relative, POSIX), walked without following links; ``InvalidInput`` for a
    link or anything but folders and regular files (a restore must copy only what the backup wrote)."""
    found: set[str] = set()
    for folder, dirs, files in os.walk(src, followlinks=False):
        for name in [*dirs, *files]:
            path = Path(folder) / name
            mode = path.lstat().st_mode
            rel = path.relative_to(src).as_posix()
            if stat.S_ISLNK(mode):
                raise InvalidInput(f"{src}: {rel} is a symbolic link: a backup holds none (refused: a restore "
                                   "would copy what it points to)")
            if stat.S_ISREG(mode):
                found.add(rel)
            elif not stat.S_ISDIR(mode):
                raise InvalidInput(f"{src}: {rel} is not a regular file: a backup holds none")
    return found


def _plausible(src: Path, manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The manifest's file list, refused unless it looks like one ``backup`` writes: every entry a relative path
    inside the folder with its size and SHA-256, the state database and the store among them."""
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        raise InvalidInput(f"{src / MANIFEST} lists no files: not a backup `mempal backup` wrote")
    for rel, want in files.items():
        parts = rel.split("/") if isinstance(rel, str) else [""]
        if rel.startswith("/") or any(p in ("", ".", "..") for p in parts) or rel == MANIFEST:
            raise InvalidInput(f"{src / MANIFEST} names {rel!r}: not a file inside the backup")
        ok = (isinstance(want, dict) and isinstance(want.get("size"), int) and not isinstance(want["size"], bool)
              and want["size"] >= 0 and isinstance(want.get("sha256"), str) and len(want["sha256"]) == 64
              and all(c in "0123456789abcdef" for c in want["sha256"]))
        if not ok:
            raise InvalidInput(f"{src / MANIFEST}: the entry of {rel!r} has no size and SHA-256")
    if STATE_FILE not in files or not any(r.startswith("store/") for r in files):
        raise InvalidInput(f"{src / MANIFEST} lists no state database or no store: not a complete backup")
    drawers = manifest.get("drawers")
    if not isinstance(drawers, int) or isinstance(drawers, bool) or drawers < 0:
        raise InvalidInput(f"{src / MANIFEST} records no drawer count: not a backup `mempal backup` wrote")
    return files


def _read_json_nofollow(path: Path) -> Any:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as fh:
        return json.loads(fh.read())


def read_manifest(src: Path, progress: Callable[[str], None] = lambda _m: None) -> dict[str, Any]:
    """The backup's manifest, checked to be complete: it lists exactly the files in the folder (one it does not
    list, a link or a special file refuses the backup), each with the size and SHA-256 recorded; ``InvalidInput``
    if anything is off."""
    try:
        manifest = _read_json_nofollow(src / MANIFEST)
    except FileNotFoundError:
        raise InvalidInput(f"{src} is not a complete mempal backup (no {MANIFEST}: an interrupted backup, or "
                           "another folder)") from None
    except OSError as exc:
        raise InvalidInput(f"{src / MANIFEST} cannot be read as a file: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise InvalidInput(f"{src / MANIFEST} is damaged: {exc}") from None
    if not isinstance(manifest, dict):
        raise InvalidInput(f"{src / MANIFEST} is not a mempal backup manifest")
    if manifest.get("backup") != BACKUP_VERSION:
        raise InvalidInput(f"{src}: backup format {manifest.get('backup')!r}, this mempald reads {BACKUP_VERSION}")
    files = _plausible(src, manifest)
    there = _on_disk(src) - {MANIFEST}
    extra = sorted(there - set(files))
    if extra:
        raise InvalidInput(f"{src}: {len(extra)} file(s) the manifest does not list ({', '.join(extra[:3])}): "
                           "added or swapped after the backup was taken; refused")
    for rel, want in sorted(files.items()):
        path = src / rel
        progress(rel)
        if rel not in there:
            raise InvalidInput(f"{src}: {rel} is missing from the backup")
        if path.stat().st_size != want["size"] or _sha256(path) != want["sha256"]:
            raise InvalidInput(f"{src}: {rel} differs from what the backup recorded (damaged or changed)")
    if not (src / STATE_FILE).is_file() or not (src / "store").is_dir():
        raise InvalidInput(f"{src}: the backup holds no state database or no store")
    return manifest


def data_dir_contents(settings: Settings) -> list[str]:
    """What in the data dir would be overwritten by a restore (empty: it may be restored into)."""
    found = []
    store = settings.store_path()
    if store.is_dir() and any(store.iterdir()):
        found.append(str(store))
    for name in (STATE_FILE, STATE_FILE + "-wal"):
        if (data_dir() / name).exists():
            found.append(str(data_dir() / name))
    return found


__all__ = ["MANIFEST", "Backup", "check_room", "data_dir_contents", "read_manifest"]
