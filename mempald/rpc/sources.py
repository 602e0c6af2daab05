"""Handlers: watched sources, one-off mining, project settings, migration and pack."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import anyio.to_thread

from mempald.config import SettingsRef, data_dir
from mempald.embed.embedder import Embedder
from mempald.errors import InvalidInput
from mempald.features.pack.progress import PackRuns
from mempald.features.pack.run import run_pack, run_prune
from mempald.ingest.review import SourceReview
from mempald.intake.admin import SourceAdmin
from mempald.ops.migrate import migrate, open_target
from mempald.rpc.dispatch import Args, Handler
from mempald.sources.paths import checked_path
from mempald.store.gateway import StoreGateway


class SourceMethods:
    def __init__(self, settings: SettingsRef, admin: SourceAdmin, store: StoreGateway, embedder: Embedder,
                 review: SourceReview, packs: PackRuns) -> None:
        self.settings = settings
        self.packs = packs
        self.admin = admin
        self.store = store
        self.embedder = embedder
        self.review = review

    def handlers(self) -> dict[str, Handler]:
        return {"watch_add": self.watch_add, "watch_remove": self.watch_remove, "watch_list": self.watch_list,
                "mine": self.mine, "init": self.init, "migrate": self.migrate, "pack": self.pack,
                "pack_prune": self.pack_prune, "pack_progress": self.pack_progress, "inspect": self.inspect,
                "reread": self.reread}

    async def inspect(self, a: Args) -> Any:
        return await self.review.inspect(a["path"], a["mode"], a["counts_only"])

    async def reread(self, a: Args) -> Any:
        return await self.review.reread(a["path"])

    async def watch_add(self, a: Args) -> Any:
        return await self.admin.watch_add(a["path"], a["mode"], a["wing"], a["token_budget"], a["output"])

    async def watch_remove(self, a: Args) -> Any:
        return await self.admin.watch_remove(a["path"])

    async def watch_list(self, _a: Args) -> Any:
        return self.admin.watch_list()

    async def mine(self, a: Args) -> Any:
        """One-off ingest; without ``mode`` each path is read as what it is (a code project or conversations);
        ``dry_run`` reads everything as the ingest would (``SourceReview.dry_run``) and stores nothing."""
        groups: dict[str, list[str]] = {}
        for raw in ((a["root"],) if a["root"] else a["paths"]):
            mode = await self.review.mode_of(checked_path(raw), a["mode"])
            groups.setdefault(mode, []).append(raw)
        out: dict[str, Any] = {}
        for mode, bases in groups.items():
            paths = a["paths"] if a["root"] else tuple(bases)
            plan_first = a["dry_run"] or a["plan_only"]
            r = await self.admin.mine(paths, mode=mode, limit=a["limit"], dry_run=plan_first, wing=a["wing"],
                                      root=a["root"])
            if a["dry_run"]:
                r = await self._dry_run(r, mode, a["wing"])
            _merge(out, r)
            out.setdefault("modes", {})[mode] = len(bases)
        out["dry_run"] = a["dry_run"]
        return out

    async def _dry_run(self, plan: dict[str, Any], mode: str, wing: str | None) -> dict[str, Any]:
        by_base: dict[str, list[Path]] = {}
        for base, f in plan.get("plan", []):
            by_base.setdefault(base, []).append(Path(f))
        out: dict[str, Any] = {}
        for base, files in by_base.items():
            source = self.review.source_of(Path(base), mode, wing)
            _merge(out, await self.review.dry_run(Path(base), files, source))
        return out or {**plan, "prompts": 0, "accounted": {}}

    async def init(self, a: Args) -> Any:
        return await self.admin.init(a["path"], a["wing"], a["force"])

    async def migrate(self, a: Args) -> Any:
        """Copy the palace to another store, in batches, resumable from a checkpoint in the data dir, verified."""
        dst = await anyio.to_thread.run_sync(open_target, a["to"], self.settings.current, self.embedder.dim)
        checkpoint = data_dir() / "migrate-checkpoint.json"
        try:
            report = await self.store.exclusive(lambda: migrate(self.store.store, dst, checkpoint=checkpoint))
        finally:
            await anyio.to_thread.run_sync(dst.close)
        return dataclasses.asdict(report) | {"ok": report.ok}

    async def pack(self, a: Args) -> Any:
        root = checked_path(a["dir"])
        if not await anyio.to_thread.run_sync(root.is_dir):
            raise InvalidInput(f"{root} is not a directory")
        out = Path(a["output"] or f"{root}/packed")
        if not out.is_absolute():
            raise InvalidInput("output must be an absolute path")
        progress = self.packs.start(str(root), a["run_id"] or "")
        try:
            return await anyio.to_thread.run_sync(lambda: run_pack(
                self.embedder, root, out, fmt=a["format"], chunk_size=a["chunk_size"],
                compression_target=a["compression_target"], topic=a["topic"], token_budget=a["token_budget"],
                progress=progress))
        finally:
            self.packs.finish(progress)

    async def pack_progress(self, a: Args) -> Any:
        return {"running": self.packs.running(a["run_id"] or "")}

    async def pack_prune(self, a: Args) -> Any:
        file = checked_path(a["file"])
        output = a["output"]
        return await anyio.to_thread.run_sync(lambda: run_prune(
            self.embedder, file, max_tokens=a["max_tokens"], min_importance=a["min_importance"],
            similarity_threshold=a["similarity_threshold"], merge=not a["no_merge"], dry_run=a["dry_run"],
            output=Path(output) if output else None))


def _merge(into: dict[str, Any], r: dict[str, Any]) -> None:
    """Add one ``mine`` summary to another (counts summed, lists joined, skipped/accounted reasons summed)."""
    for k, v in r.items():
        if isinstance(v, bool) or k == "dry_run":
            into[k] = v
        elif isinstance(v, int):
            into[k] = into.get(k, 0) + v
        elif isinstance(v, list):
            into[k] = into.get(k, []) + v
        elif isinstance(v, dict):
            d = into.setdefault(k, {})
            for kk, vv in v.items():
                d[kk] = d.get(kk, 0) + vv if isinstance(vv, int) else vv
        else:
            into[k] = v
