"""``mempal forget``: every drawer of a transcript, a session or a wing (and room), soft-deleted in one audited
step and kept forgotten (the forget list, ``mempald.ingest.forget_list``).

The answer says what the selection holds (drawers by wing and room, sessions, transcripts) before anything is
changed; ``dry_run`` stops there. A forget is audited once (who, when, why, what), and ``purge`` removes the
soft-deleted drawers for good. ``reingest`` is the way back: the selection's drawers whose transcript is still on
disk are removed for good, the rules that covered them are lifted, and the transcripts are read again from the
start (the same drawer ids); drawers whose transcript is gone cannot be read again and are forgotten as usual.
"""

from __future__ import annotations

import functools
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread

from mempald.archive import views as archive_views
from mempald.archive.keeper import Archive
from mempald.embed.sparse import Bm25Encoder
from mempald.errors import InvalidInput
from mempald.ingest.drawers import CONTEXT_CHARS, index_text
from mempald.ingest.forget_list import MIRROR_KEY, NOT_FROM_FILES, ForgetList, Rule, from_file
from mempald.ingest.ingestor import Ingestor
from mempald.ingest.queues import BACKFILL, FRESH, DenseQueue
from mempald.ingest.writer import Changes
from mempald.sources.catalog import SourceSet
from mempald.sources.roots import Source
from mempald.state.gateway import StateGateway
from mempald.store.base import Filters, PointData, StoredPoint
from mempald.store.gateway import StoreGateway

BATCH = 500
KEPT = ("session_id", "source_path", "wing", "room", "ts", "status")  # what a forget keeps of each drawer


def session_rules(matched: Sequence[Mapping[str, Any]], until: float, actor: str, reason: str, *, wing: str = "",
                  room: str = "") -> list[Rule]:
    """One rule per session of ``matched`` read from a transcript (a wing's forget, an exclusion's)."""
    now = time.time()
    paths: dict[str, set[str]] = {}
    for p in matched:
        if from_file(p) and p.get("session_id"):
            paths.setdefault(str(p["session_id"]), set()).add(str(p["source_path"]))
    return [Rule("", session, wing, room, until, now, actor, reason, tuple(sorted(found)))
            for session, found in sorted(paths.items())]


@dataclass(frozen=True, slots=True)
class Selection:
    """What a forget names: a transcript, a session or a wing, narrowed by room and time."""

    source: str = ""
    session: str = ""
    wing: str = ""
    room: str = ""
    before: float | None = None

    def check(self) -> None:
        if not (self.source or self.session or self.wing):
            raise InvalidInput("say what to forget: --source PATH, --session ID or --wing W (with --room R, "
                               "--before DATE to narrow it)")
        if self.source and not os.path.isabs(self.source):
            raise InvalidInput(f"source must be an absolute path: {self.source!r}")

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in (("source", self.source), ("session", self.session), ("wing", self.wing),
                                  ("room", self.room), ("before", self.before)) if v}

    def rules(self, matched: Sequence[Mapping[str, Any]], until: float, actor: str, reason: str) -> list[Rule]:
        """The forget list's rules for this selection: one, or one per session a wing's forget touched."""
        if not (self.source or self.session):
            return session_rules(matched, until, actor, reason, wing=self.wing, room=self.room)
        paths = {str(p["source_path"]) for p in matched if from_file(p)} | ({self.source} if self.source else set())
        return [Rule(self.source, self.session, self.wing, self.room, until, time.time(), actor, reason,
                     tuple(sorted(paths)))]


def summary(matched: Sequence[Mapping[str, Any]], listed: int = 20) -> dict[str, Any]:
    """Counts of a forget's drawers (by wing, room, session, transcript), for the answer shown first."""
    wings: Counter[str] = Counter(str(p.get("wing") or "") for p in matched)
    rooms: Counter[str] = Counter(str(p.get("room") or "") for p in matched)
    sessions = {str(p.get("session_id") or "") for p in matched}
    sources = sorted({str(p.get("source_path") or "") for p in matched})
    return {"drawers": len(matched), "wings": dict(wings.most_common()), "rooms": dict(rooms.most_common()),
            "sessions": len(sessions), "sources": len(sources), "source_paths": sources[:listed]}


async def on_disk(paths: Iterable[str]) -> set[str]:
    """Which of ``paths`` (transcripts) are still there to be read again."""
    wanted = sorted({p for p in paths if p and not p.startswith(NOT_FROM_FILES)})
    return set(await anyio.to_thread.run_sync(lambda: [p for p in wanted if os.path.exists(p)]))


@dataclass(frozen=True, slots=True)
class Matched:
    id: str
    payload: Mapping[str, Any]


