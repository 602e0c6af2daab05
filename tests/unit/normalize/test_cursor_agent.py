"""The cursor-agent CLI's chat stores (issue 43): stores built in the real shape (tests/cursor_agent_samples.py),
read through the intake's own ``Look`` as the daemon reads them."""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mempald.normalize import cursor_agent as ca
from mempald.normalize import cursor_agent_blobs as blobs
from mempald.normalize import cursor_bubbles as cb
from mempald.normalize import registry
from mempald.normalize.format import Input, Parsed
from mempald.normalize.model import CursorContext
from mempald.sources.look import LOOK
from tests.cursor_agent_samples import (
    AGENT,
    PROJECT,
    build_chat,
    grown,
    ledgerly,
    query,
    root_blob,
    said,
    store_path,
    user_info,
    write_chat,
)


def read(db: Path, ctx: CursorContext | None = None) -> tuple[Input, Parsed]:
    ctx = ca.beside(db, ctx or CursorContext(format=ca.NAME), LOOK)
    inp = ca.gather(db, ctx, LOOK)
    return inp, ca.parse(inp)


def accounted(inp: Input, parsed: Parsed) -> None:
    refs = sorted(str(a.ref) for a in parsed.ledger.entries)
    assert refs == sorted(f"{r['table']}/{r['key']}" for r in inp.rows), "every row read has exactly one outcome"
    assert all(a.what for a in parsed.ledger.entries if a.outcome != "stored")


def test_a_chat_is_read_faithfully_with_its_workspace_as_wing(tmp_path: Path) -> None:
    db = build_chat(tmp_path / "chats")
    inp, parsed = read(db)
    first, second = parsed.exchanges
    seen: dict[str, int] = {}
    assert [e.key for e in parsed.exchanges] == [
        cb.prompt_key(AGENT, "Why does the monthly ledger total drift by a cent?", seen),
        cb.prompt_key(AGENT, "Add a regression test for the cent drift.", seen)]
    assert {(e.source_kind, e.session_id, e.agent, e.cwd, e.project) for e in parsed.exchanges} == {
        ("cursor", AGENT, "cursor", PROJECT, PROJECT)}
    # the prompt is what the user typed: no injected user_info, no pasted file; the file is an attachment
    assert first.user == "Why does the monthly ledger total drift by a cent?"
    assert dict(first.extra)["attachments"] == "src/ledger.py"
    # the answer whole (its code block), the tool call summarised with its result, the reasoning dropped
    assert "```python\nfrom decimal import Decimal" in first.assistant
    assert "[tool: Read] src/ledger.py\n  -> def total(rows): return sum(r.amount for r in rows)" in first.assistant
    assert "accumulates error" not in first.render() and "OS Version" not in first.render()
    assert first.files == (f"{PROJECT}/src/ledger.py",) and second.tools == ("Write",)
    assert first.title == "Ledger total drift" and first.timestamp == cb.iso_of(1782900000000)
    counts = parsed.ledger.counts()
    assert counts["skipped: system prompt"] == 1 and counts["folded: injected context (user_info, rules)"] == 1
    assert counts["folded: tool call"] == 2 and counts["folded: tool result"] == 2
    accounted(inp, parsed)
    assert parsed.context.session_id == AGENT and parsed.context.cwd == PROJECT
    assert parsed.context.since == 6  # the last exchange's first message: read again (its answer may grow)


