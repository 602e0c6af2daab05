"""The forget list and the admission the ingest consults (``mempald.ingest.forget_list``), on a real state
database; the pieces of export and import that need no daemon (``mempald.features.export`` / ``importer``)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from mempald.errors import Forbidden, InvalidInput
from mempald.features.export import check_target, render_session, safe_name
from mempald.features.forget import Selection, session_rules, summary
from mempald.features.importer import _lines, parse_record
from mempald.ingest.drawers import Drawer, SourceInfo
from mempald.ingest.forget_list import Admission, ForgetList, Rule
from mempald.sources.exclude import ExcludeFilter
from mempald.state.db import State

INFO = SourceInfo(kind="claude_code", path="/t/a.jsonl", source_key="k", machine="m", user="u")


def drawer(i: int, session: str = "s1", ts: float = 100.0, room: str = "general", cwd: str = "/w/app",
           context: str = "") -> Drawer:
    payload: dict[str, Any] = {"session_id": session, "source_path": "/t/a.jsonl", "wing": "app", "room": room,
                               "ts": ts, "cwd": cwd, "text": f"text {i}", "position": i, "chunk_index": 0}
    if context:
        payload["context"] = context
    return Drawer(f"id{i}", f"text {i}", payload)


def test_rules_persist_cover_by_session_source_room_and_time(tmp_path: Path) -> None:
    state = State(tmp_path / "state.sqlite3")
    fl = ForgetList(state)
    fl.add([Rule(session="s1", until=150.0, at=1.0, actor="user", reason="why", paths=("/t/a.jsonl",)),
            Rule(source="/t/b.jsonl", room="problems", until=1e12)])
    assert fl.covers(drawer(0).payload)
    assert not fl.covers(drawer(0, ts=200.0).payload), "what a session says after the forget is stored"
    assert fl.covers({**drawer(0, session="s9").payload, "source_path": "/t/b.jsonl", "room": "problems"})
    assert not fl.covers({**drawer(0, session="s9").payload, "source_path": "/t/b.jsonl"})
    fl.add([Rule(session="s1", until=120.0, paths=("/t/c.jsonl",))])  # a later forget of the same session
    (s1,) = [r for r in fl.rules() if r.session == "s1"]
    assert s1.until == 150.0 and s1.paths == ("/t/a.jsonl", "/t/c.jsonl")
    state.close()
    again = ForgetList(State(tmp_path / "state.sqlite3"))  # the daemon restarted
    assert len(again) == 2 and again.covers(drawer(0).payload)
    assert [r.session for r in again.lift([Rule(session="s1")])] == ["s1"]
    assert not again.covers(drawer(0).payload) and len(again) == 1


def test_admission_drops_what_is_forgotten_or_excluded_and_mends_contexts(tmp_path: Path) -> None:
    fl = ForgetList(State(tmp_path / "state.sqlite3"))
    fl.add([Rule(session="s1", room="secret", until=1e12)])
    admit = Admission(ExcludeFilter(lambda: ["**/stealth/**"]), fl)
    batch = [drawer(0), drawer(1, room="secret", context="text 0"), drawer(2, context="text 1"),
             drawer(3, context="text 2"), drawer(4, session="s2", cwd="/w/stealth/x")]
    kept = admit.drawers(batch, INFO)
    assert [d.id for d in kept] == ["id0", "id2", "id3"]
    assert kept[1].payload["context"] == "text 0", "the forgotten drawer's text is not the next one's context"
    assert kept[2].payload["context"] == "text 2"
    assert admit.blocked == {"forgotten": 1, "excluded": 1}
    first_gone = admit.drawers([drawer(1, room="secret"), drawer(2, context="text 1")], INFO)
    assert [d.id for d in first_gone] == ["id2"] and "context" not in first_gone[0].payload
    manual = SourceInfo(kind="manual", path="mempal:user", source_key="manual:user", machine="m", user="u")
    assert len(admit.drawers(batch, manual)) == 5, "what a person saves by hand is always stored"


def test_a_selection_names_something_and_makes_its_rules() -> None:
    with pytest.raises(InvalidInput, match="say what to forget"):
        Selection(room="x").check()
    with pytest.raises(InvalidInput, match="absolute"):
        Selection(source="rel.jsonl").check()
    matched = [drawer(0).payload, drawer(1, session="s2").payload,
               {**drawer(2).payload, "source_path": "mempal:user", "session_id": "manual:k"}]
    (one,) = Selection(session="s1", room="r").rules(matched, 5.0, "user", "why")
    assert (one.session, one.room, one.until, one.paths) == ("s1", "r", 5.0, ("/t/a.jsonl",))
    per_session = Selection(wing="app").rules(matched, 5.0, "user", "")
    assert sorted(r.session for r in per_session) == ["s1", "s2"], "nothing saved by hand gets a rule"
    assert [r.session for r in session_rules(matched, 5.0, "u", "")] == ["s1", "s2"]
    s = summary(matched)
    assert (s["drawers"], s["sessions"], s["sources"], s["wings"]) == (3, 3, 2, {"app": 3})


def test_import_lines_are_capped_and_records_checked() -> None:
    fh = io.BytesIO(b'{"id": "x"}\n' + b"y" * 100 + b"\nlast")
    assert list(_lines(fh, 50)) == [(1, b'{"id": "x"}\n'), (2, None), (3, b"last")]
    good = {"id": "6F1C3A52-4D0E-5B8E-9A3F-6D656D70616C", "text": "hi", "wing": "w"}
    assert parse_record(json.dumps(good).encode()) == ("6f1c3a52-4d0e-5b8e-9a3f-6d656d70616c",
                                                       {"text": "hi", "wing": "w"})
    assert "not JSON" in str(parse_record(b"{nope"))
    assert "UUID" in str(parse_record(b'{"id": "nope", "text": "x"}'))
    assert parse_record(b'{"id": "6f1c3a52-4d0e-5b8e-9a3f-6d656d70616c"}') == "no text"
    assert parse_record(b"[1]") == "not a JSON object"


def test_export_targets_and_notes(home: Path, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="absolute"):
        check_target("out.jsonl")
    with pytest.raises(Forbidden, match="daemon's own"):
        check_target(str(home / ".local/share/mempald/out.jsonl"))
    with pytest.raises(Forbidden):
        check_target(str(home / ".local"))  # it holds the data dir
    assert check_target(str(tmp_path / "x.jsonl")) == tmp_path / "x.jsonl"
    assert safe_name("../../etc/passwd") == "etc-passwd" and safe_name("") == "untitled"
    note = render_session("app", "s1", [
        {**drawer(0).payload, "id": "id0", "timestamp": "2026-01-02T03:04:05Z", "exchange_key": "k0",
         "title": "Fix the deploy", "agent": "claude"},
        {**drawer(1).payload, "id": "id1", "timestamp": "2026-01-02T03:05:00Z", "exchange_key": "k1",
         "status": "deleted", "delete_reason": "wrong"}])
    assert note.startswith('---\nwing: "app"\nsession: "s1"\nsource: "/t/a.jsonl"\n')
    assert "\n# Fix the deploy\n" in note and "\n## 1 · 2026-01-02 03:04 · general\n" in note
    assert "text 0" in note and "<!-- drawer id0 -->" in note and "[!warning] soft-deleted: wrong" in note