async def drop_archived(archive: Archive | None, matched: Sequence[Matched]) -> dict[str, int]:
    """Forget means forget: the archived transcripts (every version) of the sessions and files forgotten are
    removed, and not archived again while the forget stands (``mempald.archive``)."""
    if archive is None:
        return {"files": 0, "bytes": 0}
    paths = {str(m.payload.get("source_path") or "") for m in matched if from_file(m.payload)}
    sessions = {str(m.payload.get("session_id") or "") for m in matched if from_file(m.payload)}
    return await anyio.to_thread.run_sync(functools.partial(
        archive_views.remove, archive, paths=paths - {""}, sessions=sessions - {""}))


class Forgetter:
    def __init__(self, store: StoreGateway, state: StateGateway, forgotten: ForgetList, sources: SourceSet,
                 ingestor: Ingestor, bm25: Bm25Encoder, dense: DenseQueue) -> None:
        self.store = store
        self.state = state
        self.forgotten = forgotten
        self.sources = sources
        self.ingestor = ingestor
        self.bm25 = bm25
        self.dense = dense
        self.changes: Changes | None = None  # told what was forgotten (the sync's tombstones; None: nobody)

    async def mirror_rules(self) -> None:
        """Copy the forget list into the store's metadata (``forget_list.mirrored_rules``), when it differs."""
        meta = await self.store.get_meta()
        rules = [r.to_dict() for r in self.forgotten.rules()]
        if meta.get(MIRROR_KEY, []) != rules:
            await self.store.set_meta({**meta, MIRROR_KEY: rules})

    async def _match(self, flt: Filters, keep: Callable[[Mapping[str, Any]], bool] | None = None) -> list[Matched]:
        out: list[Matched] = []
        async for page in self.store.pages(flt, BATCH):
            out += [Matched(p.id, {k: p.payload.get(k) for k in KEPT}) for p in page if keep is None or keep(p.payload)]
        return out

    async def forget(self, sel: Selection, *, dry_run: bool, reingest: bool, actor: str,
                     reason: str, all_machines: bool = False) -> dict[str, Any]:
        """Forget what ``sel`` names (module docstring); the answer starts with what it holds. In a store other
        machines' daemons share, only this machine's drawers unless ``all_machines``."""
        sel.check()
        mine = (self.ingestor.machine,) if self.store.shared and not all_machines else ()
        flt = Filters(source_path=(sel.source,) if sel.source else (), session_id=(sel.session,) if sel.session else (),
                      wing=(sel.wing,) if sel.wing else (), room=(sel.room,) if sel.room else (), until=sel.before,
                      include_deleted=reingest, machine=mine)
        matched = await self._match(flt)
        result: dict[str, Any] = {"selection": sel.to_dict(), **summary([m.payload for m in matched]),
                                  "dry_run": dry_run, "reingest": reingest}
        if dry_run:
            if reingest:
                result["on_disk"] = len(await on_disk(m.payload.get("source_path") or "" for m in matched))
            return result
        until = sel.before if sel.before is not None else time.time()
        if not reingest:
            result.update(await self._forget(matched, sel.rules([m.payload for m in matched], until, actor, reason),
                                             actor, reason, sel.to_dict()))
            return result
        present = await on_disk(str(m.payload.get("source_path") or "") for m in matched)
        result["on_disk"] = len(present)
        again = [m for m in matched if m.payload.get("source_path") in present]
        gone = [m for m in matched if m.payload.get("source_path") not in present
                and m.payload.get("status") != "deleted"]
        if gone:
            result["gone"] = await self._forget(gone, sel.rules([m.payload for m in gone], until, actor, reason),
                                                actor, reason, sel.to_dict())
        result["reread"] = await self._reingest(sel, again, actor, reason)
        return result

    async def forget_where(self, keep: Callable[[Mapping[str, Any]], bool], label: str, *, dry_run: bool,
                           actor: str, reason: str) -> dict[str, Any]:
        """Forget every stored drawer ``keep`` accepts (what an exclusion rule names); each session it touched
        gets a rule, as a wing's forget does."""
        # (an exclusion names this machine's paths: its drawers only; what it forgets travels as tombstones)
        chosen = await self._match(Filters(machine=(self.ingestor.machine,)), lambda p: from_file(p) and keep(p))
        result: dict[str, Any] = {"selection": {"rule": label}, **summary([m.payload for m in chosen]),
                                  "dry_run": dry_run}
        if dry_run or not chosen:
            return result
        rules = session_rules([m.payload for m in chosen], time.time(), actor, reason)
        result.update(await self._forget(chosen, rules, actor, reason, {"rule": label}))
        return result

    async def _forget(self, matched: Sequence[Matched], rules: Sequence[Rule], actor: str, reason: str,
                      what: Mapping[str, Any]) -> dict[str, Any]:
        """Rules first (a drawer written meanwhile is already covered), then the soft delete, their copy in the
        store's metadata, then the audit."""
        await self.state.run(lambda: self.forgotten.add(rules))
        now = time.time()
        ids = [m.id for m in matched]
        for i in range(0, len(ids), BATCH):
            await self.store.set_payload(ids[i : i + BATCH], {
                "deleted": True, "status": "deleted", "deleted_at": now, "deleted_by": actor,
                "delete_reason": reason or "forgotten", "forgotten": True})
        if self.changes is not None:  # (tombstones for the other machines)
            await self.changes.removed(ids, "forget", {"at": now, "by": actor, "reason": reason or "forgotten"})
        await self.mirror_rules()
        mended = await self._mend_contexts({(str(m.payload.get("session_id") or ""),
                                             str(m.payload.get("source_path") or "")) for m in matched})
        archived = await drop_archived(self.ingestor.archive, matched)
        target = " ".join(f"{k}={v}" for k, v in what.items())
        await self.state.audit(actor, "forget", target, reason, drawers=len(ids), rules=len(rules),
                               archive_files_removed=archived["files"], archive_bytes_removed=archived["bytes"],
                               **dict(what))
        return {"forgotten": len(ids), "rules": len(rules), "contexts_mended": mended, "archive_removed": archived}

    async def _mend_contexts(self, sessions: Iterable[tuple[str, str]]) -> int:
        """A live drawer that follows a forgotten one in its session was indexed with the forgotten text as its
        context: it gets the text of the last live drawer before it instead (none if there is none), and its
        vectors are computed again. Nothing forgotten stays searchable through a neighbour."""
        mended: list[PointData] = []
        for session, source in sorted(sessions):
            rows: list[StoredPoint] = []
            async for page in self.store.pages(Filters(session_id=(session,), source_path=(source,),
                                                       include_deleted=True), BATCH):
                rows += page
            rows.sort(key=lambda p: (int(p.payload.get("position") or 0), int(p.payload.get("chunk_index") or 0)))
            after_forgotten, last_live = False, ""
            for p in rows:
                if p.payload.get("status") == "deleted":
                    after_forgotten = True
                    continue
                want = last_live[-CONTEXT_CHARS:] if last_live else None
                if after_forgotten and p.payload.get("context") != want:
                    payload = {k: v for k, v in p.payload.items() if k != "context"}
                    if want:
                        payload["context"] = want
                    mended.append(PointData(p.id, payload, self.bm25.document(index_text(payload))))
                after_forgotten, last_live = False, str(p.payload.get("text") or "")
        for i in range(0, len(mended), 32):
            await self.store.upsert(mended[i : i + 32])
        for pt in mended:
            self.dense.put(pt.id, float(pt.payload.get("ts") or 0.0), BACKFILL)
        return len(mended)

    async def _reingest(self, sel: Selection, again: Sequence[Matched], actor: str, reason: str) -> dict[str, Any]:
        sessions = {str(m.payload.get("session_id") or "") for m in again}
        sources = {str(m.payload.get("source_path") or "") for m in again}
        chosen = [r for r in self.forgotten.rules() if r.session in sessions or (r.source and r.source in sources)
                  or _named(r, sel)]
        lifted = await self.state.run(lambda: self.forgotten.lift(chosen))
        await self.mirror_rules()
        files = sorted(sources | set(await on_disk(p for r in lifted for p in r.paths)))
        ids = [m.id for m in again]
        for i in range(0, len(ids), BATCH):
            await self.store.delete(Filters(ids=tuple(ids[i : i + BATCH]), include_deleted=True))
        out: dict[str, Any] = {"removed": len(ids), "lifted": len(lifted), "files": 0, "exchanges": 0,
                               "drawers": 0, "errors": []}
        for f in files:
            await self._read_again(Path(f), out)
        await self.state.audit(actor, "forget-reingest", " ".join(f"{k}={v}" for k, v in sel.to_dict().items()), reason,
                               removed=len(ids), files=len(files))
        return out

    async def _read_again(self, path: Path, out: dict[str, Any]) -> None:
        source = self.sources.source_for(path) or Source(f"convos:{path.parent}", path.parent, "convos", "auto",
                                                         exclude=self.sources.exclude)
        await self.state.drop_cursor(str(path))
        while True:
            res = await self.ingestor.ingest_path(path, source, FRESH)
            out["exchanges"] += res.exchanges
            out["drawers"] += res.drawers
            if res.error or not res.more:
                break
        out["files"] += 1
        if res.error:
            out["errors"].append(f"{path}: {res.error}")


def _named(rule: Rule, sel: Selection) -> bool:
    """Was ``rule`` made by a forget of this selection (so ``reingest`` of it lifts it)?"""
    return bool((sel.source and rule.source == sel.source) or (sel.session and rule.session == sel.session)
                or (sel.wing and rule.wing == sel.wing and (not sel.room or rule.room == sel.room)))
