"""Socket methods for sources: watch add/list/remove (persisted in config, watched at once), one-off
``mine`` of paths, and ``init`` of a project's ``mempal.toml``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio.to_thread
import tomli_w

from client.protocol import FORBIDDEN, INVALID_PARAMS, NOT_FOUND, RpcError
from mempald.classify import room_for_path
from mempald.config import ConfigError, read_raw, write_raw
from mempald.ingest import IngestResult
from mempald.palace import Palace
from mempald.params import Handler, Params, checked_path
from mempald.queues import FRESH
from mempald.sources.registry import Source, resolve_sources

MODES = ("convos", "projects", "pack")


async def _apply_sources(p: Palace) -> None:
    p.sources = resolve_sources(p.settings)
    if p.watcher is not None:
        await anyio.to_thread.run_sync(p.watcher.sync, [s.root for s in p.sources])
    await p.reconcile(FRESH)


def _update_watch_list(change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> None:
    raw = read_raw()
    sources = raw.setdefault("sources", {})
    sources["watch"] = change(list(sources.get("watch", [])))
    try:
        write_raw(raw)
    except ConfigError as exc:
        raise RpcError(INVALID_PARAMS, str(exc)) from None


async def watch_add(p: Palace, params: Params) -> Any:
    path = checked_path(params.text("path", required=True))
    mode = params.text("mode") or "convos"
    if mode not in MODES:
        raise RpcError(INVALID_PARAMS, f"mode must be one of {', '.join(MODES)}")
    entry: dict[str, Any] = {"path": str(path), "mode": mode}
    if params.text("wing"):
        entry["wing"] = params.text("wing")
    if mode == "pack":
        entry["token_budget"] = params.integer("token_budget", 0, lo=0, hi=1_000_000)
        if params.text("output"):
            entry["output"] = params.text("output")

    def change(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [i for i in items if i.get("path") != str(path)] + [entry]

    await anyio.to_thread.run_sync(_update_watch_list, change)
    from mempald.config import load_settings

    p.settings = await anyio.to_thread.run_sync(load_settings)
    await _apply_sources(p)
    return {"added": entry, "sources": [s.key for s in p.sources]}


async def watch_remove(p: Palace, params: Params) -> Any:
    raw = params.text("path", required=True)
    target = str(await anyio.to_thread.run_sync(lambda: Path(raw).expanduser().resolve()))
    before = len(p.settings.sources.watch)

    def change(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [i for i in items if i.get("path") not in (raw, target)]

    await anyio.to_thread.run_sync(_update_watch_list, change)
    from mempald.config import load_settings

    p.settings = await anyio.to_thread.run_sync(load_settings)
    if len(p.settings.sources.watch) == before:
        raise RpcError(NOT_FOUND, f"{raw} is not a watched source (see `mempal watch list`)")
    await _apply_sources(p)
    return {"removed": target, "note": "its drawers are kept; delete them with `mempal delete` if you want"}


async def watch_list(p: Palace, _params: Params) -> Any:
    return {"sources": [{"key": s.key, "path": str(s.root), "mode": s.mode, "format": s.fmt, "wing": s.wing,
                         "exists": s.root.exists()} for s in p.sources]}


async def mine(p: Palace, params: Params) -> Any:
    """One-off ingest of paths (files or folders) with a summary; ``dry_run`` lists what would be read."""
    paths = [checked_path(x) for x in params.texts("paths")]
    if not paths:
        raise RpcError(INVALID_PARAMS, "give paths")
    mode = params.text("mode") or "convos"
    if mode not in MODES:
        raise RpcError(INVALID_PARAMS, f"mode must be one of {', '.join(MODES)}")
    limit = params.integer("limit", 0, lo=0, hi=10_000_000)
    dry_run = params.flag("dry_run")
    wing = params.text("wing") or ""
    summary: dict[str, Any] = {"files": 0, "exchanges": 0, "drawers": 0, "written": 0, "skipped": {}, "errors": []}
    given_root = params.text("root")
    groups: list[tuple[Path, list[Path] | None]] = (
        [(checked_path(given_root), paths)] if given_root else [(root, None) for root in paths])
    for root, only in groups:
        if only is not None and any(root not in f.parents and f != root for f in only):
            raise RpcError(FORBIDDEN, f"every path must be inside {root}")
        source = p.source_for(root) or Source(f"{mode}:{root}", root, mode, "auto", wing)
        files = only if only is not None else await anyio.to_thread.run_sync(_list_files, source)
        if limit:
            files = files[: max(0, limit - summary["files"])]
        if dry_run:
            summary.setdefault("plan", []).extend([str(root), str(f)] for f in files)
        for f in files:
            summary["files"] += 1
            if dry_run:
                continue
            res: IngestResult = await p.ingestor.ingest_path(f, source, FRESH)
            while res.more:
                res = await p.ingestor.ingest_path(f, source, FRESH)
            summary["exchanges"] += res.exchanges
            summary["drawers"] += res.drawers
            summary["written"] += res.written
            if res.error:
                summary["errors"].append(f"{f}: {res.error}")
        st = p.ingestor.status.get(source.key)
        if st:
            for k, v in st.skipped.items():
                summary["skipped"][k] = summary["skipped"].get(k, 0) + v
    summary["dry_run"] = dry_run
    return summary


def _list_files(source: Source) -> list[Path]:
    return list(source.iter_files())


def detect_rooms(root: Path) -> dict[str, str]:
    rooms: dict[str, str] = {}
    for child in sorted(root.iterdir()):
        if child.is_dir() and not child.name.startswith("."):
            room = room_for_path(child.name + "/x")
            rooms[child.name] = room
    return rooms


async def init(p: Palace, params: Params) -> Any:
    """Write ``DIR/mempal.toml`` with the project's wing and detected rooms (the user may edit it)."""
    root = checked_path(params.text("path", required=True))
    wing = params.text("wing") or root.name
    rooms = await anyio.to_thread.run_sync(detect_rooms, root)
    target = root / "mempal.toml"
    if target.exists() and not params.flag("force"):
        raise RpcError(INVALID_PARAMS, f"{target} exists; pass force to overwrite")
    body = "# mempal project settings: the wing this project files under and the room of each folder.\n"
    body += tomli_w.dumps({"wing": wing, "rooms": rooms})
    await anyio.to_thread.run_sync(target.write_text, body)
    return {"path": str(target), "wing": wing, "rooms": rooms}


METHODS: dict[str, Handler] = {
    "watch_add": watch_add,
    "watch_remove": watch_remove,
    "watch_list": watch_list,
    "mine": mine,
    "init": init,
}


async def migrate_store(p: Palace, params: Params) -> Any:
    """Copy the daemon's palace to another store (``to``: a server URL, ``path:/dir`` or an embedded store
    folder), in batches, resumable from a checkpoint in the data dir, verified at the end."""
    import dataclasses

    from mempald.config import data_dir
    from mempald.migrate import migrate
    from mempald.store.locate import open_location

    to = params.text("to", required=True)
    dst = await anyio.to_thread.run_sync(open_location, to, p.settings, p.embedder.dim)
    checkpoint = data_dir() / "migrate-checkpoint.json"
    try:
        report = await p.runner.run(lambda: migrate(p.runner.store, dst, checkpoint=checkpoint))
    finally:
        await anyio.to_thread.run_sync(dst.close)
    return dataclasses.asdict(report) | {"ok": report.ok}


METHODS["migrate"] = migrate_store
