"""Reading what survives of a damaged state database or store (``mempald repair``, ``mempald doctor``).

- The state database: SQLite's own check (``quick_check``) and a strict read of every row; a damaged file is
  copied, its header's magic string and page size restored if they were hit, and every row that can still be
  read is copied into a new file, table by table (row by row where a page is broken).
- The store: its live shard loaded, every point listed without payload, then read back with payload and
  vectors in small batches (one by one where a batch fails); what reads is upserted into a new shard. A point
  whose payload is damaged is lost from the store; if its transcript is still on disk it is read again.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mempald.state.db import quick_check, unreadable_text
from mempald.store.base import StoreError

MAGIC = b"SQLite format 3\x00"
PAGE = 1000  # ids listed per scroll
BATCH = 64  # points read back per call


# the state database --------------------------------------------------------------------------------------
def state_problems(path: Path) -> list[str]:
    """What is wrong with the state database at ``path`` ([] when nothing): structure, then text."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    except sqlite3.Error as exc:
        return [f"cannot open: {exc}"]
    try:
        problems = quick_check(conn)
        return problems or unreadable_text(conn)
    except sqlite3.Error as exc:
        return [str(exc)]
    finally:
        conn.close()


def readable_copy(src: Path, dst: Path) -> Path:
    """Copy the database (and its WAL) to ``dst``, restoring a header's magic string and page size if a flip
    hit them, so SQLite will open it."""
    shutil.copy2(src, dst)
    for suffix in ("-wal", "-shm"):
        side = src.with_name(src.name + suffix)
        if side.exists():
            shutil.copy2(side, dst.with_name(dst.name + suffix))
    with dst.open("r+b") as fh:
        head = fh.read(18)
        if head[:16] != MAGIC:
            fh.seek(0)
            fh.write(MAGIC)
        size = int.from_bytes(head[16:18], "big") if len(head) == 18 else 0
        if size != 1 and (size < 512 or size & (size - 1)):
            fh.seek(16)
            fh.write((4096).to_bytes(2, "big"))
    return dst


class _Text(bytes):
    """A TEXT value as stored (its bytes), so damaged UTF-8 can be told from a BLOB."""


@dataclass
class TableCopy:
    rows: int = 0
    lost: int = 0
    damaged_text: int = 0


def _rows(conn: sqlite3.Connection, table: str) -> Iterator[tuple[Any, ...]]:
    """Every row that can be read: the whole table at once, else rowid by rowid up to the largest rowid."""
    try:
        yield from conn.execute(f'SELECT * FROM "{table}"').fetchall()
        return
    except sqlite3.DatabaseError:
        pass
    try:
        top = int(conn.execute(f'SELECT max(rowid) FROM "{table}"').fetchone()[0] or 0)
    except sqlite3.DatabaseError:
        top = 1_000_000
    for rowid in range(1, top + 1):
        try:
            row = conn.execute(f'SELECT * FROM "{table}" WHERE rowid = ?', (rowid,)).fetchone()
        except sqlite3.DatabaseError:
            continue
        if row is not None:
            yield row


def copy_rows(src: sqlite3.Connection, dst: sqlite3.Connection, strict: Callable[[str], bool]) -> dict[str, TableCopy]:
    """Copy every readable row of every table of ``src`` into ``dst`` (tables created as ``src`` declares
    them). Text that is no longer UTF-8 is kept with replacement characters, except in tables ``strict`` names,
    whose damaged rows are dropped (cursors: a dropped cursor only means the file is read again)."""
    src.text_factory = _Text  # TEXT comes back undecoded (and told apart from BLOBs): decoded below
    out: dict[str, TableCopy] = {}
    try:
        schema = src.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL").fetchall()
    except sqlite3.DatabaseError:
        return out
    for raw_kind, raw_name, raw_sql in schema:
        kind, name, sql = (bytes(x).decode(errors="replace") for x in (raw_kind, raw_name, raw_sql))
        if name.startswith("sqlite_"):
            continue
        try:
            dst.execute(sql.replace("CREATE TABLE ", "CREATE TABLE IF NOT EXISTS ", 1).replace(
                "CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ", 1))
        except sqlite3.Error:
            continue
        if kind != "table":
            continue
        copy = out[name] = TableCopy()
        for row in _rows(src, name):
            values: list[Any] = []
            damaged = False
            for value in row:
                if isinstance(value, _Text):
                    try:
                        values.append(bytes(value).decode("utf-8"))
                    except UnicodeDecodeError:
                        damaged = True
                        values.append(bytes(value).decode("utf-8", "replace"))
                else:
                    values.append(value)
            if damaged and strict(name):
                copy.lost += 1
                continue
            copy.damaged_text += damaged
            marks = ",".join("?" * len(values))
            try:
                dst.execute(f'INSERT OR REPLACE INTO "{name}" VALUES ({marks})', values)
                copy.rows += 1
            except sqlite3.Error:
                copy.lost += 1
    return out


# the store ------------------------------------------------------------------------------------------------
@dataclass
class StoreRead:
    points: int = 0  # points listed
    read: int = 0  # points read back whole
    lost: list[str] = field(default_factory=list)  # ids whose payload or vectors could not be read
    error: str = ""  # why the shard could not be loaded or listed (then nothing was read)


