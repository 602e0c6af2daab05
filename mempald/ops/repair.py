"""``mempald repair``: rebuild a damaged state database or store from what survives, losing no memory that can
still be read.

Run with the daemon stopped (it takes the data directory's lock). Nothing is deleted: every damaged file is
moved to ``<data dir>/damaged-<time>/``.

1. The state database: if ``quick_check`` or a strict read of its rows fails, a new one is made from every row
   that can still be read (``mempald.ops.salvage``): the knowledge graph, the cowork inbox, the audit log,
   the counters; cursors whose text is damaged are dropped. If it is missing or empty while the store holds
   drawers, a new one is made with the forget rules the store keeps a copy of (``forget_list.mirrored_rules``),
   so a forgotten session is not read back from its transcript; what only it held is reported lost.
2. The store (embedded): its files are read first, without Qdrant (``mempald.store.edge_files``): opening a
   shard whose id tracker lost entries makes Qdrant drop the payloads it no longer lists. Metadata naming
   another vector size than the shard's is set back. If the shard does not load, has lost its payload indexes,
   any point cannot be read back whole, a dense vector is damaged, or its payload pages hold drawers its id
   tracker does not list, a new shard is made of every point that reads (payload and vectors, verbatim; a
   damaged dense vector dropped) and every drawer recovered from the payload pages (its id derived from its
   payload, its keyword vector computed again, its dense vector kept where sound), except what a forget rule
   covers; it becomes the current one. Drawers without a dense vector are embedded again when the daemon
   starts. A store that reads back whole but holds fewer exchanges of a file than the state database says
   were read into it (a deleted segment its WAL did not cover) has those files' cursors dropped.
3. Then, if anything was rebuilt, every cursor is dropped: the daemon reads each transcript still on disk
   again from the start. Drawer ids are deterministic, so what survived is overwritten, not duplicated, and
   what was lost from the store comes back from its transcript. The store's drawer count recorded at the
   last clean stop (the start compares it) is forgotten.

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
from typing import TYPE_CHECKING, Any

from mempald.config import ConfigError, Settings, data_dir, load_settings
from mempald.embed.sparse import META_KEY
from mempald.ops.salvage import (
    ShardScan,
    StoreRead,
    copy_rows,
    payload_id,
    read_shard,
    readable_copy,
    short_cursors,
    state_problems,
)
from mempald.store.edge_files import read_raw

if TYPE_CHECKING:
    from mempald.embed.sparse import Bm25Encoder
    from mempald.ingest.forget_list import Rule

LISTED = 20


def _aside(ddir: Path, stamp: str) -> Path:
    folder = ddir / f"damaged-{stamp}"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder


def repair_state(path: Path, ddir: Path, stamp: str, settings: Settings) -> dict[str, Any]:
    from mempald.state.db import state_missing

    missing = state_missing(path)
    if missing:
        from mempald.ops.doctor import store_values

        if not store_values(settings):
            return {"state": f"{missing} (made at the next start)"}
        return recreate_state(path, ddir, stamp, missing, settings)
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


def recreate_state(path: Path, ddir: Path, stamp: str, missing: str, settings: Settings) -> dict[str, Any]:
    """A new state database beside a store that holds drawers: the forget rules the store keeps a copy of are
    put back (so forgotten sessions are not read again from their transcripts); every transcript is read again
    (no cursor is left). What only the lost file held (the knowledge graph, the inbox, the audit log) is gone."""
    from mempald.ingest.forget_list import ForgetList, mirrored_rules
    from mempald.state.db import State

    report: dict[str, Any] = {}
    if path.exists():  # an empty file: kept aside, as every damaged file
        aside = _aside(ddir, stamp)
        for suffix in ("", "-wal", "-shm"):
            side = path.with_name(path.name + suffix)
            if side.exists():
                shutil.move(side, aside / side.name)
        report["moved_to"] = str(aside)
    rules = mirrored_rules(_meta(settings.store_path())) if not settings.store.url else []
    state = State(path)
    try:
        ForgetList(state).add(rules)
        state.audit("mempald repair", "repair", str(path), f"the state database was {missing}",
                    forget_rules_restored=len(rules))
    finally:
        state.close()
    return {**report, "state": f"rebuilt ({missing})", "forget_rules_restored": len(rules),
            "lost": "the knowledge graph, the cowork inbox and the audit log (kept nowhere else)"}


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
    shard_dir = path / shard
    # Read the shard's files first: Qdrant, opening a shard whose id tracker lost entries, drops the payloads
    # of the points it no longer lists (and a tracker of random bytes can end the process).
    raw = read_raw(shard_dir, payload_id)
    report: dict[str, Any] = {}
    report.update(repair_meta(path, shard_dir))
    seen = ShardScan()
    if raw.tracker_damaged:
        check = StoreRead(error=f"the id tracker of segment(s) {', '.join(raw.tracker_damaged)} is damaged: it "
                                f"lists fewer points than the payload pages hold ({raw.values})")
    else:
        check = read_shard(shard_dir, seen.add)
    # The pages are read into the new shard only where Qdrant cannot list the points itself (a shard that loads
    # whole is its own truth: a built segment's pages may still hold copies of points deleted since).
    from_pages = bool(raw.tracker_damaged) or check.error.startswith("cannot load")
    missing = {pid: p for pid, p in raw.points.items() if pid not in seen.ids} if from_pages else {}
    rules = forget_rules(ddir / "state.sqlite3", _meta(path))
    missing = {pid: p for pid, p in missing.items() if not any(r.covers(p.payload) for r in rules)}
    if not check.error and not check.lost and not missing and not seen.bad_dense:
        found = short_cursors(ddir / "state.sqlite3", seen.exchanges)
        if found:  # the store lost drawers without damage to show (a deleted segment its WAL did not cover)
            return {**report, "store": "ok", "points": check.points, "files_missing": len(found),
                    "cursors_dropped": drop_cursors(ddir / "state.sqlite3", found)}
        return {**report, "store": "ok", "points": check.points}
    from mempald.embed.embedder import DEFAULT_DIM
    from mempald.ingest.drawers import index_text
    from mempald.store.base import PointData
    from mempald.store.edge import EdgeStore, set_current_shard

    dim = _shard_dim(shard_dir) or int(_meta(path).get("dim") or DEFAULT_DIM)
    new_name = f"shard-{time.time_ns() // 1_000_000}"
    (path / new_name).mkdir(mode=0o700)
    new = EdgeStore(path, dim, shard=new_name)
    kept = ShardScan()
    try:
        if not raw.tracker_damaged and not check.error.startswith("cannot load"):
            res = read_shard(shard_dir, lambda recs: new.upsert(kept.add(recs)))
        else:
            res = StoreRead()
        bm25 = _keyword_encoder(_meta(path).get(META_KEY))
        points = [PointData(p.id, p.payload, bm25.document(index_text(p.payload)), p.dense)
                  for p in missing.values() if p.id not in kept.ids]
        for i in range(0, len(points), 256):
            new.upsert(points[i : i + 256])
        new.flush()
    finally:
        new.close()
    set_current_shard(path, new_name)
    aside = _aside(ddir, stamp)
    shutil.move(shard_dir, aside / shard)
    lost = [pid for pid in res.lost if pid not in missing]
    return {**report, "store": "rebuilt", "problem": check.error or (f"{len(check.lost)} points unreadable" if
                                                                      check.lost else "damaged dense vectors"),
            "points_found": max(res.points, len(kept.ids | set(missing))), "points_kept": res.read,
            "points_recovered_from_pages": len(points), "points_lost": len(lost), "lost_ids": lost[:LISTED],
            "pages_unreadable": raw.unreadable + raw.unnamed, "dense_dropped": len(kept.bad_dense),
            "shard": new_name, "moved_to": str(aside)}


def _keyword_encoder(tokenizer: object) -> Bm25Encoder:
    """The BM25 encoder of the tokenizer the store's metadata names (the default one if it names none it
    knows: the daemon re-encodes keyword vectors of another tokenizer by itself)."""
    from mempald.embed.sparse import Bm25Encoder

    if isinstance(tokenizer, str) and tokenizer:
        try:
            return Bm25Encoder(tokenizer)
        except ValueError:  # an unknown tokenizer name (damaged metadata)
            pass
    return Bm25Encoder()


def _shard_dim(shard_dir: Path) -> int:
    """The dense vector size the shard was made with (its own ``edge_config.json``; 0 when unreadable)."""
    try:
        cfg = json.loads((shard_dir / "edge_config.json").read_text())
        return int(cfg["vectors"]["dense"]["size"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def meta_problem(path: Path, shard_dir: Path) -> str:
    """Why the store's metadata does not describe its shard ("" when it does): a vector size other than the
    shard's own (the daemon would refuse the store as filled by another model)."""
    meta = _meta(path)
    shard_dim = _shard_dim(shard_dir)
    named = meta.get("dim")
    if shard_dim and named is not None and named != shard_dim:
        return f"{path / 'mempal-meta.json'} names {named!r}-d vectors but the shard holds {shard_dim}-d ones"
    return ""


