"""Copy a palace between stores (embedded Qdrant Edge <-> Qdrant server), resumably, then verify the copy.

``migrate(src, dst)`` works on any two ``Store`` implementations:

1. Metadata first: the target's model must match the source's (or the target has none); the source's
   metadata is then written to the target, so a half-copied target already says which model filled it.
2. Every point, soft-deleted ones included, is scrolled from the source in batches and upserted into the target
   with the same id, payload and vectors (dense when present, sparse always). After each batch the scroll
   offset is written to the checkpoint file (atomically), so an interrupted run resumes where it stopped;
   re-copying a batch is harmless because ids are kept and upserts overwrite.
3. Verification: every source id must exist in the target (counted per batch with an id filter, which stays
   exact even when the target collection is shared with other machines), and a random sample of points must
   have equal payloads, dense vectors within 1e-5 and equal sparse vectors.

The source should not change while it is copied (stop the daemon, or let it run the migration itself):
points written to the source behind the scroll cursor are not copied, and the verification will say so.

The target is named by ``open_target``: a URL, or an absolute folder (an empty or relative name is refused: it
once copied the palace into the daemon's working directory). A folder target is the owner's only, as the palace
it copies (0700 folders, 0600 files, whatever it held before).
"""

from __future__ import annotations

import json
import os
import random
import stat
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mempald import logs
from mempald.config import Settings
from mempald.errors import InvalidInput
from mempald.store.base import Filters, PointData, SparseVec, Store, StoredPoint, StoreError

log = logs.get("migrate")

CHECKPOINT_VERSION = 1
DENSE_TOLERANCE = 1e-5
ALL = Filters(include_deleted=True)
VERIFY_BATCH = 512


def target_spec(raw: str) -> str:
    """The migration target as ``open_location`` takes it, checked: a URL as given, a folder made absolute by
    ``~`` only. Raises ``InvalidInput`` for an empty or relative folder."""
    spec = raw.strip()
    if not spec:
        raise InvalidInput("migrate needs a target: http(s)://host:6333, path:/dir, or an absolute folder")
    if spec.startswith(("http://", "https://")) or spec == ":memory:":
        return spec
    prefix = next((x for x in ("path:", "edge:") if spec.startswith(x)), "")
    folder = Path(spec[len(prefix):]).expanduser()
    if not folder.is_absolute():
        raise InvalidInput(f"the target folder must be an absolute path, got {raw!r}")
    return f"{prefix}{os.path.normpath(folder)}"


def local_folder(location: str) -> Path | None:
    """The folder behind a store's ``location`` when it is on this machine (an embedded store, a qdrant-client
    local path), else None."""
    if location.startswith("edge:"):
        return Path(location[len("edge:"):])
    if location.startswith("server:path:"):
        return Path(location[len("server:path:"):].rsplit("/", 1)[0])
    return None


def owner_only_tree(root: Path) -> None:
    """Take group and other permissions off every folder and file under ``root`` (those of this user)."""
    uid = os.getuid()
    for dirpath, _dirnames, filenames in os.walk(root):  # (links to folders are not followed)
        for name in [dirpath, *(os.path.join(dirpath, f) for f in filenames)]:
            try:
                st = os.lstat(name)
                if st.st_uid == uid and st.st_mode & 0o077 and not stat.S_ISLNK(st.st_mode):
                    os.chmod(name, stat.S_IMODE(st.st_mode) & ~0o077)
            except OSError:
                continue


def open_target(raw: str, settings: Settings, dim: int) -> Store:
    """Open the store a migration copies into (``target_spec`` checks its name), owner-only when local."""
    from mempald.store.locate import open_location

    store = open_location(target_spec(raw), settings, dim)
    folder = local_folder(store.location)
    if folder is not None:
        owner_only_tree(folder)
    return store


