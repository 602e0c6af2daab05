"""``mempald repair``: rebuild a damaged state database or store from what survives, losing no memory that can
still be read.

Run with the daemon stopped (it takes the data directory's lock). Nothing is deleted: every damaged file is
moved to ``<data dir>/damaged-<time>/``.

1. The state database: if ``quick_check`` or a strict read of its rows fails, a new one is made from every row
   that can still be read (``mempald.ops.salvage``): the knowledge graph, the cowork inbox, the audit log,
   the counters; cursors whose text is damaged are dropped.
2. The store (embedded): if its shard does not load, has lost its payload indexes, or any point cannot be read
   back whole, every point that can be read (payload and vectors, verbatim) is copied into a new shard, which
   becomes the current one. Drawers without a dense vector are embedded again when the daemon starts. A store
   that reads back whole but has no drawer left of files the state database says were read into it (a
   deleted segment its WAL did not cover) has those files' cursors dropped.
3. Then, if anything was rebuilt, every cursor is dropped: the daemon reads each transcript still on disk
   again from the start. Drawer ids are deterministic, so what survived is overwritten, not duplicated, and
   what was lost from the store comes back from its transcript.

Exit codes: 0 nothing to repair, or repaired (what could not be kept is counted in the report), 1 the
damaged state database could not be opened at all (a new empty one was made), 2 bad config, 4 a daemon runs on
this data directory.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

from mempald.config import ConfigError, Settings, data_dir, load_settings
from mempald.ops.salvage import (
    cited_paths,
    copy_rows,
    point_data,
    read_shard,
    readable_copy,
    state_problems,
    unbacked_cursors,
)

LISTED = 20


def _aside(ddir: Path, stamp: str) -> Path:
    folder = ddir / f"damaged-{stamp}"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder


def repair_state(path: Path, ddir: Path, stamp: str) -> dict[str, Any]:
    if not path.exists():
        return {"state": "absent (made at the next start)"}
    problems = state_problems(path)
    if not problems:
        return {"state": "ok"}
    aside = _aside(ddir, stamp)
    moved = aside / path.name
    for suffix in ("", "-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            shutil.move(side, moved.with_name(moved.name + suffix))
    work = readable_copy(moved, aside / f"{path.name}.readable")
    from mempald.state.db import SCHEMA

    dst = sqlite3.connect(str(path), isolation_level=None)
    tables: dict[str, Any] = {}
    try:
        dst.execute("PRAGMA journal_mode=WAL")
        dst.executescript(SCHEMA)
        try:
            src = sqlite3.connect(str(work), isolation_level=None)
        except sqlite3.Error as exc:
            return {"state": "rebuilt empty", "problems": problems, "error": str(exc), "moved_to": str(aside)}
        try:
            dst.execute("BEGIN")
            copied = copy_rows(src, dst, strict=lambda table: table == "cursors")
            dst.execute("COMMIT")
        finally:
            src.close()
        tables = {name: vars(c) for name, c in copied.items()}
    finally:
        dst.close()
    work.unlink(missing_ok=True)
    for suffix in ("-wal", "-shm"):
        work.with_name(work.name + suffix).unlink(missing_ok=True)
    return {"state": "rebuilt", "problems": problems[:5], "tables": tables, "moved_to": str(aside)}


def _live_shard(path: Path) -> str | None:
    from mempald.store.base import StoreError
    from mempald.store.edge import current_shard

    try:
        name = current_shard(path)
    except StoreError:
        name = ""
    if name and (path / name).is_dir():
        return name
    shards = sorted((p for p in path.iterdir() if (p / "edge_config.json").exists()), key=lambda p: p.stat().st_mtime)
    return shards[-1].name if shards else None


def repair_store(settings: Settings, ddir: Path, stamp: str) -> dict[str, Any]:
    if settings.store.url:
        return {"store": "not embedded (a Qdrant server): nothing to repair here"}
    path = settings.store_path()
    shard = _live_shard(path) if path.is_dir() else None
    if shard is None:
        return {"store": "absent (made at the next start)"}
    cited: set[str] = set()
    check = read_shard(path / shard, lambda recs: cited_paths(recs, cited))
    if not check.error and not check.lost:
        missing = unbacked_cursors(ddir / "state.sqlite3", cited)
        if missing:  # the store lost drawers without damage to show (a deleted segment its WAL did not cover)
            return {"store": "ok", "points": check.points, "files_missing": len(missing),
                    "cursors_dropped": drop_cursors(ddir / "state.sqlite3", missing)}
        return {"store": "ok", "points": check.points}
    from mempald.embed.embedder import DEFAULT_DIM
    from mempald.store.edge import EdgeStore, set_current_shard

    dim = int(_meta(path).get("dim") or DEFAULT_DIM)
    new_name = f"shard-{time.time_ns() // 1_000_000}"
    (path / new_name).mkdir(mode=0o700)
    new = EdgeStore(path, dim, shard=new_name)
    try:
        res = read_shard(path / shard, lambda recs: new.upsert([point_data(r) for r in recs]))
        new.flush()
    finally:
        new.close()
    set_current_shard(path, new_name)
    aside = _aside(ddir, stamp)
    shutil.move(path / shard, aside / shard)
    return {"store": "rebuilt", "problem": check.error or f"{len(check.lost)} points unreadable",
            "points_found": res.points, "points_kept": res.read, "points_lost": len(res.lost),
            "lost_ids": res.lost[:LISTED], "shard": new_name, "moved_to": str(aside)}


def _meta(path: Path) -> dict[str, Any]:
    from mempald.store.edge import META_FILE

    try:
        data = json.loads((path / META_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def drop_cursors(path: Path, only: list[str] | None = None) -> int:
    """Forget where reading stopped (every file, or ``only`` these): the daemon reads them again from the start."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        if only is None:
            n = int(conn.execute("SELECT count(*) FROM cursors").fetchone()[0])
            conn.execute("DELETE FROM cursors")
            return n
        conn.executemany("DELETE FROM cursors WHERE path = ?", [(p,) for p in only])
        return len(only)
    finally:
        conn.close()