def repair_meta(path: Path, shard_dir: Path) -> dict[str, Any]:
    """The metadata's vector size set back to the shard's own (the rest of the metadata is kept)."""
    from mempald.embed.embedder import DEFAULT_DIM
    from mempald.store.edge import META_FILE

    problem = meta_problem(path, shard_dir)
    if not problem:
        return {}
    dim = _shard_dim(shard_dir)
    if dim != DEFAULT_DIM:  # another model's store: `mempal reindex`, not a repair
        return {"meta": f"not changed ({problem}; the model makes {DEFAULT_DIM}-d vectors: run `mempal reindex`)"}
    meta = _meta(path) | {"dim": dim}
    tmp = path / (META_FILE + ".tmp")
    tmp.write_text(json.dumps(meta, indent=2, sort_keys=True))
    tmp.replace(path / META_FILE)
    return {"meta": f"repaired ({problem}: set to {dim})"}


def forget_rules(state_path: Path, meta: dict[str, Any]) -> list[Rule]:
    """Every forget rule: the state database's, and the copy kept in the store's metadata."""
    from mempald.ingest.forget_list import Rule, mirrored_rules

    rules = {r.key: r for r in mirrored_rules(meta)}
    try:
        conn = sqlite3.connect(f"file:{state_path}?mode=ro", uri=True, timeout=10)
        try:
            rows = conn.execute("SELECT source, session, wing, room, until, at, actor, reason FROM forgotten")
            for row in rows.fetchall():
                rule = Rule(str(row[0]), str(row[1]), str(row[2]), str(row[3]), float(row[4]), float(row[5]),
                            str(row[6]), str(row[7]))
                rules[rule.key] = rule
        finally:
            conn.close()
    except sqlite3.Error:
        pass
    return list(rules.values())


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


