"""``mempal sync init|join|status|leave`` and ``mempal machines``, and the loop that writes this machine's
segments and reads the others' while ``[sync] dir`` names a folder (docs/SYNC.md).

What is written: the drawers the writer stores (``stored``, called where drawers are upserted, after redaction),
tombstones of what is forgotten, deleted or purged (``removed``), the rules added, accepted, replaced or removed
here (``rule_changed``), and the knowledge graph's new facts (rule suggestions stay here: they cite local
drawers). The live store and the state database never go into the folder.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from mempald import logs
from mempald.config import ConfigError, SettingsRef, load_settings, read_raw, write_raw
from mempald.errors import InvalidInput
from mempald.state.gateway import StateGateway
from mempald.store.base import Filters
from mempald.store.gateway import StoreGateway
from mempald.sync import seal
from mempald.sync.exporter import Exporter
from mempald.sync.folder import SyncFolder
from mempald.sync.importer import Importer
from mempald.sync.journal import DRAWER, RULE, TOMB, UNRULE, Journal
from mempald.sync.report import machines_report, status_report

log = logs.get("sync")


class Sync:
    def __init__(self, settings: SettingsRef, store: StoreGateway, state: StateGateway, journal: Journal,
                 exporter: Exporter, importer: Importer, machine: str) -> None:
        self.settings = settings
        self.store = store
        self.state = state
        self.journal = journal
        self.exporter = exporter
        self.importer = importer
        self.machine = machine
        self.error = ""  # why the last round failed ("" when it did not)
        self._opened: tuple[str, bool, seal.Sealer | None] | None = None
        self.wake = anyio.Event()

    # what the rest of the daemon calls -------------------------------------------------------------------
    @property
    def on(self) -> bool:
        return bool(self.settings.current.sync.dir)

    async def stored(self, ids: Sequence[str]) -> None:
        """Drawers just written to the store (redacted): they go into the next segment."""
        if self.on and ids:
            await self.state.run(lambda: self.journal.queue(ids, DRAWER))
            self.wake.set()

    async def removed(self, ids: Sequence[str], op: str, detail: Mapping[str, Any]) -> None:
        """Drawers forgotten, deleted or purged here: their tombstones go into the next segment."""
        if self.on and ids:
            await self.state.run(lambda: self.journal.queue(ids, TOMB, {"op": op, **detail}))
            self.wake.set()

    async def rule_changed(self, rule_id: str, *, removed: bool, by: str) -> None:
        """A rule added, accepted, replaced or removed here: the next segment holds it as it is then. A removal is
        remembered here too, so the rule does not come back from a segment read again later."""
        if removed:
            await self.state.run(lambda: self.journal.bury([rule_id], UNRULE))
        if self.on:
            await self.state.run(lambda: self.journal.queue([rule_id], RULE, {"at": time.time(), "by": by}))
            self.wake.set()

    # the loop ------------------------------------------------------------------------------------------
    def folder(self) -> tuple[SyncFolder, seal.Sealer | None] | None:
        """The folder in use and its key, from the current settings (None: not syncing). Blocking."""
        cfg = self.settings.current.sync
        if not cfg.dir:
            return None
        root = Path(cfg.dir).expanduser()
        if self._opened is None or self._opened[:2] != (cfg.dir, cfg.encrypt):
            sealer = seal.Sealer(seal.read_key()) if cfg.encrypt else None
            self._opened = (cfg.dir, cfg.encrypt, sealer)
        return SyncFolder(root, self.machine), self._opened[2]

    async def round(self) -> bool:
        """One look: write what waits, read what is new. False when not syncing."""
        opened = await anyio.to_thread.run_sync(self.folder)
        if opened is None:
            return False
        folder, sealer = opened
        # (an unmounted share or a folder moved away: nothing is written where it used to be)
        await anyio.to_thread.run_sync(folder.manifest)
        wait = self.settings.current.sync.dense_wait_s
        while await self.exporter.flush(folder, sealer, wait):
            pass
        await self.importer.scan(folder, sealer)
        return True

    async def run(self) -> None:
        started = ""
        while True:
            try:
                opened = await anyio.to_thread.run_sync(self.folder)
                if opened is not None and started != str(opened[0].root):
                    await self.exporter.start(opened[0])
                    started = str(opened[0].root)
                await self.round()
                if self.error:
                    log.info("sync_recovered")
                self.error = ""
            except Exception as exc:  # a folder gone, a key missing: said in status, tried again
                if str(exc) != self.error:
                    log.warning("sync_failed", error=str(exc))
                self.error = str(exc) or type(exc).__name__
            with anyio.move_on_after(self.settings.current.sync.interval_s):
                await self.wake.wait()
            self.wake = anyio.Event()

    # the commands --------------------------------------------------------------------------------------
    async def init(self, raw_dir: str, encrypt: bool) -> dict[str, Any]:
        root = _absolute(raw_dir)

        def make() -> str:
            root.mkdir(parents=True, exist_ok=True)
            sealer = None
            key_at = ""
            if encrypt:
                key = seal.new_key()
                key_at = str(seal.write_key(key))
                sealer = seal.Sealer(key)
            SyncFolder(root, self.machine).create(sealer)
            return key_at
        key_at = await anyio.to_thread.run_sync(make)
        out = await self._join(root, encrypt)
        if key_at:
            out["key_file"] = key_at
            out["hint"] = (f"copy {key_at} to each other machine (privately) and run `mempal sync join {root} "
                           "--key-file FILE` there")
        return out

    async def join(self, raw_dir: str, key_file: str | None) -> dict[str, Any]:
        root = _absolute(raw_dir)

        def check() -> bool:
            manifest = SyncFolder(root, self.machine).manifest()
            encrypted = bool(manifest.get("encrypted"))
            if encrypted:
                key = seal.read_key(Path(key_file).expanduser()) if key_file else seal.read_key()
                seal.Sealer(key).verify(str(manifest.get("check", "")))
                if key_file:
                    seal.write_key(key)
            elif key_file:
                raise InvalidInput(f"{root} is not encrypted: join it without --key-file")
            return encrypted
        encrypted = await anyio.to_thread.run_sync(check)
        return await self._join(root, encrypted)

    async def _join(self, root: Path, encrypted: bool) -> dict[str, Any]:
        folder = SyncFolder(root, self.machine)
        written = await self.state.run(lambda: self.journal.get("seq"))
        taken = await anyio.to_thread.run_sync(folder.last_seq)
        if not written and taken:
            raise InvalidInput(f"{folder.own} already holds segments of another machine with the id {self.machine!r}: "
                               "give this one its own id first (`mempal config set store.machine NAME`, then restart "
                               "mempald)")
        await anyio.to_thread.run_sync(_edit, {"dir": str(root), "encrypt": encrypted})
        self.settings.swap(await anyio.to_thread.run_sync(load_settings))
        queued = 0
        async for page in self.store.pages(Filters(machine=(self.machine,))):  # what this machine held before
            ids = [p.id for p in page]
            await self.state.run(lambda ids=ids: self.journal.queue(ids, DRAWER))  # type: ignore[misc]
            queued += len(ids)
        book = self.exporter.rules
        if book is not None:  # the rules kept here travel too
            rule_ids = [str(r["id"]) for r in await self.state.run(book.rules)]
            await self.state.run(lambda: self.journal.queue(rule_ids, RULE))
        self.wake.set()
        return {"dir": str(root), "machine": self.machine, "encrypted": encrypted, "queued": queued}

    async def leave(self) -> dict[str, Any]:
        was = self.settings.current.sync.dir
        if not was:
            raise InvalidInput("not syncing: nothing to leave")
        await anyio.to_thread.run_sync(_edit, None)
        self.settings.swap(await anyio.to_thread.run_sync(load_settings))
        self._opened = None
        await self.state.run(self.journal.forget_folder)
        return {"left": was, "kept": "the drawers imported from other machines stay; the folder is untouched"}

    async def status(self) -> dict[str, Any]:
        opened = await anyio.to_thread.run_sync(self.folder) if self.on else None
        return await status_report(self, opened)

    async def machines(self) -> dict[str, Any]:
        opened = await anyio.to_thread.run_sync(self.folder) if self.on else None
        return await machines_report(self, opened)


def _absolute(raw: str) -> Path:
    path = Path(raw).expanduser()
    if not path.is_absolute():
        raise InvalidInput(f"the sync folder must be an absolute path: {raw!r}")
    return Path(os.path.normpath(path))


def _edit(section: dict[str, Any] | None) -> None:
    raw = read_raw()
    if section is None:
        raw.pop("sync", None)
    else:
        raw["sync"] = {**raw.get("sync", {}), **section}
    try:
        write_raw(raw)
    except ConfigError as exc:
        raise InvalidInput(str(exc)) from None
