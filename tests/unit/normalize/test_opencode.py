"""OpenCode, read faithfully from each place it keeps a session: its storage folder (before 1.2), its SQLite
database (1.2+) and ``opencode export`` documents; samples in ``tests/fixtures/opencode`` (OpenCode's shape)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path, PurePath

import pytest

from mempald.normalize import opencode_db, opencode_export, opencode_storage, registry
from mempald.normalize.format import Input, Parsed
from mempald.normalize.model import CursorContext, Exchange
from tests.unit.normalize.opencode_samples import (
    EXPORT,
    SCHEMA_V2,
    STORAGE,
    V2_ROWS,
    V2_SESSION,
    DiskLook,
    build_db,
    build_v2_db,
)

LOOK = DiskLook()


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _storage(root: Path = STORAGE) -> Parsed:
    return opencode_storage.parse(Input(name=str(root), files=_files(root)))


def _by_session(parsed: Parsed) -> dict[str, list[Exchange]]:
    out: dict[str, list[Exchange]] = {}
    for ex in parsed.exchanges:
        out.setdefault(ex.session_id, []).append(ex)
    return out


def _main(parsed: Parsed) -> list[Exchange]:
    return next(v for v in _by_session(parsed).values() if v[0].title == "Flaky retry backoff test")


def test_every_file_of_the_storage_folder_is_accounted_for_once() -> None:
    parsed = _storage()
    refs = [a.ref for a in parsed.ledger.entries]
    assert sorted(refs) == sorted(_files(STORAGE)), "each file has exactly one outcome"
    assert all(a.what for a in parsed.ledger.entries if a.outcome != "stored")
    keys = [(e.session_id, e.key) for e in parsed.exchanges]
    assert len(set(keys)) == len(keys)


def test_prompts_are_what_the_user_typed_and_answers_keep_tools_errors_and_attachments() -> None:
    main = _main(_storage())
    first, image, japanese, task = main
    assert first.user == "Why does test_retry_backoff flake on CI? @src/retry.py\n[file: src/retry.py]"
    assert "Called the Read tool" not in first.render() and "00001|" not in first.user, "synthetic text is no prompt"
    assert "unseeded, so the assertion" not in first.assistant, "reasoning is dropped"
    assert "[tool: read] /home/ana/src/tidewater/tests/test_retry.py\n  -> <file> 00001|" in first.assistant
    assert "[tool: bash] pytest -q tests/test_retry.py -p no:randomly\n  -> error: Error: command timed out" in \
        first.assistant
    assert first.assistant.endswith("so the test can seed it."), "both answers to the prompt are in its exchange"
    assert first.tools == ("read", "bash", "edit")
    assert first.files == ("/home/ana/src/tidewater/tests/test_retry.py", "/home/ana/src/tidewater/src/retry.py")
    assert image.user.endswith("[image: ci-failure.png]") and "base64" not in image.render()
    assert image.assistant == "[error] APIError: Overloaded", "a failed answer is kept as its error"
    assert japanese.user == "この再試行ロジックを日本語で説明してください。"
    assert japanese.assistant.startswith("再試行は指数バックオフ")
    assert "[tool: task] Find backoff ceiling config\n  -> The ceiling is MAX_BACKOFF_S = 30" in task.assistant
    for ex in main:
        assert (ex.agent, ex.kind, ex.project, ex.cwd) == ("opencode", "exchange", "/home/ana/src/tidewater",
                                                           "/home/ana/src/tidewater")
        assert ex.key.startswith("msg_") and ex.source_kind == "opencode"
    assert dict(first.extra)["model"] == "claude-sonnet-4-5"
    assert first.timestamp == "2025-10-09T12:20:01+00:00"


def test_unknown_parts_are_counted_never_a_crash() -> None:
    counts = _storage().ledger.counts()
    assert counts["skipped: unknown part type: x-future-part"] == 1
    assert counts["skipped: reasoning"] == 1 and counts["skipped: step start"] >= 1


def test_a_sub_agent_session_holds_no_user_prompt() -> None:
    sessions = _by_session(_storage())
    child = next(v for v in sessions.values() if v[0].kind == "subagent")
    assert len(child) == 1
    ex = child[0]
    assert ex.user == "" and ex.agent == "opencode/subagent"
    assert ex.assistant.startswith("[sub-agent task] Search the repository for where the maximum backoff")
    assert "[tool: grep] MAX_BACKOFF" in ex.assistant
    parent = dict(ex.extra)["parent_session"]
    assert parent in sessions and sessions[parent][0].title == "Flaky retry backoff test"


def test_a_long_session_with_a_compaction_keeps_every_prompt_and_the_summary() -> None:
    long = next(v for v in _by_session(_storage()).values() if v[0].title == "Port the scheduler to anyio")
    prompts = [e for e in long if e.kind == "exchange"]
    assert [e.user for e in prompts] == [f"Step {i}: port scheduler module part {i} to anyio task groups"
                                         for i in range(1, 25)]
    summary = [e for e in long if e.kind == "summary"]
    assert len(summary) == 1 and summary[0].user == "" and summary[0].assistant.startswith("Summary: we ported")
    assert [e.position for e in long] == list(range(len(long)))


def test_an_export_reads_as_the_same_exchanges_as_the_storage_folder() -> None:
    doc = next(EXPORT.glob("ses_*.json"))
    data = doc.read_bytes()
    assert registry.detect_file(data[: registry.HEAD_BYTES], doc.name) is opencode_export.FORMAT
    parsed = opencode_export.parse(Input(name=str(doc), data=data))
    assert [(e.session_id, e.key, e.render()) for e in parsed.exchanges] == \
        [(e.session_id, e.key, e.render()) for e in _main(_storage())]
    refs = [a.ref for a in parsed.ledger.entries]
    root = json.loads(data)
    assert len(refs) == len(set(refs)) == 1 + len(root["messages"]) + sum(len(m["parts"]) for m in root["messages"])
    # rewritten with other whitespace (and the todo list current releases add): the same ids
    root["todos"] = [{"content": "seed the jitter", "status": "completed", "priority": "high", "id": "1"}]
    again = opencode_export.parse(Input(name=str(doc), data=json.dumps(root, separators=(",", ":")).encode()))
    assert [e.key for e in again.exchanges] == [e.key for e in parsed.exchanges]
    assert again.ledger.counts()["skipped: todo list"] == 1


def test_a_json_document_of_another_kind_is_not_an_export() -> None:
    assert not opencode_export.detect(registry.Probe(name="x.json", head=b'{"info": {"id": "abc"}, "messages": []}'))


def test_unit_of_maps_message_part_and_session_files_to_the_session_folder(tmp_path: Path) -> None:
    storage = tmp_path / "opencode" / "storage"
    shutil.copytree(STORAGE, storage)
    msg_file = next((storage / "message").glob("ses_*/msg_*.json"))
    unit = msg_file.parent
    part_file = next((storage / "part" / msg_file.stem).glob("prt_*.json"))
    session_file = next((storage / "session").glob(f"*/{unit.name}.json"))
    for path in (msg_file, part_file, session_file, unit):
        assert opencode_storage.unit_of(PurePath(path), LOOK) == PurePath(unit), path
    assert opencode_storage.unit_of(PurePath(storage), LOOK) == PurePath(storage), "a storage folder named whole"
    whole = opencode_storage.parse(opencode_storage.gather(PurePath(storage), CursorContext(), LOOK))
    assert [(e.session_id, e.key) for e in whole.exchanges] == [(e.session_id, e.key) for e in _storage().exchanges]
    assert opencode_storage.unit_of(PurePath(storage / "project" / "x.json"), LOOK) is None
    assert opencode_storage.unit_of(PurePath(tmp_path / "notes" / "msg_1.json"), LOOK) is None
    part_file.write_bytes(part_file.read_bytes()[:20])  # being written: its session is found by its message
    assert opencode_storage.unit_of(PurePath(part_file), LOOK) == PurePath(unit)


def test_gather_reads_one_session_and_a_new_message_adds_only_its_exchange(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    shutil.copytree(STORAGE, storage)
    whole = _main(_storage())
    unit = storage / "message" / whole[0].session_id
    assert opencode_storage.detect(registry.Probe(entries=LOOK.entries(unit)))
    # the session as it was before its last prompt: the last user message and its answer not yet written
    last = whole[-1].key
    later = sorted(p for p in unit.glob("msg_*.json") if p.stem >= last)
    moved = tmp_path / "later"
    moved.mkdir()
    for p in later:
        shutil.move(p, moved / p.name)
    before = opencode_storage.parse(opencode_storage.gather(PurePath(unit), CursorContext(), LOOK))
    assert [e.key for e in before.exchanges] == [e.key for e in whole[:-1]]
    assert before.context.session_id == whole[0].session_id and before.context.cwd == "/home/ana/src/tidewater"
    for p in later:  # OpenCode writes the new message files
        shutil.move(moved / p.name, unit / p.name)
    after = opencode_storage.parse(opencode_storage.gather(PurePath(unit), before.context, LOOK))
    assert [(e.key, e.render()) for e in after.exchanges] == [(e.key, e.render()) for e in whole]
    assert {e.key for e in after.exchanges} - {e.key for e in before.exchanges} == {last}
    refs = [a.ref for a in after.ledger.entries]
    assert len(refs) == len(set(refs)) and all(r.split("/")[0] in ("message", "part", "session", "project")
                                               for r in map(str, refs))


def test_a_half_written_message_file_is_counted_and_read_again_whole(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    shutil.copytree(STORAGE, storage)
    whole = _main(_storage())
    unit = storage / "message" / whole[0].session_id
    target = unit / f"{whole[1].key}.json"
    full = target.read_bytes()
    target.write_bytes(full[: len(full) // 2])
    cut = opencode_storage.parse(opencode_storage.gather(PurePath(unit), CursorContext(), LOOK))
    counts = cut.ledger.counts()
    assert counts["skipped: not a JSON object (being written, or too large to read)"] == 1
    assert counts["skipped: part of no message read"] >= 1
    assert whole[0].key in {e.key for e in cut.exchanges}, "an earlier exchange is never lost"
    target.write_bytes(full)
    again = opencode_storage.parse(opencode_storage.gather(PurePath(unit), cut.context, LOOK))
    assert [e.render() for e in again.exchanges] == [e.render() for e in whole]


def test_the_database_reads_as_the_same_exchanges_and_only_changed_sessions_again(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    build_db(STORAGE, db)
    assert registry.database_for(db.name) is opencode_db.FORMAT is registry.database_for("opencode-dev.db")
    assert registry.database_for("state.db") is None
    assert opencode_db.detect(registry.Probe(name=db.name, head=db.read_bytes()[:4096]))
    first = opencode_db.parse(opencode_db.gather(PurePath(db), CursorContext(), LOOK))
    storage = _storage()
    assert sorted((e.session_id, e.key, e.render(), e.kind, e.agent) for e in first.exchanges) == \
        sorted((e.session_id, e.key, e.render(), e.kind, e.agent) for e in storage.exchanges), \
        "a session migrated into the database keeps its exchanges' ids"
    con = sqlite3.connect(db)
    rows = con.execute("SELECT count(*) FROM message").fetchone()[0] + con.execute("SELECT count(*) FROM part"
                                                                                  ).fetchone()[0]
    assert len(first.ledger.entries) == rows and len({a.ref for a in first.ledger.entries}) == rows
    assert first.context.read_end > 0
    # nothing changed: nothing gathered
    idle = opencode_db.gather(PurePath(db), replace_end(first.context, 1), LOOK)
    assert not idle.rows
    # a new prompt in the long session, as OpenCode writes it
    sid = next(e.session_id for e in first.exchanges if e.title == "Port the scheduler to anyio")
    stamp = first.context.read_end + 5000
    user = {"role": "user", "time": {"created": stamp}, "agent": "build",
            "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}}
    part = {"type": "text", "text": "Now wire the cancellation scopes into the scheduler", "time": {"start": stamp}}
    con.execute("INSERT INTO message VALUES (?,?,?,?,?)", ("msg_a0000000000aNewPromptXyz1", sid, stamp, stamp,
                                                          json.dumps(user)))
    con.execute("INSERT INTO part VALUES (?,?,?,?,?,?)", ("prt_a0000000000aNewPromptXyz1",
                                                         "msg_a0000000000aNewPromptXyz1", sid, stamp, stamp,
                                                         json.dumps(part)))
    con.commit()
    con.close()
    grown = opencode_db.parse(opencode_db.gather(PurePath(db), first.context, LOOK))
    assert {e.session_id for e in grown.exchanges} == {sid}, "only the changed session is read again"
    new = [e for e in grown.exchanges if e.key == "msg_a0000000000aNewPromptXyz1"]
    assert len(new) == 1 and new[0].user == "Now wire the cancellation scopes into the scheduler"
    old = {(e.key, e.render()) for e in first.exchanges if e.session_id == sid}
    assert old <= {(e.key, e.render()) for e in grown.exchanges}, "the session's earlier exchanges keep their ids"
    assert grown.context.read_end == stamp


def replace_end(ctx: CursorContext, ahead: int) -> CursorContext:
    from dataclasses import replace
    return replace(ctx, read_end=ctx.read_end + ahead)


def test_a_bad_row_is_counted_not_a_crash() -> None:
    rows = opencode_db.rows_of({
        "session": [{"id": "ses_1", "directory": "/w/p", "title": "t", "time_updated": 5}],
        "message": [{"id": "msg_1", "session_id": "ses_1", "time_updated": 5, "data": "{not json"},
                    {"id": "msg_2", "session_id": "ses_1", "time_updated": 6,
                     "data": json.dumps({"role": "user", "time": {"created": 6}})}],
        "part": [{"id": "prt_1", "message_id": "msg_2", "session_id": "ses_1", "time_updated": 6,
                  "data": json.dumps({"type": "text", "text": "hello there"})},
                 {"id": "prt_2", "message_id": "msg_1", "session_id": "ses_1", "time_updated": 6,
                  "data": json.dumps({"type": "text", "text": "lost"})}],
    })
    parsed = opencode_db.parse(Input(rows=rows))
    assert [e.user for e in parsed.exchanges] == ["hello there"]
    assert parsed.exchanges[0].project == "/w/p"
    assert parsed.ledger.counts() == {"skipped: not a JSON object": 1, "skipped: part of no message read": 1,
                                      "stored": 2}


@pytest.mark.parametrize("fmt", [opencode_storage.FORMAT, opencode_db.FORMAT])
def test_the_formats_declare_where_opencode_keeps_them(fmt: registry.Format) -> None:
    assert fmt.ids == "message" and fmt.gather is not None and fmt.places
    place = fmt.places[0]
    assert place.linux and place.macos and place.windows and place.globs
    assert all("opencode" in p for p in (*place.linux, *place.macos, *place.windows))


def test_opencode_2_session_messages_read_with_the_same_rules(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    build_v2_db(db)
    parsed = opencode_db.parse(opencode_db.gather(PurePath(db), CursorContext(), LOOK))
    ex = parsed.exchanges
    assert [e.user for e in ex] == ["Rename the flag --fast to --quick everywhere\n[image: flags.png]",
                                    "!git status --short", "", "Ahora actualiza también la documentación, por favor."]
    first = ex[0]
    assert first.assistant == ("[tool: grep] --fast\n  -> cli.py:12: --fast\n[tool: edit] /srv/app/cli.py\n"
                               "  -> error: oldString not found\n"
                               "Renamed the flag in cli.py; the docs still say --fast.")
    assert "grep first" not in first.render() and dict(first.extra)["model"] == "gpt-5.2"
    assert first.project == "/srv/app" and first.title == "Rename the fast flag"
    assert first.files == ("/srv/app/cli.py",)
    assert ex[1].assistant == "[tool: shell] git status --short\n  -> M cli.py"
    assert ex[2].kind == "summary" and ex[2].assistant == "We renamed --fast to --quick in cli.py."
    assert ex[3].assistant == "[error] api: rate limited"
    assert all("Background task finished" not in e.render() and "Working directory" not in e.render() for e in ex)
    counts = parsed.ledger.counts()
    assert counts["skipped: x-hologram message"] == 1 and counts["skipped: agent-switched message"] == 1
    assert counts["skipped: system message"] == 1
    assert counts["skipped: synthetic text (OpenCode's injection)"] == 1


def test_opencode_2_copies_of_opencode_1_messages_are_not_stored_twice(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    build_db(STORAGE, db)
    legacy = opencode_db.parse(opencode_db.gather(PurePath(db), CursorContext(), LOOK))
    con = sqlite3.connect(db)
    con.executescript(SCHEMA_V2)
    sid, key = legacy.exchanges[0].session_id, legacy.exchanges[0].key
    copy = {"text": legacy.exchanges[0].user, "files": [], "agents": [], "references": [],
            "time": {"created": 1760012401000}}
    con.execute("INSERT INTO session_message VALUES (?,?,?,?,?,?)",
                ("evt_legacy_backfill_m_0000001a", sid, "user", 1760012401000, 1760012401000, json.dumps(copy)))
    con.commit()
    con.close()
    both = opencode_db.parse(opencode_db.gather(PurePath(db), CursorContext(), LOOK))
    assert [(e.session_id, e.key) for e in both.exchanges] == [(e.session_id, e.key) for e in legacy.exchanges]
    assert both.ledger.counts()["skipped: copy of an OpenCode 1 message"] == 1
    assert key.startswith("msg_")


def test_a_session_with_no_message_yet_is_read_as_nothing_not_an_error(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    shutil.copytree(STORAGE, storage)
    unit = storage / "message" / "ses_9ff0000000001NoMessagesYet"
    unit.mkdir()
    project = next((storage / "project").glob("*.json")).stem
    (storage / "session" / project / f"{unit.name}.json").write_text(json.dumps({
        "id": unit.name, "version": "1.0.150", "projectID": project, "directory": "/home/ana/src/tidewater",
        "title": "New session - 2025-10-11T09:00:00.000Z", "time": {"created": 1760173200000,
                                                                    "updated": 1760173200000}}))
    parsed = opencode_storage.parse(opencode_storage.gather(PurePath(unit), CursorContext(), LOOK))
    assert parsed.exchanges == [] and parsed.ledger.counts() == {"skipped: project record": 1,
                                                                  "skipped: session record": 1}


def test_a_session_s_newest_part_folders_are_members_of_its_unit(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    shutil.copytree(STORAGE, storage)
    long = next(v for v in _by_session(_storage()).values() if v[0].title == "Port the scheduler to anyio")
    unit = storage / "message" / long[0].session_id
    found = opencode_storage.members(PurePath(unit), LOOK)
    newest = sorted((p.stem for p in unit.glob("msg_*.json")), reverse=True)[:32]
    assert found == [PurePath(storage / "part" / m) for m in newest], "the parts an answer streams into"
    assert opencode_storage.members(PurePath(storage), LOOK) == []


def test_a_large_part_row_is_read_as_what_the_parse_uses_of_it(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    build_db(STORAGE, db)
    first = opencode_db.parse(opencode_db.gather(PurePath(db), CursorContext(), LOOK))
    ex = next(e for e in first.exchanges if e.title == "Flaky retry backoff test")
    con = sqlite3.connect(db)
    big_output = "line of a very long test log\n" * 20000
    written = "x = 1\n" * 30000
    rows = {r[0]: json.loads(r[1]) for r in con.execute(
        "SELECT id, data FROM part WHERE message_id IN (SELECT id FROM message WHERE session_id = ?)",
        (ex.session_id,))}
    read_id = next(i for i, d in rows.items() if d.get("tool") == "read")
    edit_id = next(i for i, d in rows.items() if d.get("tool") == "edit")
    image_id = next(i for i, d in rows.items() if d.get("mime") == "image/png")
    rows[read_id]["state"]["output"] = big_output
    rows[edit_id]["state"]["input"]["content"] = written  # a file's whole content in a tool's input
    rows[image_id]["url"] = "data:image/png;base64," + "A" * 200000
    for rid in (read_id, edit_id, image_id):
        con.execute("UPDATE part SET data = ? WHERE id = ?", (json.dumps(rows[rid]), rid))
    con.commit()
    con.close()
    inp = opencode_db.gather(PurePath(db), CursorContext(), LOOK)
    assert max(len(str(r.get("data", ""))) for r in inp.rows) < opencode_db.BIG_PART, "no large row carried whole"
    again = next(e for e in opencode_db.parse(inp).exchanges if e.key == ex.key)
    assert "[tool: read] /home/ana/src/tidewater/tests/test_retry.py\n  -> line of a very long test log" in \
        again.assistant
    assert "[tool: edit] /home/ana/src/tidewater/src/retry.py" in again.assistant
    assert again.tools == ex.tools and again.files == ex.files
    image = next(e for e in opencode_db.parse(inp).exchanges if e.user.endswith("[image: ci-failure.png]"))
    assert image.user.endswith("[image: ci-failure.png]")


def test_an_opencode_2_export_reads_as_its_database_rows_do(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    build_v2_db(db)
    from_db = opencode_db.parse(opencode_db.gather(PurePath(db), CursorContext(), LOOK))
    doc = {"info": {"id": V2_SESSION, "slug": "rename-flag", "projectID": "global", "directory": "/srv/app",
                    "title": "Rename the fast flag", "version": "2.1.4", "time": {"created": 1790000000000}},
           "messages": [{"id": rid, "type": mtype, **data} for rid, mtype, data in V2_ROWS]}
    data = json.dumps(doc, indent=2).encode()
    assert registry.detect_file(data, "rename.json") is opencode_export.FORMAT
    parsed = opencode_export.parse(Input(name="rename.json", data=data))
    assert [(e.key, e.render(), e.kind) for e in parsed.exchanges] == \
        [(e.key, e.render(), e.kind) for e in from_db.exchanges]
    refs = [str(a.ref) for a in parsed.ledger.entries]
    assert len(refs) == len(set(refs)) and {r.split("#")[0] for r in refs} == \
        {"info", *(f"messages[{i}]" for i in range(len(V2_ROWS)))}


def test_kilos_database_reads_as_opencodes_under_its_own_agent(tmp_path: Path) -> None:
    """Kilo's ``kilo.db`` (an OpenCode fork, OpenCode's schema): the same exchanges as OpenCode's database gives,
    every row accounted for, their agent and source kind ``kilo`` (a sub-agent's ``kilo/subagent``)."""
    from mempald.normalize import kilo_db

    db = tmp_path / "kilo" / "kilo.db"
    db.parent.mkdir()
    build_db(STORAGE, db)
    assert registry.database_for("kilo.db") is kilo_db.FORMAT and kilo_db.FORMAT.gather is opencode_db.gather
    assert kilo_db.detect(registry.Probe(name=db.name, head=db.read_bytes()[:4096]))
    assert not opencode_db.detect(registry.Probe(name=db.name, head=db.read_bytes()[:4096]))
    kilo = kilo_db.parse(opencode_db.gather(PurePath(db), CursorContext(), LOOK))  # (its gather)
    same = opencode_db.parse(opencode_db.gather(PurePath(db), CursorContext(), LOOK))
    assert [(e.session_id, e.key, e.render()) for e in kilo.exchanges] == \
        [(e.session_id, e.key, e.render()) for e in same.exchanges]
    assert {e.source_kind for e in kilo.exchanges} == {"kilo"}
    assert {e.agent for e in kilo.exchanges} == {a.replace("opencode", "kilo") for a in {e.agent for e in
                                                                                        same.exchanges}}
    assert "kilo/subagent" in {e.agent for e in kilo.exchanges}
    assert kilo.context.format == "kilo_db" and kilo.ledger.entries == same.ledger.entries