def repair(settings: Settings, ddir: Path) -> dict[str, Any]:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    state_path = ddir / "state.sqlite3"
    report: dict[str, Any] = {"data_dir": str(ddir)}
    report.update(repair_state(state_path, ddir, stamp))
    report.update(repair_store(settings, ddir, stamp))
    rebuilt = report["state"].startswith("rebuilt") or report["store"] == "rebuilt"
    if rebuilt and state_path.exists():
        report["cursors_dropped"] = drop_cursors(state_path)
    report.setdefault("cursors_dropped", 0)
    rebuilt = rebuilt or bool(report["cursors_dropped"])
    report["ok"] = not report.get("error")  # (points lost from the store are counted, and their transcripts re-read)
    report["next"] = ("start mempald: it reads every transcript still on disk again; drawers whose transcript is "
                      "gone and whose payload was damaged are lost" if rebuilt else "nothing to repair")
    return report


def _text(r: dict[str, Any]) -> str:
    lines = [f"state database: {r['state']}", f"store: {r['store']}"]
    for name, t in r.get("tables", {}).items():
        lines.append(f"  {name}: {t['rows']} rows kept, {t['lost']} lost, {t['damaged_text']} with damaged text")
    if "points_found" in r:
        lines.append(f"  points: {r['points_kept']} of {r['points_found']} kept, {r['points_lost']} lost")
    if r.get("moved_to"):
        lines.append(f"damaged files moved to {r['moved_to']}")
    lines.append(f"cursors dropped: {r['cursors_dropped']}; {r['next']}")
    return "\n".join(lines)


def main_repair(as_json: bool = False) -> int:
    from mempald.runtime.lock import instance_lock

    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"mempald repair: {exc}", file=sys.stderr)
        return 2
    ddir = data_dir()
    lock = instance_lock(ddir)
    if not lock.acquire():
        print(f"mempald repair: a daemon (pid {lock.holder()}) runs on {ddir}: stop it first "
              "(`systemctl --user stop mempald`, or end the process)", file=sys.stderr)
        return 4
    try:
        report = repair(settings, ddir)
    finally:
        lock.release()
    print(json.dumps(report, indent=2) if as_json else _text(report))
    return 0 if report["ok"] else 1
