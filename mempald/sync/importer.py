"""Reading the other machines' segments: every machine's folder but this one's, each segment by sequence number,
one not seen before (or changed since: a truncated one completed by the sync tool, a conflicted copy) read whole
and applied: drawers upserted under their own ids (their vector kept when it is this model's, else embedded
here), tombstones applied (and remembered, so no later segment brings the drawer back), facts added, rules
added or replaced (checked as ``rule add`` checks them: one that may not be kept is reported in ``sync status``,
not applied) and removed (remembered like a tombstone). Applying
twice changes nothing, so a crash in the middle only repeats work. A segment that cannot be read whole is
recorded with why, and read again when it changes."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio.to_thread

from mempald import logs
from mempald.embed.sparse import Bm25Encoder
from mempald.errors import InvalidInput
from mempald.features.forget import session_rules
from mempald.features.kg import KGError, KnowledgeGraph
from mempald.features.rules import Rules
from mempald.ingest.drawers import index_text
from mempald.ingest.forget_list import ForgetList
from mempald.state.gateway import StateGateway
from mempald.store.base import Filters, PointData, StoreError
from mempald.store.gateway import StoreGateway
from mempald.sync import records as rec
from mempald.sync.folder import Listed, SyncFolder
from mempald.sync.journal import UNRULE, Journal, Seen
from mempald.sync.seal import Sealer, WrongKey
from mempald.sync.segment import Record, SegmentDamaged, decode

log = logs.get("sync")
WRITE = 32  # points per store call
Embed = Callable[[str, float], None]  # queue a drawer for its dense vector (id, ts)


class Importer:
    def __init__(self, store: StoreGateway, state: StateGateway, journal: Journal, kg: KnowledgeGraph,
                 bm25: Bm25Encoder, embed: Embed, model: str, dim: int, forgotten: ForgetList | None = None,
                 rules: Rules | None = None) -> None:
        self.rules = rules  # the rule book rules from other machines go into (None: rule records are left alone)
        self.forgotten = forgotten  # a forget elsewhere keeps its sessions from being stored here again
        self.store = store
        self.state = state
        self.journal = journal
        self.kg = kg
        self.bm25 = bm25
        self.embed = embed
        self.model = model
        self.dim = dim
        self.imported = 0  # drawers imported since start
        self.embedded_here = 0  # ... of which had no vector of this model
        self.rules_imported = 0  # rules added or replaced from other machines since start

    async def scan(self, folder: SyncFolder, sealer: Sealer | None) -> int:
        """Read every segment not read yet (or changed); returns how many were read."""
        seen = await self.state.run(self.journal.seen)
        todo: list[Listed] = []
        for machine in await anyio.to_thread.run_sync(folder.machines):
            if machine == folder.own.name:
                continue
            for s in await anyio.to_thread.run_sync(folder.segments, machine):
                prev = seen.get((machine, s.name))
                if prev is None or prev.size != s.size or prev.mtime_ns != s.mtime_ns:
                    todo.append(s)
        for s in todo:
            await self._read(s, sealer)
        return len(todo)

    async def _read(self, s: Listed, sealer: Sealer | None) -> None:
        status, error, count = "read", "", 0
        try:
            data = await anyio.to_thread.run_sync(s.path.read_bytes)
            segment = await anyio.to_thread.run_sync(decode, data, sealer)
            count = len(segment.records)
            await self.apply(segment.records, segment.seq, s.machine)
        except FileNotFoundError:
            return  # (gone between the listing and the read: the next look sees what is there)
        except SegmentDamaged as exc:
            status, error = "damaged", str(exc)
        except WrongKey as exc:
            status, error = "locked", str(exc)
        except OSError as exc:
            status, error = "damaged", f"not readable: {exc}"
        except StoreError:
            raise  # (the store, not the segment: the round is tried again)
        except Exception as exc:  # a whole segment whose records this version cannot apply: skipped, said
            status, error = "damaged", f"its records could not be applied: {type(exc).__name__}: {exc}"
        if error:
            log.warning("sync_segment_unreadable", machine=s.machine, segment=s.name, error=error)
        mark = Seen(s.machine, s.name, s.seq, s.size, s.mtime_ns, status, error, count)
        await self.state.run(lambda: self.journal.mark(mark))

    async def apply(self, records: Sequence[Record], seq: int = 0, machine: str = "") -> None:
        """Apply a segment's records (``seq``: its number: a drawer already taken from a later segment of its
        machine is not set back by an earlier one read again, such as a conflicted copy; ``machine``: whose)."""
        records = rec.collapsed(records)
        tombs = [r for r in records if r.get("t") == rec.TOMB and isinstance(r.get("id"), str)]
        await self._tombs(tombs)
        drawers = [r for r in records if r.get("t") == rec.DRAWER and isinstance(r.get("id"), str)
                   and isinstance(r.get("payload"), dict)]
        for i in range(0, len(drawers), WRITE):
            await self._drawers(drawers[i:i + WRITE], seq)
        facts = [r for r in records if r.get("t") == rec.FACT]
        if facts:
            await self.state.run(lambda: self._facts(facts))
        if self.rules is not None:
            await self._rules(self.rules, [r for r in records if r.get("t") in (rec.RULE, rec.UNRULE)], seq, machine)

    async def _rules(self, rules: Rules, records: Sequence[Record], seq: int, machine: str) -> None:
        """Rules and their removals, in the segment's order. A rule removed (here or elsewhere) stays removed; a
        rule already taken from a later segment of its machine is not set back."""
        for r in records:
            rid = r.get("id")
            if not isinstance(rid, str) or not rid:
                continue
            key = f"rule:{machine}:{rid}"  # (a rule can change on any machine: its order is per machine)
            if r.get("t") == rec.UNRULE:
                await self.state.run(lambda rid=rid: self.journal.bury([rid], UNRULE))  # type: ignore[misc]
                await rules.remove_synced(rid, by=str(r.get("by") or machine))
                continue
            if await self.state.run(lambda rid=rid, key=key: self.journal.buried([rid]) or  # type: ignore[misc]
                                    self.journal.taken_after([key], seq)):
                continue
            rule = rec.rule_of(r)
            try:
                if rule is None:
                    raise InvalidInput("not a rule record")
                outcome = await rules.import_rule(rule, dry_run=False, notify=False)
            except InvalidInput as exc:
                log.warning("sync_rule_refused", machine=machine, segment=seq, rule=rid, error=str(exc))
                await self.state.run(lambda rid=rid, e=str(exc): self.journal.refuse(  # type: ignore[misc]
                    machine, seq, rid, e))
                continue
            await self.state.run(lambda key=key: self.journal.took([key], seq))  # type: ignore[misc]
            if outcome != "unchanged":
                self.rules_imported += 1

    async def _drawers(self, group: Sequence[Record], seq: int) -> None:
        ids = [str(r["id"]) for r in group]
        buried = await self.state.run(lambda: self.journal.buried(ids))
        newer = await self.state.run(lambda: self.journal.taken_after(ids, seq))
        existing = {p.id: p.payload for p in await self.store.retrieve(ids)}
        points: list[PointData] = []
        later: list[tuple[str, float]] = []
        for r in group:
            pid, payload = str(r["id"]), dict(r["payload"])
            old = existing.get(pid)
            if pid in buried or pid in newer or (old is not None and (old.get("status") == "deleted"
                                                      or old.get("content_hash") == payload.get("content_hash"))):
                continue
            dense = unpack_vector_of(r, self.model, self.dim)
            points.append(PointData(pid, payload, self.bm25.document(index_text(payload)), dense))
            if dense is None:
                later.append((pid, float(payload.get("ts") or 0.0)))
        if points:
            await self.store.upsert(points)
            taken = [p.id for p in points]
            await self.state.run(lambda: self.journal.took(taken, seq))
            self.imported += len(points)
            self.embedded_here += len(later)
            for pid, ts in later:
                self.embed(pid, ts)

    async def _tombs(self, tombs: Sequence[Record]) -> None:
        for op in rec.OPS:
            ids = [str(r["id"]) for r in tombs if r.get("op") == op]
            if not ids:
                continue
            await self.state.run(lambda ids=ids, op=op: self.journal.bury(ids, op))  # type: ignore[misc]
            for i in range(0, len(ids), WRITE):
                chunk = tuple(ids[i:i + WRITE])
                if op == "purge":
                    await self.store.delete(Filters(ids=chunk, include_deleted=True))
                    continue
                first = next(r for r in tombs if r["id"] == chunk[0])
                points = [p for p in await self.store.retrieve(list(chunk)) if p.payload.get("status") != "deleted"]
                live = [p.id for p in points]
                if op == "forget" and points:
                    await self._keep_forgotten([p.payload for p in points], first)
                if live:
                    await self.store.set_payload(live, {
                        "deleted": True, "status": "deleted", "deleted_at": float(first.get("at") or 0.0),
                        "deleted_by": str(first.get("by") or ""), "delete_reason": str(first.get("reason") or ""),
                        "forgotten": op == "forget"})

    async def _keep_forgotten(self, payloads: Sequence[Mapping[str, Any]], tomb: Record) -> None:
        """As the forget did where it ran: one forget-list rule per session, up to when it was forgotten, so a
        transcript of it still on this machine does not store it again."""
        forgotten = self.forgotten
        if forgotten is None:
            return
        rules = session_rules(payloads, float(tomb.get("at") or 0.0) or time.time(), str(tomb.get("by") or "sync"),
                              str(tomb.get("reason") or "forgotten"))
        if rules:
            await self.state.run(lambda: forgotten.add(rules))

    def _facts(self, facts: Sequence[Record]) -> None:
        added: list[int] = []
        for f in facts:
            try:
                t = self.kg.add(str(f.get("subject", "")), str(f.get("predicate", "")), str(f.get("object", "")),
                                valid_from=f.get("valid_from") or None, confidence=float(f.get("confidence", 1.0)),
                                source_drawer=f.get("source_drawer") or None)
            except (KGError, ValueError, TypeError) as exc:
                log.warning("sync_fact_skipped", error=str(exc))
                continue
            added.append(t.id)
        self.journal.imported_facts(added)


def unpack_vector_of(r: Record, model: str, dim: int) -> list[float] | None:
    """A drawer record's dense vector when this model made it, else None (embedded here)."""
    value: Any = r.get("dense")
    return rec.unpack_vector(value, dim) if r.get("model") == model else None
