"""Managing sources: watch add/list/remove (persisted in the config, applied at once), one-off ``mine`` of
paths, and ``init`` of a project's ``mempal.toml``.

``mine`` accounts for every file it was given or found: one that may not be read (a FIFO, a device, a file of
``/proc``, one over ``ingest.max_file_bytes``) is counted in ``skipped`` by reason and listed in
``skipped_files``; one that is gone or cannot be opened (a dangling or unreadable link) is listed in ``errors``;
the others are read. A batch of a planned mine (``root`` given) never stops at one bad file."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio.to_thread
import tomli_w

from mempald import logs
from mempald.config import ConfigError, SettingsRef, load_settings, read_raw, write_raw
from mempald.errors import Forbidden, InvalidInput, NotFound
from mempald.ingest.ingestor import Ingestor, IngestResult, SourceStatus
from mempald.ingest.queues import FRESH
from mempald.intake.events import EventRouter
from mempald.intake.scan import Scanner
from mempald.sources.catalog import SourceSet
from mempald.sources.paths import checked_path
from mempald.sources.reader import BINARY, BINARY_PROBE, binary_content, open_regular, refusal
from mempald.sources.roots import Source
from mempald.text.classify import room_for_path

log = logs.get("sources")
LISTED_MAX = 200  # skipped files named in one mine summary (all are counted)


def _update_watch_list(change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> None:
    raw = read_raw()
    sources = raw.setdefault("sources", {})
    sources["watch"] = change(list(sources.get("watch", [])))
    try:
        write_raw(raw)
    except ConfigError as exc:
        raise InvalidInput(str(exc)) from None


def _files_of(source: Source, base: Path) -> list[Path]:
    """The units to read for ``base``: a file named inside a watched source is that file alone, a folder inside
    one the units under it, the source's root all of them."""
    if base != source.root and base.is_file():
        return [base]
    if base != source.root and source.root in base.parents:
        return [p for p in source.iter_files() if p == base or base in p.parents]
    return list(source.iter_files())


def _planned(base: Path, raw: str) -> Path:
    """A path of a planned batch: absolute and inside ``base`` as written (not resolved: a link in the folder is
    read as the folder's walk reads it, and a broken one is reported, not fatal to the batch)."""
    path = Path(os.path.normpath(raw))
    if not path.is_absolute():
        raise InvalidInput(f"path must be absolute: {raw!r}")
    if path != base and base not in path.parents:
        raise Forbidden(f"every path must be inside {base}")
    return path


def _why_not(path: Path, max_bytes: int) -> tuple[str, str, bool] | None:
    """(reason, detail, is an error) when ``path`` is not to be read, None when it may be."""
    try:
        st = path.stat()
    except FileNotFoundError:
        gone = "a link to nothing" if path.is_symlink() else "no such file"
        return "missing", gone, True
    except OSError as exc:
        return "unreadable", f"{type(exc).__name__}: {exc.strerror or exc}", True
    if stat.S_ISDIR(st.st_mode):
        return None  # a Slack export folder: read as one unit
    why = refusal(st, max_bytes)
    if why is None:
        try:
            with open_regular(path, max_bytes) as fh:
                binary = binary_content(fh.read(BINARY_PROBE))
        except OSError as exc:
            return "unreadable", f"{type(exc).__name__}: {exc.strerror or exc}", True
        why = None if binary is None else (BINARY, binary)
    return None if why is None else (why[0], why[1], False)


def _write_new(target: Path, body: str) -> None:
    """Write ``target`` through a new file renamed over it (a link at its name is replaced, never followed)."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(body)
    os.replace(tmp, target)


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
        summary: dict[str, Any] = {"files": 0, "exchanges": 0, "drawers": 0, "written": 0, "capped": 0,
                                   "skipped": {}, "skipped_files": [], "errors": []}
        groups: list[tuple[Path, list[Path] | None]]
        if root:
            base = checked_path(root)
            groups = [(base, [_planned(base, x) for x in raw_paths])]
        else:
            groups = [(checked_path(x), None) for x in raw_paths]
        cap = self.settings.current.ingest.max_file_bytes
        for base, only in groups:
            source = self.sources.source_for(base) or Source(f"{mode}:{base}", base, mode, "auto", wing or "")
            files = only if only is not None else await anyio.to_thread.run_sync(_files_of, source, base)
            if limit:
                files = files[: max(0, limit - summary["files"])]
            if dry_run:
                summary.setdefault("plan", []).extend([str(base), str(f)] for f in files)
            for f in files:
                summary["files"] += 1
                if dry_run:
                    continue
                why = await anyio.to_thread.run_sync(_why_not, f, cap)
                if why is not None:
                    self._account(summary, source, f, *why)
                    continue
                res: IngestResult = await self.ingestor.ingest_path(f, source, FRESH)
                capped = res.capped
                while res.more:
                    res = await self.ingestor.ingest_path(f, source, FRESH)
                    capped += res.capped
                summary["capped"] += capped  # exchanges cut to ingest.max_drawers_per_exchange
                if res.refused:  # it changed between the check and the read (the ingestor counted and logged it)
                    if len(summary["skipped_files"]) < LISTED_MAX:
                        summary["skipped_files"].append(f"{f}: {res.refused}")
                    continue
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

    def _account(self, summary: dict[str, Any], source: Source, path: Path, reason: str, detail: str,
                 error: bool) -> None:
        """Record a file that is not read: an error (gone, unreadable), or a skip counted by reason with the
        source's other skips (``status`` shows them; the summary's ``skipped`` is read from there)."""
        log.warning("file_skipped", path=str(path), reason=reason, detail=detail, source=source.key)
        if error:
            summary["errors"].append(f"{path}: {detail}")
            return
        skipped = self.ingestor.status.setdefault(source.key, SourceStatus()).skipped
        skipped[reason] = skipped.get(reason, 0) + 1
        if len(summary["skipped_files"]) < LISTED_MAX:
            summary["skipped_files"].append(f"{path}: {detail}")

    async def init(self, raw_path: str, wing: str | None, force: bool) -> dict[str, Any]:
        """Write ``DIR/mempal.toml`` with the project's wing and detected rooms (the user may edit it)."""
        root = checked_path(raw_path)
        wing = wing or root.name
        rooms = await anyio.to_thread.run_sync(detect_rooms, root)
        target = root / "mempal.toml"
        if target.exists() and not force:
            raise InvalidInput(f"{target} exists; pass force to overwrite")
        if target.is_symlink() or (target.exists() and not target.is_file()):
            raise InvalidInput(f"{target} is not a regular file; remove it first")
        body = "# mempal project settings: the wing this project files under and the room of each folder.\n"
        body += tomli_w.dumps({"wing": wing, "rooms": rooms})
        await anyio.to_thread.run_sync(_write_new, target, body)
        return {"path": str(target), "wing": wing, "rooms": rooms}

    async def ingest_file(self, raw_path: str) -> dict[str, Any]:
        """Ingest one watched file now (hooks call this with the transcript path); waits for the upsert."""
        path = checked_path(raw_path)
        source = self.sources.source_for(path)
        if source is None:
            raise Forbidden(f"{path} is not inside a watched source; add it with `mempal watch add`")
        why = await anyio.to_thread.run_sync(_why_not, path, self.settings.current.ingest.max_file_bytes)
        if why is not None:
            raise InvalidInput(f"{path}: {why[1]}: not read")
        res = await self.ingestor.ingest_path(path, source, FRESH)
        while res.more:
            res = await self.ingestor.ingest_path(path, source, FRESH)
        return res.as_dict()
