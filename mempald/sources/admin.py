"""Managing sources: watch add/list/remove (persisted in the config, applied at once), one-off ``mine`` of
paths, and ``init`` of a project's ``mempal.toml``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio.to_thread
import tomli_w

from mempald.config import ConfigError, SettingsRef, load_settings, read_raw, write_raw
from mempald.errors import Forbidden, InvalidInput, NotFound
from mempald.ingest.ingestor import Ingestor, IngestResult
from mempald.ingest.queues import FRESH
from mempald.sources.catalog import SourceSet
from mempald.sources.events import EventRouter
from mempald.sources.paths import checked_path
from mempald.sources.registry import Source
from mempald.sources.scan import Scanner
from mempald.text.classify import room_for_path


def _update_watch_list(change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> None:
    raw = read_raw()
    sources = raw.setdefault("sources", {})
    sources["watch"] = change(list(sources.get("watch", [])))
    try:
        write_raw(raw)
    except ConfigError as exc:
        raise InvalidInput(str(exc)) from None


def _files_of(source: Source) -> list[Path]:
    return list(source.iter_files())


def detect_rooms(root: Path) -> dict[str, str]:
    rooms: dict[str, str] = {}
    for child in sorted(root.iterdir()):
        if child.is_dir() and not child.name.startswith("."):
            rooms[child.name] = room_for_path(child.name + "/x")
    return rooms


class SourceAdmin:
    def __init__(self, settings: SettingsRef, sources: SourceSet, events: EventRouter, scanner: Scanner,
                 ingestor: Ingestor) -> None:
        self.settings = settings
        self.sources = sources
        self.events = events
        self.scanner = scanner
        self.ingestor = ingestor

    async def apply_settings(self, lane: int = FRESH) -> list[str]:
        """Re-read the config and watch what it names now (its files scanned into ``lane``); returns the changed
        settings that still need a restart."""
        new = await anyio.to_thread.run_sync(load_settings)
        pending = self.settings.swap(new)
        self.sources.apply(new)
        await self.events.sync()
        await self.scanner.reconcile(lane)
        return pending

    async def watch_add(self, raw_path: str, mode: str, wing: str | None, token_budget: int,
                        output: str | None) -> dict[str, Any]:
        path = checked_path(raw_path)
        entry: dict[str, Any] = {"path": str(path), "mode": mode}
        if wing:
            entry["wing"] = wing
        if mode == "pack":
            entry["token_budget"] = token_budget
            if output:
                entry["output"] = output

        def change(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [i for i in items if i.get("path") != str(path)] + [entry]

        await anyio.to_thread.run_sync(_update_watch_list, change)
        await self.apply_settings()
        return {"added": entry, "sources": self.sources.keys()}

    async def watch_remove(self, raw: str) -> dict[str, Any]:
        target = str(await anyio.to_thread.run_sync(lambda: Path(raw).expanduser().resolve()))
        before = len(self.settings.current.sources.watch)

        def change(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [i for i in items if i.get("path") not in (raw, target)]

        await anyio.to_thread.run_sync(_update_watch_list, change)
        new = await anyio.to_thread.run_sync(load_settings)
        if len(new.sources.watch) == before:
            raise NotFound(f"{raw} is not a watched source (see `mempal watch list`)")
        await self.apply_settings()
        return {"removed": target, "note": "its drawers are kept; delete them with `mempal delete` if you want"}

    def watch_list(self) -> dict[str, Any]:
        return {"sources": [{"key": s.key, "path": str(s.root), "mode": s.mode, "format": s.fmt, "wing": s.wing,
                             "exists": s.root.exists()} for s in self.sources]}

    async def mine(self, raw_paths: tuple[str, ...], *, mode: str, limit: int, dry_run: bool, wing: str | None,
                   root: str | None) -> dict[str, Any]:
        """One-off ingest of paths (files or folders) with a summary; ``dry_run`` lists what would be read."""
        paths = [checked_path(x) for x in raw_paths]
        summary: dict[str, Any] = {"files": 0, "exchanges": 0, "drawers": 0, "written": 0, "skipped": {},
                                   "errors": []}
        groups: list[tuple[Path, list[Path] | None]] = (
            [(checked_path(root), paths)] if root else [(r, None) for r in paths])
        for base, only in groups:
            if only is not None and any(base not in f.parents and f != base for f in only):
                raise Forbidden(f"every path must be inside {base}")
            source = self.sources.source_for(base) or Source(f"{mode}:{base}", base, mode, "auto", wing or "")
            files = only if only is not None else await anyio.to_thread.run_sync(_files_of, source)
            if limit:
                files = files[: max(0, limit - summary["files"])]
            if dry_run:
                summary.setdefault("plan", []).extend([str(base), str(f)] for f in files)
            for f in files:
                summary["files"] += 1
                if dry_run:
                    continue
                res: IngestResult = await self.ingestor.ingest_path(f, source, FRESH)
                while res.more:
                    res = await self.ingestor.ingest_path(f, source, FRESH)
                summary["exchanges"] += res.exchanges
                summary["drawers"] += res.drawers
                summary["written"] += res.written
                if res.error:
                    summary["errors"].append(f"{f}: {res.error}")
            st = self.ingestor.status.get(source.key)
            if st:
                for k, v in st.skipped.items():
                    summary["skipped"][k] = summary["skipped"].get(k, 0) + v
        summary["dry_run"] = dry_run
        return summary

    async def init(self, raw_path: str, wing: str | None, force: bool) -> dict[str, Any]:
        """Write ``DIR/mempal.toml`` with the project's wing and detected rooms (the user may edit it)."""
        root = checked_path(raw_path)
        wing = wing or root.name
        rooms = await anyio.to_thread.run_sync(detect_rooms, root)
        target = root / "mempal.toml"
        if target.exists() and not force:
            raise InvalidInput(f"{target} exists; pass force to overwrite")
        body = "# mempal project settings: the wing this project files under and the room of each folder.\n"
        body += tomli_w.dumps({"wing": wing, "rooms": rooms})
        await anyio.to_thread.run_sync(target.write_text, body)
        return {"path": str(target), "wing": wing, "rooms": rooms}

    async def ingest_file(self, raw_path: str) -> dict[str, Any]:
        """Ingest one watched file now (hooks call this with the transcript path); waits for the upsert."""
        path = checked_path(raw_path)
        source = self.sources.source_for(path)
        if source is None:
            raise Forbidden(f"{path} is not inside a watched source; add it with `mempal watch add`")
        res = await self.ingestor.ingest_path(path, source, FRESH)
        while res.more:
            res = await self.ingestor.ingest_path(path, source, FRESH)
        return res.as_dict()