@dataclass(frozen=True, slots=True)
class MigrateReport:
    source: str
    target: str
    source_count: int  # points in the source (soft-deleted included)
    target_count: int  # points in the target afterwards (may be more: a shared collection, earlier data)
    copied: int  # points written by this run
    resumed_from: int  # points already copied by an interrupted run (0 when starting fresh)
    missing: int  # source ids absent from the target
    sampled: int
    mismatched: tuple[str, ...] = ()  # sampled ids whose payload or vectors differ
    seconds: float = 0.0
    problems: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.missing == 0 and not self.mismatched and not self.problems


@dataclass(slots=True)
class _Checkpoint:
    path: Path | None
    source: str
    target: str
    offset: str | None = None
    copied: int = 0
    done: bool = False

    @classmethod
    def load(cls, path: Path | None, source: str, target: str) -> _Checkpoint:
        fresh = cls(path, source, target)
        if path is None:
            return fresh
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return fresh
        except (OSError, ValueError) as exc:
            log.warning("migrate.checkpoint_unreadable", path=str(path), error=str(exc))
            return fresh
        if (not isinstance(data, dict) or data.get("version") != CHECKPOINT_VERSION
                or data.get("source") != source or data.get("target") != target):
            # Another migration's checkpoint: start over (copying is idempotent, only time is lost).
            log.warning("migrate.checkpoint_ignored", path=str(path), reason="written for another source or target")
            return fresh
        offset = data.get("offset")
        copied = data.get("copied")
        return cls(path, source, target, offset=offset if isinstance(offset, str) else None,
                   copied=copied if isinstance(copied, int) and copied >= 0 else 0, done=data.get("done") is True)

    def save(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        body = {"version": CHECKPOINT_VERSION, "source": self.source, "target": self.target,
                "offset": self.offset, "copied": self.copied, "done": self.done, "saved_at": time.time()}
        tmp.write_text(json.dumps(body, indent=2), encoding="utf-8")
        os.replace(tmp, self.path)

    def remove(self) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)


def migrate(
    src: Store,
    dst: Store,
    *,
    batch: int = 256,
    progress: Callable[[int, int], None] | None = None,
    checkpoint: Path | None = None,
    sample: int = 50,
    seed: int | None = None,
) -> MigrateReport:
    """Copy every point of ``src`` into ``dst`` and verify; see the module docstring.

    ``progress(done, total)`` is called after each batch is durable in the target (an exception it raises stops
    the copy; the checkpoint already covers that batch). The checkpoint is removed once the copy has been verified,
whatever the verdict: a failed verification (``report.ok`` false) means the next run copies everything again.
    Raises ``StoreError`` when the stores are the same or hold vectors from different models.
    """
    if batch < 1:
        raise ValueError("batch must be at least 1")
    if src.location == dst.location:
        raise StoreError(f"source and target are the same store ({src.location})")
    started = time.monotonic()
    _copy_meta(src, dst)
    total = src.count(ALL)
    ckpt = _Checkpoint.load(checkpoint, src.location, dst.location)
    resumed_from = ckpt.copied
    if resumed_from or ckpt.done:
        log.info("migrate.resume", source=src.location, target=dst.location, copied=ckpt.copied, done=ckpt.done)
    copied = 0
    if not ckpt.done:
        copied = _copy_points(src, dst, ckpt, batch, total, progress)
    elif progress is not None:
        progress(ckpt.copied, total)
    report = _verify(src, dst, total, copied, resumed_from, sample, seed, started)
    folder = local_folder(dst.location)
    if folder is not None:
        owner_only_tree(folder)
    # Verified or not, this copy is finished: a failed verification makes the next run copy everything again.
    ckpt.remove()
    if not report.ok:
        log.warning("migrate.verify_failed", source=src.location, target=dst.location, missing=report.missing,
                    mismatched=len(report.mismatched), problems=list(report.problems))
    log.info("migrate.done", source=src.location, target=dst.location, copied=copied, total=total, ok=report.ok,
             seconds=round(report.seconds, 2))
    return report