def test_a_grown_chat_reads_only_its_new_messages_and_repeated_prompts_keep_their_keys(tmp_path: Path) -> None:
    db = store_path(tmp_path / "chats")
    chat = [*ledgerly(), query("continue"), said("Rounded the CSV totals too."), query("continue"),
            said("Nothing else drifts.")]
    write_chat(db, chat)
    _, once = read(db)
    more = [*chat, query("continue"), said("Done: all totals are Decimal now.")]
    write_chat(db, more)
    inp, again = read(db, once.context)
    accounted(inp, again)
    # the messages read before are looked at by their first bytes only (their user prompts read whole)
    before = [r for r in inp.rows if r.get("part") == "before"]
    assert before and all(len(r["value"]) <= ca.HEAD for r in before if b'"role":"user"' not in r["value"][:ca.HEAD])
    repeat = f"{AGENT}:p{_digest('continue')}"
    assert [e.key for e in again.exchanges] == [f"{repeat}.1", f"{repeat}.2"]
    assert again.exchanges[-1].assistant == "Done: all totals are Decimal now."
    # the same keys as reading the grown chat whole
    _, whole = read(db)
    assert [e.key for e in whole.exchanges][-2:] == [e.key for e in again.exchanges]
    assert [e.position for e in again.exchanges] == [e.position for e in whole.exchanges][-2:]


def _digest(prompt: str) -> str:
    return hashlib.sha1(prompt.encode()).hexdigest()[:16]


def test_a_message_not_written_yet_holds_its_exchange_back(tmp_path: Path) -> None:
    db = store_path(tmp_path / "chats")
    chat = grown()
    write_chat(db, chat, skip=(len(chat) - 1,))  # the root names an answer whose blob is not there yet
    inp, parsed = read(db)
    accounted(inp, parsed)
    assert [e.user for e in parsed.exchanges][-1] == "Add a regression test for the cent drift."
    assert parsed.ledger.counts()["skipped: " + "not written yet (read again when it changes)"] == 2
    assert parsed.context.since == len(chat) - 2  # the held exchange's prompt: read from there
    write_chat(db, chat)
    _, later = read(db, parsed.context)
    assert [e.user for e in later.exchanges] == ["Does the CSV export round the same way?"]


def test_a_provisional_message_and_a_store_without_a_root_yet(tmp_path: Path) -> None:
    db = store_path(tmp_path / "chats")
    write_chat(db, ledgerly(), provisional=said("Let me look at the export"))
    _, parsed = read(db)
    assert len(parsed.exchanges) == 2 and "Let me look" not in parsed.exchanges[-1].assistant
    empty = store_path(tmp_path / "chats", agent="e0e0e0e0-0000-4000-8000-000000000000")
    empty.parent.mkdir(parents=True)
    con = sqlite3.connect(empty)
    con.execute("CREATE TABLE blobs (id TEXT PRIMARY KEY, data BLOB)")
    con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    con.commit()
    con.close()
    inp, parsed = read(empty)
    assert parsed.exchanges == [] and inp.rows == []


def test_the_wing_from_user_info_or_the_projects_folder_else_none(tmp_path: Path) -> None:
    chats = tmp_path / ".cursor" / "chats"
    db = build_chat(chats, workspace=None)  # the root names no workspace: user_info's Workspace Path does
    assert {e.cwd for e in read(db)[1].exchanges} == {PROJECT}
    other = "/home/dev/projects/tally"
    plain = [query("Where is the tally config?"), said("In tally.toml.")]
    db2 = store_path(chats, workspace=other, agent="a2")
    write_chat(db2, plain, workspace=None, agent="a2")
    assert {e.cwd for e in read(db2)[1].exchanges} == {None}  # no workspace anywhere: the format's wing
    (tmp_path / ".cursor" / "projects" / "home-dev-projects-tally").mkdir(parents=True)
    assert {e.cwd for e in read(db2)[1].exchanges} == {other}  # the projects folder whose md5 names the chat's
    # a workspace with dashes in its folder names: resolved against the folders that exist
    dashed = tmp_path / "work-tree" / "my-app"
    dashed.mkdir(parents=True)
    db3 = store_path(chats, workspace=str(dashed), agent="a3")
    write_chat(db3, plain, workspace=None, agent="a3")
    (tmp_path / ".cursor" / "projects" / str(dashed).strip("/").replace("/", "-")).mkdir()
    assert {e.cwd for e in read(db3)[1].exchanges} == {str(dashed)}


