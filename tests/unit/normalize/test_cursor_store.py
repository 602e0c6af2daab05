"""Cursor's chat store read from a database in the real schema (``mempald.normalize.cursor``, issue 43): the
exchanges whole and faithful, the wing from the workspace, every row accounted for, read incrementally, and
bad input (locked, corrupt, unknown shapes) never a crash nor a loss."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from mempald.normalize import cursor, registry
from mempald.normalize import cursor_bubbles as cb
from mempald.normalize.format import Input, Parsed, Probe
from mempald.normalize.model import CursorContext
from mempald.sources.look import LOOK
from tests.cursor_samples import (
    PROJECT,
    T0,
    answer,
    build_cursor_user,
    create_db,
    put,
    spotter_conversation,
    user,
    write_conversation,
)

Q1 = "Why does the rate limiter let bursts through?\nSee the router."


def key(prompt: str, session: str = "c-spotter") -> str:
    """The key of the first exchange with this prompt in its conversation."""
    return cb.prompt_key(session, prompt, {})


def _read(db: Path, ctx: CursorContext | None = None) -> tuple[Input, Parsed]:
    ctx = ctx or CursorContext(format="cursor")
    ctx = cursor.beside(db, ctx, LOOK)
    inp = cursor.gather(db, ctx, LOOK)
    return inp, cursor.parse(inp)


def test_a_conversation_is_read_whole_faithfully_with_its_workspace_as_wing(tmp_path: Path) -> None:
    db = build_cursor_user(tmp_path)
    _inp, parsed = _read(db)
    by_session: dict[str, list[str]] = {}
    for ex in parsed.exchanges:
        by_session.setdefault(ex.session_id, []).append(ex.key)
    assert by_session == {"c-spotter": [key(Q1), key("Apply it and add a test.")],
                          "c-loose": [key("What does HTTP 429 mean?", "c-loose")],
                          "c-odd": [key("Explain the backoff.", "c-odd")]}
    first, second = (e for e in parsed.exchanges if e.session_id == "c-spotter")
    assert first.user == "Why does the rate limiter let bursts through?\nSee the router."  # whole, nothing pasted in
    assert dict(first.extra)["attachments"] == f"{PROJECT}/src/router.ts\n{PROJECT}/src/limiter.ts:12-18"
    assert "```ts\nbucket.refill(now);\nif (!bucket.take()) return reject();\n```" in first.assistant
    assert "[tool: read_file] src/limiter.ts" in first.assistant
    assert "refills before the check" not in first.render()  # thinking dropped
    assert first.cwd == PROJECT and first.project == PROJECT and first.agent == "cursor"
    assert first.title == "Rate limiter bursts" and first.timestamp == "2026-11-02T10:00:00Z"
    assert "```diff\n-bucket.take();\n+bucket.refill(now);\n```" in second.assistant  # a diff kept
    assert second.tools == ("edit_file",) and second.files == (f"{PROJECT}/src/limiter.ts",)
    loose = next(e for e in parsed.exchanges if e.session_id == "c-loose")
    assert loose.cwd is None and loose.user == "What does HTTP 429 mean?"  # no workspace: the wing "cursor"
    odd = next(e for e in parsed.exchanges if e.session_id == "c-odd")
    assert odd.assistant == "" and odd.user == "Explain the backoff."  # its unreadable answer counted, not lost
    assert "secret-token" not in repr(_inp.rows) and "checkpointId" not in repr(_inp.rows)


def test_every_row_read_is_accounted_for_once(tmp_path: Path) -> None:
    db = build_cursor_user(tmp_path)
    inp, parsed = _read(db)
    refs = [a.ref for a in parsed.ledger.entries]
    rows = [f"{r['table']}/{r['key']}" for r in inp.rows]
    assert sorted(refs) == sorted(rows)
    counts = parsed.ledger.counts()
    assert counts["skipped: not a message (null or not JSON)"] == 1
    assert counts["skipped: thinking only"] == 1
    assert counts["folded: conversation header"] == 3
    assert counts["folded: workspace folder"] == 1
    assert counts["skipped: its conversation header is missing"] == 1  # the message of no conversation
    assert not any("checkpointId" in r for r in rows)  # the table's other keys are never read


def _newest_row(db_path: Path) -> int:
    with sqlite3.connect(db_path) as db:
        return int(db.execute("SELECT max(rowid) FROM cursorDiskKV").fetchone()[0])


def test_a_second_read_takes_only_the_conversations_written_since(tmp_path: Path) -> None:
    db_path = build_cursor_user(tmp_path)
    _inp, parsed = _read(db_path)
    assert parsed.context.since == _newest_row(db_path)
    # nothing changed: only the newest row's conversation is looked at again (the orphan message: nothing stored)
    inp2, again = _read(db_path, parsed.context)
    assert {r["key"] for r in inp2.rows} == {"bubbleId:c-gone:x1"}
    assert again.exchanges == [] and again.context == parsed.context
    # Cursor appends a prompt and its answer to the spotter conversation
    db = sqlite3.connect(db_path, isolation_level=None)
    convo = [*spotter_conversation(),
             user("u3", "And the docs?"), answer("a6", "Updated docs/limits.md.")]
    write_conversation(db, "c-spotter", convo, name="Rate limiter bursts", updated=T0 + 5000)
    db.close()
    inp3, third = _read(db_path, again.context)
    assert {r["key"] for r in inp3.rows if r["key"].startswith("composerData:")} == {"composerData:c-spotter"}
    spotter = [e for e in third.exchanges if e.session_id == "c-spotter"]
    assert [e.key for e in spotter] == [key(Q1), key("Apply it and add a test."), key("And the docs?")]
    assert spotter[2].position == 2 and third.context.since == _newest_row(db_path)


def test_a_conversation_still_generating_keeps_its_last_exchange_back(tmp_path: Path) -> None:
    db_path = tmp_path / "User" / "globalStorage" / "state.vscdb"
    db = create_db(db_path)
    write_conversation(db, "c1", [user("u1", "first"), answer("a1", "done"), user("u2", "second"),
                                  answer("a2", "half an ans")], status="generating", updated=T0 + 10)
    db.close()
    _inp, parsed = _read(db_path)
    assert [e.key for e in parsed.exchanges] == [key("first", "c1")]
    assert parsed.ledger.counts()["skipped: still being written (read again when it changes)"] == 2
    assert parsed.context.since == _newest_row(db_path)  # its newest row: read again next time
    db = sqlite3.connect(db_path, isolation_level=None)
    write_conversation(db, "c1", [user("u1", "first"), answer("a1", "done"), user("u2", "second"),
                                  answer("a2", "half an answer, now whole")], updated=T0 + 20)
    db.close()
    _inp, parsed = _read(db_path, parsed.context)
    assert [e.key for e in parsed.exchanges] == [key("first", "c1"), key("second", "c1")]
    assert parsed.exchanges[1].assistant == "half an answer, now whole"
    # an editor that stopped mid-answer leaves it "generating": once it is 10 minutes older than a newer chat,
    # it is read as it is (it never holds the reading back)
    db = sqlite3.connect(db_path, isolation_level=None)
    write_conversation(db, "c2", [user("u5", "left"), answer("a5", "cut")], status="generating", updated=T0)
    write_conversation(db, "c3", [user("u6", "later"), answer("a6", "fine")], updated=T0 + 11 * 60_000)
    db.close()
    _inp, parsed = _read(db_path, parsed.context)
    assert {e.session_id for e in parsed.exchanges} >= {"c2", "c3"}
    assert parsed.context.since == _newest_row(db_path)


def test_the_legacy_chat_tabs_and_a_workspace_database_name_their_folder(tmp_path: Path) -> None:
    ws = tmp_path / "User" / "workspaceStorage" / "0a0b"
    db = create_db(ws / "state.vscdb", wal=False)
    put(db, cursor.LEGACY_CHAT, {"tabs": [{"tabId": "t1", "chatTitle": "Old chat", "lastSendTime": T0, "bubbles": [
        {"type": "user", "id": "b1", "text": "", "rawText": "How do I pin numpy?", "selections": []},
        {"type": "ai", "id": "b2", "text": "Use `numpy==1.26.*` in requirements.txt.", "modelType": "gpt-4"},
        {"type": "divider", "id": "b3"}]}]}, "ItemTable")
    db.close()
    (ws / "workspace.json").write_text('{"folder": "file:///home/dev/projects/old%20app"}')
    _inp, parsed = _read(ws / "state.vscdb")
    [ex] = parsed.exchanges
    assert (ex.user, ex.key, ex.title) == ("How do I pin numpy?", "b1", "Old chat")
    assert ex.cwd == "/home/dev/projects/old app"
    assert parsed.ledger.counts()["skipped: unknown message type 'divider'"] == 1


def test_unknown_keys_tables_and_shapes_are_counted_never_a_crash(tmp_path: Path) -> None:
    db_path = tmp_path / "state.vscdb"
    db = sqlite3.connect(db_path)
    db.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")  # VS Code's: no chats
    db.execute("CREATE TABLE somethingNew (id INTEGER)")
    db.commit()
    db.close()
    _inp, parsed = _read(db_path)
    assert parsed.exchanges == [] and parsed.ledger.entries == []
    db_path2 = tmp_path / "b" / "state.vscdb"
    db2 = create_db(db_path2)
    put(db2, "composerData:c1", {"_v": 99, "composerId": "c1", "messages2": [{"role": "user"}],
                                 "lastUpdatedAt": "yesterday"})
    put(db2, "composerData:c2", "[1, 2")
    put(db2, cursor.LEGACY_CHAT, {"panes": []}, "ItemTable")
    db2.close()
    _inp, parsed = _read(db_path2)
    assert parsed.exchanges == []
    assert parsed.ledger.counts() == {"folded: conversation header": 1, "skipped: conversation header not JSON": 1,
                                      "skipped: no chat tabs (unknown shape)": 1}


def test_a_locked_or_corrupt_database_raises_for_the_intake_to_retry_and_nothing_is_lost(tmp_path: Path) -> None:
    db_path = build_cursor_user(tmp_path, wal=False)
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    ctx = CursorContext(format="cursor")
    with pytest.raises(sqlite3.Error, match="locked"):
        cursor.gather(db_path, ctx, LOOK)
    holder.execute("ROLLBACK")
    holder.close()
    assert len(cursor.parse(cursor.gather(db_path, ctx, LOOK)).exchanges) == 4
    data = bytearray(db_path.read_bytes())
    data[100:4096] = b"\x00" * 3996  # the schema page wiped
    db_path.write_bytes(bytes(data))
    with pytest.raises(sqlite3.Error, match=r"corrupt|schema"):
        cursor.gather(db_path, ctx, LOOK)



def test_the_chat_panel_sessions_are_read_as_cursor_s_or_as_copilot_s_in_vs_code(tmp_path: Path) -> None:
    from tests.copilot_samples import heron_requests, session

    for editor, agent in (("Cursor", "cursor"), ("Code", "copilot")):
        ws = tmp_path / editor / "User" / "workspaceStorage" / "77aa"
        db = create_db(ws / "state.vscdb", wal=False)
        put(db, cursor.PANEL_SESSIONS, [session(heron_requests()[:2]), "junk"], "ItemTable")
        db.close()
        (ws / "workspace.json").write_text('{"folder": "file:///home/dev/projects/heron"}')
        _inp, parsed = _read(ws / "state.vscdb")
        assert [(e.key, e.agent, e.cwd) for e in parsed.exchanges] == [
            ("request_1", agent, "/home/dev/projects/heron"), ("request_2", agent, "/home/dev/projects/heron")]
        assert parsed.exchanges[0].user == "#file:writer.py why are partitions written twice?"
        assert parsed.ledger.counts() == {"stored": 2, "skipped: not a chat session": 1}


def test_the_registry_knows_the_database_by_its_name_and_first_bytes(tmp_path: Path) -> None:
    db = build_cursor_user(tmp_path)
    fmt = registry.database_for(db.name)
    assert fmt is cursor.FORMAT and fmt.reads == "rows" and fmt.unit == "database" and fmt.ids == "message"
    assert cursor.detect(Probe(db.name, db.read_bytes()[:100]))
    assert not cursor.detect(Probe(db.name, b"not a database"))
    assert registry.wanted("state.vscdb")


def test_the_same_prompt_in_two_conversations_has_two_keys(tmp_path: Path) -> None:
    """Keys are matched across sessions by the writer (its stale-chunk clean-up): a prompt typed in two chats
    ("continue") must not share a key."""
    db_path = tmp_path / "User" / "globalStorage" / "state.vscdb"
    db = create_db(db_path)
    write_conversation(db, "c1", [user("u1", "continue"), answer("a1", "one")])
    write_conversation(db, "c2", [user("u1", "continue"), answer("a1", "two")])
    db.close()
    _inp, parsed = _read(db_path)
    assert len({e.key for e in parsed.exchanges}) == 2


def test_a_long_conversation_is_read_in_short_pages(tmp_path: Path) -> None:
    db_path = tmp_path / "User" / "globalStorage" / "state.vscdb"
    db = create_db(db_path)
    messages = []
    for n in range(150):  # 300 messages: five pages
        messages += [user(f"u{n:03d}", f"step {n}"), answer(f"a{n:03d}", f"done {n}")]
    write_conversation(db, "long", messages)
    db.close()
    inp, parsed = _read(db_path)
    assert len(inp.rows) == 301 and len({r["key"] for r in inp.rows}) == 301
    assert [e.user for e in parsed.exchanges] == [f"step {n}" for n in range(150)]
