"""Rules through sync segments: a rule (added, accepted, replaced) and a rule's removal as records, written from
the rule book as it is, read back on another machine with the checks of ``rule add``: a real state database, a real
embedded store, real segments (plain and sealed)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mempald.config import SettingsRef, parse_settings
from mempald.embed.sparse import Bm25Encoder
from mempald.features.kg import KnowledgeGraph
from mempald.features.rules import Rules
from mempald.state.db import State
from mempald.state.gateway import StateGateway
from mempald.store.edge import EdgeStore
from mempald.store.gateway import StoreGateway
from mempald.sync import records as rec
from mempald.sync.exporter import Exporter
from mempald.sync.folder import SyncFolder
from mempald.sync.importer import Importer
from mempald.sync.journal import RULE, Journal
from mempald.sync.seal import Sealer, new_key
from mempald.sync.segment import decode, encode
from mempald.sync.service import Sync

DIM = 4
PUSH = r"git\s+push\b.*\bmain\b"


class Side:
    """One machine's rule book and sync (journal, exporter, importer) on its own state database and store, both
    machines on one folder (as a sync tool that already copied it would leave it)."""

    def __init__(self, root: Path, machine: str, folder: Path) -> None:
        root.mkdir()
        self.db = State(root / "state.sqlite3")
        self.state = StateGateway(self.db)
        self.edge = EdgeStore(root / "store", DIM)
        store = StoreGateway(self.edge)
        self.journal = Journal(self.db)
        kg = KnowledgeGraph(self.db.conn, lock=self.db.lock)
        kg.ensure_schema()
        self.rules = Rules(self.state, store)
        self.exporter = Exporter(store, self.state, self.journal, kg, "m", self.rules.book)
        self.importer = Importer(store, self.state, self.journal, kg, Bm25Encoder(), lambda pid, ts: None, "m", DIM,
                                 None, self.rules)
        settings = SettingsRef(parse_settings({"sync": {"dir": str(folder)}}, env={}))
        self.sync = Sync(settings, store, self.state, self.journal, self.exporter, self.importer, machine)
        self.rules.changes = self.sync

    async def ids(self) -> list[str]:
        return [r["id"] for r in (await self.rules.list_rules())["rules"]]

    def close(self) -> None:
        self.edge.close()
        self.db.close()


@pytest.fixture
def sides(tmp_path: Path) -> Iterator[tuple[Side, Side]]:
    SyncFolder(tmp_path / "sync", "laptop").create(None)
    a, b = Side(tmp_path / "a", "laptop", tmp_path / "sync"), Side(tmp_path / "b", "desktop", tmp_path / "sync")
    yield a, b
    a.close()
    b.close()


def rule(**kw: Any) -> dict[str, Any]:
    return {"id": "r0001", "text": "never push to main", "tool": "Bash", "pattern": PUSH, "decision": "deny",
            "wing": "orbit", "source": "user", "drawer_id": "", "forced": False, "created_at": 1.5, **kw}


def test_rule_and_removal_records_round_trip_through_plain_and_sealed_segments() -> None:
    records = [rec.rule_record(rule()), rec.unrule_record("r0002", {"at": 3.0, "by": "user", "removed": True})]
    for sealer in (None, Sealer(new_key())):
        data = encode("laptop", 4, records, sealer)
        if sealer is not None:
            assert b"never push" not in data  # an encrypted segment covers rules too
        seg = decode(data, sealer)
        assert seg.records == records
        assert rec.rule_of(seg.records[0]) == rule()
        assert seg.records[1] == {"t": "unrule", "id": "r0002", "at": 3.0, "by": "user"}
    assert rec.rule_of({"t": "rule", "id": "r1", "rule": "not a dict"}) is None
    assert rec.rule_of(rec.unrule_record("r1", {})) is None
    # a record's id is the rule's: a rule field saying otherwise does not move it
    assert rec.rule_of({"t": "rule", "id": "r9", "rule": rule()}) == rule(id="r9")


def test_a_rule_added_and_removed_travels_once_and_stays_removed(sides: tuple[Side, Side]) -> None:
    a, b = sides

    async def go() -> None:
        made = (await a.rules.add("never push to main", tool="Bash", match=PUSH, decision="deny", wing="orbit",
                                  force=False, actor="user"))["rule"]
        # the sync queued it; the exporter writes the rule as the book holds it
        pending = await a.state.run(lambda: a.journal.pending(10))
        written = await a.state.run(lambda: a.exporter._rules(pending))
        assert written == [rec.rule_record(made)]
        await b.importer.apply(written, 1, "laptop")
        assert (await b.rules.list_rules())["rules"] == [made]
        assert (await b.rules.check("Bash", {"command": "git push origin main"}, cwd=None,
                                    wing="orbit"))["decision"] == "deny"
        # the same segment applied again (a crash, a conflicted copy) changes nothing
        await b.importer.apply(written, 1, "laptop")
        assert b.importer.rules_imported == 1 and len((await b.rules.list_rules())["rules"]) == 1
        # an older segment of the same machine read after a newer one does not set the rule back
        edited = {**made, "decision": "ask"}
        await b.importer.apply([rec.rule_record(edited)], 2, "laptop")
        await b.importer.apply(written, 1, "laptop")
        assert (await b.rules.list_rules())["rules"][0]["decision"] == "ask"
        # removed on A: the book no longer holds it, so its removal is written; applied on B, it is gone for good
        await a.rules.remove(made["id"], actor="user")
        gone = await a.state.run(lambda: a.exporter._rules(
            [p for p in a.journal.pending(10) if p.kind == RULE]))
        assert [r["t"] for r in gone] == ["unrule"]
        await b.importer.apply(gone, 3, "laptop")
        assert (await b.rules.list_rules())["rules"] == []
        await b.importer.apply([rec.rule_record(edited)], 4, "laptop")  # a later copy of it: still removed
        assert (await b.rules.list_rules())["rules"] == []
        assert await b.state.run(b.journal.outbox_size) == 0  # nothing from A is echoed back by B

    anyio.run(go)


def test_added_accepted_replaced_and_removed_rules_travel_through_sync_rounds(sides: tuple[Side, Side]) -> None:
    a, b = sides

    async def go() -> None:
        added = (await a.rules.add("never push to main", tool="Bash", match=PUSH, decision="deny", wing=None,
                                   force=False, actor="user"))["rule"]
        await a.state.run(lambda: a.rules.book.add_suggestions([{
            "id": "s1", "drawer_id": "d1", "wing": "orbit", "sentence": "always use pnpm, not npm", "tool": "Bash",
            "pattern": r"\bnpm\s+install\b", "decision": "ask"}]))
        accepted = (await a.rules.accept("s1", edits={"decision": "deny"}, force=False, actor="user"))["rule"]
        assert await a.sync.round() and await b.sync.round()
        assert sorted(await b.ids()) == sorted([added["id"], accepted["id"]])
        assert (await b.rules.check("Bash", {"command": "npm install left-pad"}, cwd=None,
                                    wing="orbit"))["decision"] == "deny"
        assert await b.state.run(lambda: b.rules.book.suggestions(None)) == []  # suggestions stay on A
        # replaced by an import on A (an edited export): the new version reaches B
        assert await a.rules.import_rule({**added, "text": "never push to main, ever"}, dry_run=False) == "replaced"
        assert await a.sync.round() and await b.sync.round()
        assert {r["id"]: r["text"] for r in (await b.rules.list_rules())["rules"]}[added["id"]] == \
            "never push to main, ever"
        # removed on B: gone on A at its next round; nothing B imported was written back by B
        await b.rules.remove(accepted["id"], actor="user")
        assert await b.sync.round() and await a.sync.round()
        assert await a.ids() == [added["id"]]
        assert b.importer.rules_imported == 3 and a.importer.rules_imported == 0
        # the suggestion it was accepted from is pending again on A, as after a removal made there
        assert [x["status"] for x in await a.state.run(lambda: a.rules.book.suggestions(None))] == ["pending"]

    anyio.run(go)


@pytest.mark.parametrize(("bad", "why"), [
    ({"pattern": "(a+)+$"}, "catastrophic"),
    ({"pattern": "git push ("}, "not a valid regular expression"),
    ({"pattern": ".*"}, "matches every command"),
    ({"decision": "allow"}, "ask or deny"),
    ({"tool": "Bash; rm"}, "tool"),
    ({"text": ""}, "text"),
])
def test_a_rule_that_rule_add_would_refuse_is_reported_not_applied(sides: tuple[Side, Side], bad: dict[str, Any],
                                                                    why: str) -> None:
    _, b = sides

    async def go() -> None:
        await b.importer.apply([rec.rule_record(rule(**bad)), rec.rule_record(rule(id="r0003"))], 7, "laptop")
        assert [r["id"] for r in (await b.rules.list_rules())["rules"]] == ["r0003"]  # the good one next to it
        refused = await b.state.run(b.journal.refused)
        assert [(r["machine"], r["segment"], r["rule_id"]) for r in refused] == [("laptop", 7, "r0001")]
        assert why in refused[0]["error"]

    anyio.run(go)


def test_a_forced_rule_stays_forced_and_suggestions_do_not_travel(sides: tuple[Side, Side]) -> None:
    a, b = sides

    async def go() -> None:
        await b.importer.apply([rec.rule_record(rule(pattern=".*", forced=True))], 1, "laptop")
        assert (await b.rules.list_rules())["rules"][0]["forced"] is True
        await a.state.run(lambda: a.rules.book.add_suggestions([{
            "id": "s1", "drawer_id": "d1", "wing": "orbit", "sentence": "always use pnpm", "tool": "Bash",
            "pattern": r"\bnpm\b", "decision": "ask"}]))
        assert await a.state.run(a.journal.outbox_size) == 0

    anyio.run(go)
