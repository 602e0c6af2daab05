"""Writing this machine's segments: what the outbox holds (drawers just stored, tombstones of what was
forgotten, deleted or purged, rules added, replaced or removed) and the knowledge graph's new facts, read back
from the store and the state database (as stored: redacted), written as one whole segment under the next
sequence number, then taken out of the outbox. A crash before the rename leaves only a temporary file (removed at
the next start) and the outbox as it was; a crash after it writes the same drawers again in the next segment, and
readers collapse them by id."""

from __future__ import annotations

import time
from collections.abc import Sequence

import anyio.to_thread

from mempald import logs
from mempald.features.kg import KnowledgeGraph, Triple
from mempald.features.rule_book import RuleBook
from mempald.state.gateway import StateGateway
from mempald.store.gateway import StoreGateway
from mempald.sync import records as rec
from mempald.sync.folder import SyncFolder
from mempald.sync.journal import DRAWER, RULE, Journal, Pending
from mempald.sync.seal import Sealer
from mempald.sync.segment import Record, drop_unfinished, encode, name_of, write_whole

log = logs.get("sync")
BATCH = 2000  # records per segment at most
READ = 32  # points per store call
SEQ = "seq"
FACT = "fact"


class Exporter:
    def __init__(self, store: StoreGateway, state: StateGateway, journal: Journal, kg: KnowledgeGraph,
                 model: str, rules: RuleBook | None = None) -> None:
        self.kg = kg
        self.rules = rules
        self.store = store
        self.state = state
        self.journal = journal
        self.model = model
        self.written = 0  # segments written since start

    async def start(self, folder: SyncFolder) -> None:
        await anyio.to_thread.run_sync(drop_unfinished, folder.own)

    async def flush(self, folder: SyncFolder, sealer: Sealer | None, dense_wait_s: float) -> int:
        """Write one segment of what waits (nothing when nothing does); returns its record count."""
        pending = await self.state.run(lambda: self.journal.pending(BATCH))
        records, done = await self._drawers([p for p in pending if p.kind == DRAWER], dense_wait_s)
        tombs = [p for p in pending if p.kind not in (DRAWER, RULE)]
        records += [rec.tomb_record(p.id, p.detail) for p in tombs]
        done += tombs
        rules = [p for p in pending if p.kind == RULE]
        records += await self.state.run(lambda: self._rules(rules))
        done += rules
        facts, passed = await self.state.run(lambda: self._new_facts(BATCH))
        records += [rec.fact_record(t) for t in facts]
        if not records:
            if done or passed:  # (drawers gone from the store before they were written: nothing to send)
                await self.state.run(lambda: self._passed(done, passed))
            return 0
        last = await self.state.run(lambda: self.journal.get(SEQ))
        seq = max(last, await anyio.to_thread.run_sync(folder.last_seq)) + 1
        seq, data = await anyio.to_thread.run_sync(_write_new, folder, seq, records, sealer)
        top = max([t.id for t in facts] + [passed])

        def after() -> None:
            self.journal.put(SEQ, seq)
            if top:
                self.journal.put(FACT, top)
            self.journal.sent(done)
        await self.state.run(after)
        self.written += 1
        log.info("sync_segment_written", seq=seq, records=len(records), bytes=len(data))
        return len(records)

    async def _drawers(self, pending: Sequence[Pending], dense_wait_s: float) -> tuple[list[Record], list[Pending]]:
        """The records of the pending drawers that are ready (their dense vector there, or waited long enough),
        and the outbox rows they settle (drawers no longer live are settled without a record)."""
        out: list[Record] = []
        done: list[Pending] = []
        now = time.time()
        for i in range(0, len(pending), READ):
            group = pending[i:i + READ]
            points = {p.id: p for p in await self.store.retrieve([g.id for g in group], with_vectors=True)}
            for g in group:
                point = points.get(g.id)
                if point is None or point.payload.get("status") == "deleted":
                    done.append(g)
                elif point.dense is None and now - g.at < dense_wait_s:
                    continue  # its vector is on the way: the next segment takes it
                else:
                    out.append(rec.drawer_record(g.id, point.payload, point.dense, self.model))
                    done.append(g)
        return out, done

    def _rules(self, pending: Sequence[Pending]) -> list[Record]:
        """Each changed rule as the rule book holds it now, or its removal when it is gone (blocking)."""
        out: list[Record] = []
        if self.rules is None:
            return out
        for p in pending:
            rule = self.rules.rule(p.id)
            out.append(rec.rule_record(rule) if rule is not None else rec.unrule_record(p.id, p.detail))
        return out

    def _new_facts(self, limit: int) -> tuple[list[Triple], int]:
        """Facts learned here since the last segment (those imported from other machines left out), and the
        last fact number looked at."""
        rows = self.kg.added_after(self.journal.get(FACT), limit)
        imported = self.journal.facts_imported([t.id for t in rows])
        return [t for t in rows if t.id not in imported], max((t.id for t in rows), default=0)

    def _passed(self, done: list[Pending], passed: int) -> None:
        self.journal.sent(done)
        if passed:
            self.journal.put(FACT, passed)


def _write_new(folder: SyncFolder, seq: int, records: list[Record], sealer: Sealer | None) -> tuple[int, bytes]:
    """Write ``records`` as segment ``seq``, or the next free number: a segment is never overwritten (blocking)."""
    while True:
        data = encode(folder.machine, seq, records, sealer)
        try:
            write_whole(folder.own, name_of(seq), data, replace=False)
            return seq, data
        except FileExistsError:
            log.warning("sync_segment_exists", seq=seq, folder=str(folder.own))
            seq = max(seq, folder.last_seq()) + 1