def test_unknown_tables_a_damaged_root_a_lock_and_a_foreign_store_db(tmp_path: Path) -> None:
    db = build_chat(tmp_path / "chats")
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("CREATE TABLE extras (k TEXT)")  # a table a later release adds: ignored
    assert len(read(db)[1].exchanges) == 2
    bad = b"\x0a\x05short"
    bad_id = hashlib.sha256(bad).hexdigest()
    con.execute("INSERT INTO blobs VALUES (?, ?)", (bad_id, bad))
    meta = blobs.meta_of(con.execute("SELECT value FROM meta").fetchone()[0])
    assert meta is not None
    con.execute("UPDATE meta SET value = ?", (meta_hex({**meta, "latestRootBlobId": bad_id}),))
    with pytest.raises(sqlite3.Error, match="does not decode"):  # counted, logged once, read when it changes
        ca.gather(db, CursorContext(), LOOK)
    con.execute("BEGIN EXCLUSIVE")
    try:
        con.execute("UPDATE meta SET value = value")
        with pytest.raises(sqlite3.Error):  # the writer's lock: answered at once, never waited on
            ca.gather(db, CursorContext(), LOOK)
    finally:
        con.execute("ROLLBACK")
        con.close()
    foreign = tmp_path / "app" / "store.db"  # another program's store.db in a watched folder: left alone
    foreign.parent.mkdir()
    f = sqlite3.connect(foreign)
    f.execute("CREATE TABLE orders (id INTEGER)")
    f.commit()
    f.close()
    _, parsed = read(foreign)
    assert parsed.exchanges == [] and parsed.ledger.counts() == {
        "skipped: not a cursor-agent chat store (no meta and blobs tables)": 1}
    gone = store_path(tmp_path / "chats", agent="b1")  # in cursor-agent's place without its tables: an error
    gone.parent.mkdir(parents=True)
    g = sqlite3.connect(gone)
    g.execute("CREATE TABLE meta2 (k TEXT)")
    g.commit()
    g.close()
    with pytest.raises(sqlite3.Error):
        ca.gather(gone, CursorContext(), LOOK)


def test_a_long_chat_is_read_in_bounded_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = store_path(tmp_path / "chats")
    chat = [user_info()] + [m for n in range(12) for m in (query(f"step {n}: tune the ledger"), said("x" * 400))]
    write_chat(db, chat)
    _, whole = read(db)
    monkeypatch.setattr(ca, "BATCH_BYTES", 1000)
    ctx, keys, batches = CursorContext(format=ca.NAME), {}, 0
    while True:
        inp, parsed = read(db, ctx)
        accounted(inp, parsed)
        keys.update({e.key: e.assistant for e in parsed.exchanges})
        batches += 1
        if not inp.more:
            break
        assert parsed.context.since > ctx.since  # each batch moves on
        ctx = parsed.context
    assert batches > 3 and keys == {e.key: e.assistant for e in whole.exchanges}


def test_the_registry_knows_the_store_by_its_name() -> None:
    fmt = registry.database_for("store.db")
    assert fmt is ca.FORMAT and fmt.unit == "database" and fmt.ids == "message" and fmt.agent == "cursor"
    assert ca.FORMAT.places[0].linux == ("~/.cursor/chats",) and ca.FORMAT.places[0].globs == ("*/*/store.db",)