def read_shard(shard_dir: Path, sink: Callable[[list[Any]], object] | None = None) -> StoreRead:
    """Read every point of the shard in ``shard_dir``, handing each readable batch (qdrant_edge records, with
    payload and vectors) to ``sink``. Never raises: what fails is counted."""
    import qdrant_edge as qe

    from mempald.store.edge import hold_lock, release_lock

    res = StoreRead()
    try:
        lock = hold_lock(shard_dir.parent / f".{shard_dir.name}.lock", shard_dir)  # as every opener of a shard
    except StoreError as exc:
        res.error = str(exc)
        return res
    try:
        shard = qe.EdgeShard.load(str(shard_dir))
    except Exception as exc:
        release_lock(lock)
        res.error = f"cannot load {shard_dir}: {exc}"
        return res
    try:
        ids: list[Any] = []
        offset = None
        while True:
            try:
                recs, offset = shard.scroll(qe.ScrollRequest(offset=offset, limit=PAGE, with_payload=False,
                                                             with_vector=False))
            except Exception as exc:
                res.error = f"cannot list the points of {shard_dir}: {exc}"
                break
            ids.extend(r.id for r in recs)
            if offset is None:
                break
        res.points = len(ids)
        for i in range(0, len(ids), BATCH):
            part = ids[i : i + BATCH]
            try:
                got = shard.retrieve(part, with_payload=True, with_vector=True)
            except Exception:
                got = []
                for pid in part:
                    try:
                        got += shard.retrieve([pid], with_payload=True, with_vector=True)
                    except Exception:
                        res.lost.append(str(pid))
            res.read += len(got)
            if sink is not None and got:
                sink(got)
        try:  # a store whose segments were deleted opens, but has lost the indexes every store is made with
            shard.facet(qe.FacetRequest(key="wing", limit=1, exact=True, filter=None))
        except Exception as exc:
            res.error = res.error or f"{shard_dir} has lost its payload indexes: {exc}"
    finally:
        try:
            shard.close()
        finally:
            release_lock(lock)
    return res


def point_data(rec: Any) -> Any:
    """A qdrant_edge record as the store's ``PointData`` (the dense vector may be missing: re-embedded)."""
    from mempald.store.base import DENSE, SPARSE, PointData, SparseVec

    vec = rec.vector if isinstance(rec.vector, dict) else {}
    sparse = vec.get(SPARSE)
    dense = vec.get(DENSE)
    sv = SparseVec(tuple(sparse.indices), tuple(sparse.values)) if sparse is not None else SparseVec((), ())
    return PointData(str(rec.id), dict(rec.payload or {}), sv, list(dense) if dense is not None else None)


@dataclass
class ShardScan:
    """What a ``read_shard`` sink saw: the ids, the transcripts cited, and the dense vectors that are damaged
    (not finite, or not of unit length as a cosine store keeps them: random bytes in the vector storage). A
    damaged dense vector is dropped from what ``add`` returns: the daemon embeds that drawer's text again."""

    ids: set[str] = field(default_factory=set)
    cited: set[str] = field(default_factory=set)
    bad_dense: list[str] = field(default_factory=list)
    exchanges: dict[str, set[str]] = field(default_factory=dict)  # source path -> the exchanges stored of it

    def add(self, recs: list[Any]) -> list[Any]:
        from mempald.store.edge_files import unit_vector

        out = []
        cited_paths(recs, self.cited)
        for rec in recs:
            p = point_data(rec)
            self.ids.add(p.id)
            path, key = p.payload.get("source_path"), p.payload.get("exchange_key")
            if isinstance(path, str) and isinstance(key, str):
                self.exchanges.setdefault(path, set()).add(key)
            if p.dense is not None and not unit_vector(list(p.dense)):
                self.bad_dense.append(p.id)
                p = replace(p, dense=None)
            out.append(p)
        return out


def payload_id(payload: dict[str, Any]) -> str | None:
    """The id mempald gives a drawer with this payload (``None`` when the payload lacks what it is made of)."""
    from mempald.ingest.drawers import drawer_id

    parts = [payload.get(k) for k in ("machine", "source_kind", "session_id", "exchange_key")]
    chunk = payload.get("chunk_index")
    if not all(isinstance(p, str) and p for p in parts) or not isinstance(chunk, int):
        return None
    machine, kind, session, key = (str(p) for p in parts)
    return drawer_id(machine, kind, session, key, chunk)


def cited_paths(recs: list[Any], into: set[str]) -> None:
    """Collect the ``source_path`` of each record (a ``read_shard`` sink)."""
    for r in recs:
        path = (r.payload or {}).get("source_path")
        if isinstance(path, str):
            into.add(path)


def unbacked_cursors(state_path: Path, cited: set[str]) -> list[str]:
    """Files the state database says were read into the store (a cursor with exchanges) of which no drawer is
    left: the store lost them (a deleted segment, say), and only reading them again brings them back."""
    try:
        conn = sqlite3.connect(f"file:{state_path}?mode=ro", uri=True, timeout=10)
    except sqlite3.Error:
        return []
    try:
        rows = conn.execute("SELECT path FROM cursors WHERE exchanges > 0").fetchall()
    except sqlite3.Error:
        return []
    finally:
        conn.close()
    return sorted(str(r[0]) for r in rows if str(r[0]) not in cited)


def short_cursors(state_path: Path, stored: dict[str, set[str]]) -> list[str]:
    """Files the state database says were read into the store with more exchanges than the store holds now: it
    lost some of their drawers (reading them again brings those back; an exchange without a drawer, or a purged
    one, only costs that file a re-read, since drawer ids are deterministic and forget rules hold)."""
    try:
        conn = sqlite3.connect(f"file:{state_path}?mode=ro", uri=True, timeout=10)
    except sqlite3.Error:
        return []
    try:
        rows = conn.execute("SELECT path, exchanges FROM cursors WHERE exchanges > 0").fetchall()
    except sqlite3.Error:
        return []
    finally:
        conn.close()
    return sorted(str(path) for path, n in rows if len(stored.get(str(path), ())) < int(n))