def forget_store_points(path: Path) -> None:
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute("DELETE FROM store_count")
    except sqlite3.Error:
        pass  # (a state database of a release without the table)
    finally:
        conn.close()


def repair(settings: Settings, ddir: Path) -> dict[str, Any]:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    state_path = ddir / "state.sqlite3"
    report: dict[str, Any] = {"data_dir": str(ddir)}
    report.update(repair_state(state_path, ddir, stamp, settings))
    report.update(repair_store(settings, ddir, stamp))
    rebuilt = report["state"].startswith("rebuilt") or report["store"] == "rebuilt"
    if rebuilt and state_path.exists():
        report["cursors_dropped"] = drop_cursors(state_path)
    report.setdefault("cursors_dropped", 0)
    if state_path.exists():  # the count of the last clean stop no longer holds after a repair
        forget_store_points(state_path)
    rebuilt = rebuilt or bool(report["cursors_dropped"])
    report["ok"] = not report.get("error")  # (points lost from the store are counted, and their transcripts re-read)
    report["next"] = ("start mempald: it reads every transcript still on disk again; drawers whose transcript is "
                      "gone and whose payload was damaged are lost" if rebuilt else "nothing to repair")
    return report


def _text(r: dict[str, Any]) -> str:
    lines = [f"state database: {r['state']}", f"store: {r['store']}"]
    if "forget_rules_restored" in r:
        lines.append(f"  forget rules restored from the store: {r['forget_rules_restored']}; lost: {r['lost']}")
    if r.get("meta"):
        lines.append(f"  store metadata: {r['meta']}")
    for name, t in r.get("tables", {}).items():
        lines.append(f"  {name}: {t['rows']} rows kept, {t['lost']} lost, {t['damaged_text']} with damaged text")
    if "points_found" in r:
        lines.append(f"  points: {r['points_kept']} of {r['points_found']} kept, "
                     f"{r['points_recovered_from_pages']} recovered from the payload pages, {r['points_lost']} lost, "
                     f"{r['pages_unreadable']} payloads unreadable, {r['dense_dropped']} damaged dense vectors "
                     "dropped (embedded again at start)")
    if r.get("moved_to"):
        lines.append(f"damaged files moved to {r['moved_to']}")
    lines.append(f"cursors dropped: {r['cursors_dropped']}; {r['next']}")
    return "\n".join(lines)


def main_repair(as_json: bool = False) -> int:
    from mempald.lock import instance_lock

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