def _copy_meta(src: Store, dst: Store) -> None:
    src_meta = src.get_meta()
    dst_meta = dst.get_meta()
    for key in ("model", "dim", "tokenizer"):  # tokenizer: what made the keyword vectors (embed/sparse.py)
        have, want = dst_meta.get(key), src_meta.get(key)
        if have is not None and want is not None and have != want:
            raise StoreError(
                f"the target {dst.location} was filled with {key} {have!r} but the source {src.location} with "
                f"{want!r}: migrate into an empty target (another collection or folder), or reindex one side first"
            )
    if src_meta and src_meta != dst_meta:
        dst.set_meta(src_meta)


def _copy_points(
    src: Store, dst: Store, ckpt: _Checkpoint, batch: int, total: int, progress: Callable[[int, int], None] | None
) -> int:
    copied = 0
    offset = ckpt.offset
    while True:
        page, nxt = src.scroll(ALL, batch, offset, with_vectors=True)
        if page:
            dst.upsert([_point_data(p) for p in page])
            copied += len(page)
        dst.flush()
        offset = nxt
        ckpt.offset = nxt
        ckpt.copied += len(page)
        ckpt.done = nxt is None
        ckpt.save()
        if progress is not None:
            progress(ckpt.copied, max(total, ckpt.copied))
        if nxt is None:
            return copied


def _point_data(p: StoredPoint) -> PointData:
    return PointData(p.id, dict(p.payload), p.sparse if p.sparse is not None else SparseVec((), ()), p.dense)


def _verify(
    src: Store, dst: Store, total: int, copied: int, resumed_from: int, sample: int, seed: int | None,
    started: float,
) -> MigrateReport:
    ids: list[str] = []
    missing = 0
    offset: str | None = None
    while True:
        page, offset = src.scroll(ALL, VERIFY_BATCH, offset)
        chunk = tuple(p.id for p in page)
        if chunk:
            missing += len(chunk) - dst.count(Filters(ids=chunk, include_deleted=True))
            ids.extend(chunk)
        if offset is None:
            break
    problems: list[str] = []
    if len(ids) != total:
        problems.append(f"the source changed during the migration ({total} points counted, {len(ids)} scrolled)")
    target_count = dst.count(ALL)
    if target_count < len(ids) - missing:
        problems.append(f"the target counts {target_count} points, fewer than the {len(ids) - missing} found by id")
    picked = random.Random(seed).sample(ids, min(sample, len(ids))) if sample > 0 else []
    mismatched: list[str] = []
    for i in range(0, len(picked), 64):
        part = picked[i : i + 64]
        a = {p.id: p for p in src.retrieve(part, with_vectors=True)}
        b = {p.id: p for p in dst.retrieve(part, with_vectors=True)}
        mismatched += [pid for pid in part if pid in a and pid in b and not same_point(a[pid], b[pid])]
    return MigrateReport(
        source=src.location, target=dst.location, source_count=total, target_count=target_count, copied=copied,
        resumed_from=resumed_from, missing=missing, sampled=len(picked), mismatched=tuple(mismatched),
        seconds=time.monotonic() - started, problems=tuple(problems),
    )


def same_point(a: StoredPoint, b: StoredPoint, tol: float = DENSE_TOLERANCE) -> bool:
    """Equal payloads, dense vectors within ``tol`` (both absent counts as equal), equal sparse vectors."""
    return _same_payload(a.payload, b.payload) and _same_dense(a.dense, b.dense, tol) and _same_sparse(
        a.sparse, b.sparse, tol)


def _same_payload(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return json.dumps(dict(a), sort_keys=True, default=str) == json.dumps(dict(b), sort_keys=True, default=str)


def _same_dense(a: Sequence[float] | None, b: Sequence[float] | None, tol: float) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return len(a) == len(b) and all(abs(float(x) - float(y)) <= tol for x, y in zip(a, b, strict=True))


def _same_sparse(a: SparseVec | None, b: SparseVec | None, tol: float) -> bool:
    da = dict(zip(a.indices, a.values, strict=True)) if a is not None else {}
    db = dict(zip(b.indices, b.values, strict=True)) if b is not None else {}
    return da.keys() == db.keys() and all(abs(da[k] - db[k]) <= tol for k in da)