def test_the_root_blob_decodes_its_children_workspace_and_skips_other_fields() -> None:
    ids = [hashlib.sha256(bytes([n])).hexdigest() for n in range(3)]
    root = blobs.root_of(root_blob(ids, "/home/dev/my%20app", provisional=said("…")))
    assert root.children == tuple(ids) and root.provisional and root.workspace == "/home/dev/my app"
    for bad in (b"\x0a", b"\x0a\x03abc", b"\x0b", b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"):
        with pytest.raises(blobs.RootError):
            blobs.root_of(bad)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_any_root_bytes_decode_or_raise_root_error(data: bytes) -> None:
    with contextlib.suppress(blobs.RootError):
        blobs.root_of(data)


def blobs_json(m: dict[str, Any]) -> bytes:
    return json.dumps(m).encode()


_MESSAGE = st.one_of(st.none(), st.binary(max_size=60), st.fixed_dictionaries({
    "role": st.sampled_from(["user", "assistant", "tool", "system", "x", 3]),
    "content": st.one_of(st.text(max_size=40), st.lists(st.fixed_dictionaries({
        "type": st.sampled_from(["text", "tool-call", "tool-result", "reasoning", 1]),
        "text": st.text(max_size=20), "toolCallId": st.sampled_from(["a", "b"]), "args": st.none() | st.text(),
        "result": st.none() | st.text(max_size=20)}), max_size=3))}).map(blobs_json))


def meta_hex(meta: dict[str, Any]) -> str:
    return json.dumps(meta).encode().hex()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_MESSAGE, st.sampled_from(["before", "whole", "missing"])), max_size=8))
def test_any_messages_never_crash_and_are_accounted_for_once(messages: list[tuple[Any, str]]) -> None:
    ids = [hashlib.sha256(str(n).encode()).hexdigest() for n in range(len(messages))]
    rows: list[dict[str, Any]] = [{"table": "meta", "key": "0", "value": meta_hex({"agentId": "a"})},
                                  {"table": "blobs", "key": "r", "value": root_blob(ids, PROJECT), "part": "root"}]
    rows += [{"table": "blobs", "key": f"{i}@{n}", "value": v, "part": p, "n": n}
             for n, (i, (v, p)) in enumerate(zip(ids, messages, strict=True))]
    inp = Input(name="x/store.db", rows=rows)
    parsed = ca.parse(inp)
    accounted(inp, parsed)
    keys = [e.key for e in parsed.exchanges]
    assert len(set(keys)) == len(keys)


class Counting:
    """The intake's Look, its statements recorded."""

    def __init__(self) -> None:
        self.statements: list[tuple[str, tuple[Any, ...]]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(LOOK, name)

    def rows(self, database: Any, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        self.statements.append((sql, params))
        return LOOK.rows(database, sql, params)


def test_no_statement_reads_more_than_its_share_of_blob_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = store_path(tmp_path / "chats")
    chat = [user_info()] + [m for n in range(6) for m in (query(f"step {n}"), said(str(n) * 3000))]
    write_chat(db, chat)
    monkeypatch.setattr(ca, "STATEMENT_BYTES", 7000)
    look = Counting()
    inp = ca.gather(db, CursorContext(format=ca.NAME), look)
    sizes = {hashlib.sha256(json.dumps(m, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest():
             len(json.dumps(m, ensure_ascii=False, separators=(",", ":")).encode()) for m in chat}
    reads = [params for sql, params in look.statements if sql.startswith("SELECT id, data")]
    assert len(reads) >= 3
    assert all(len(p) == 1 or sum(sizes[i] for i in p) <= 7000 for p in reads)
    assert len(ca.parse(inp).exchanges) == 6


def test_metadata_that_does_not_decode_and_a_root_not_written_yet_store_nothing(tmp_path: Path) -> None:
    db = build_chat(tmp_path / "chats")
    con = sqlite3.connect(db, isolation_level=None)
    meta = blobs.meta_of(con.execute("SELECT value FROM meta").fetchone()[0])
    assert meta is not None
    con.execute("UPDATE meta SET value = ?", (meta_hex({**meta, "latestRootBlobId": "ab" * 32}),))
    inp, parsed = read(db, CursorContext(format=ca.NAME, session_id=AGENT, since=4))
    accounted(inp, parsed)
    assert parsed.exchanges == [] and parsed.context.since == 4  # read again, from where it was, once written
    con.execute("UPDATE meta SET value = 'zz-not-hex'")
    inp, parsed = read(db)
    con.close()
    accounted(inp, parsed)
    assert parsed.exchanges == [] and parsed.ledger.counts() == {"skipped: metadata not hex JSON": 1}
