"""Gemini CLI as a declared format: where it is found, ids from its own message ids (a session rewritten a hundred
times keeps every exchange's key), and the project folder behind ``~/.gemini/tmp/<project>/`` (projects.json in
current releases, ``.project_root`` before)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path, PurePath
from typing import Any

from mempald.normalize import gemini, registry
from mempald.normalize.format import Input
from mempald.normalize.gemini_project import project_dir, project_folder
from mempald.normalize.model import CursorContext
from mempald.sources.places import expand
from tests.conftest import REPO
from tests.unit.normalize.test_antigravity import DirLook


def _message(i: int, kind: str, text: str, **kw: Any) -> dict[str, Any]:
    return {"id": f"m-{i:04d}-{kind}", "timestamp": f"2026-03-02T10:{i // 60 % 60:02d}:{i % 60:02d}Z", "type": kind,
            "content": text, **kw}


def _session(turns: int) -> bytes:
    messages: list[dict[str, Any]] = []
    for i in range(turns):
        messages.append(_message(i, "user", f"запрос номер {i}: fix the cache key"))
        messages.append(_message(i, "gemini", f"answer {i}", model="gemini-3-pro-preview", toolCalls=[
            {"id": f"call-{i}", "name": "read_file", "args": {"absolute_path": f"/w/app/mod{i}.py"},
             "status": "error" if i % 7 == 3 else "success", "resultDisplay": "boom" if i % 7 == 3 else "ok"}]))
    doc = {"sessionId": "5b1c2d3e-0000-4000-8000-00000000abcd", "projectHash": "app", "startTime": "2026-03-02T10:00Z",
           "lastUpdated": f"2026-03-02T11:{turns % 60:02d}:00Z", "messages": messages}
    return json.dumps(doc, ensure_ascii=False, indent=2).encode()


def _parse(data: bytes, name: str = "session-2026-03-02T10-00-5b1c2d3e.json") -> list[tuple[str, str]]:
    parsed = gemini.parse(Input(name=name, data=data, context=CursorContext(format="gemini")))
    return [(e.key, e.render()) for e in parsed.exchanges]


def test_gemini_declares_its_places_and_message_ids() -> None:
    fmt = gemini.FORMAT
    assert fmt.reads == "document" and fmt.ids == "message" and fmt.unit == "file"
    [place] = fmt.places
    home = {"HOME": "/h"}
    assert place.linux == place.macos and expand(place.linux[0], home) == Path("/h/.gemini/tmp")
    assert expand(place.windows[0], {**home, "USERPROFILE": "C:/Users/h"}) == Path("C:/Users/h/.gemini/tmp")
    for rel in ("app/chats/session-2026-03-02T10-00-5b1c2d3e.json", "app/chats/session-2026-03-02T10-00-5b1c2d3e.jsonl",
                "app/chats/5b1c2d3e-0000-4000-8000-00000000abcd/session-2026-03-02T10-05-aa11bb22.jsonl",
                "9cfc5cfa6f8f/checkpoint-kvantum.json"):
        assert any(PurePath(rel).match(g) for g in place.globs), rel


def test_a_session_rewritten_a_hundred_times_keeps_every_key() -> None:
    seen: dict[str, str] = {}
    for turns in range(1, 101):
        data = _session(turns)
        assert registry.detect_file(data[: registry.HEAD_BYTES], "session-x.json") is gemini.FORMAT
        got = _parse(data)
        assert len(got) == turns and len({k for k, _ in got}) == turns
        for key, text in got:
            assert seen.setdefault(key, text) == text, key  # an exchange once stored never changes its key or text
    assert len(seen) == 100
    last = _parse(_session(100))
    assert "[tool: read_file] /w/app/mod3.py\n  -> error: boom" in last[3][1]
    assert last[0][1].startswith("> запрос номер 0")


def test_a_jsonl_chat_rewritten_in_place_keeps_its_keys() -> None:
    header = {"sessionId": "5b1c2d3e-0000-4000-8000-00000000abcd", "projectHash": "app",
              "startTime": "2026-03-02T10:00Z", "lastUpdated": "2026-03-02T10:00Z", "kind": "main"}
    lines = [header, _message(0, "user", "first"), _message(0, "gemini", "draft"),
             _message(0, "gemini", "final answer"), {"$set": {"lastUpdated": "2026-03-02T10:01Z"}},
             _message(1, "user", "second"), _message(1, "gemini", "two")]
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    got = _parse(data, "session-2026-03-02T10-00-5b1c2d3e.jsonl")
    assert [k for k, _ in got] == ["m-0000-user", "m-0001-user"]
    assert got[0][1] == "> first\n\nfinal answer"  # a message written again replaces its copy: no duplicate


def test_the_project_folder_behind_the_chat(tmp_path: Path) -> None:
    gem = tmp_path / ".gemini"
    chat = gem / "tmp" / "app" / "chats" / "session-2026-03-02T10-00-5b1c2d3e.json"
    sub = chat.parent / "5b1c2d3e-0000-4000-8000-00000000abcd" / "session-2026-03-02T10-05-aa11bb22.jsonl"
    checkpoint = gem / "tmp" / "app" / "checkpoint-release.json"
    sub.parent.mkdir(parents=True)
    look = DirLook()
    assert project_dir(chat) == project_dir(sub) == project_dir(checkpoint) == gem / "tmp" / "app"
    assert project_folder(chat, look) == ""  # no mapping yet: no project, no error
    (gem / "projects.json").write_text(json.dumps({"projects": {"/home/dev/app": "app", "/home/dev/other": "other"}}))
    assert {project_folder(p, look) for p in (chat, sub, checkpoint)} == {"/home/dev/app"}
    hashed = hashlib.sha256(b"/home/dev/legacy").hexdigest()
    old = gem / "tmp" / hashed / "chats" / "session-2025-11-21T20-38-8016034b.json"
    (gem / "projects.json").write_text(json.dumps({"projects": {"/home/dev/legacy": "legacy"}}))
    assert project_folder(old, look) == "/home/dev/legacy"  # a folder of an earlier release, named by the hash
    (gem / "tmp" / "app" / ".project_root").write_text("/srv/app\n")
    assert project_folder(chat, look) == "/srv/app"
    assert project_folder(PurePath("/elsewhere/notes.json"), look) == ""


def test_a_session_cut_while_the_cli_writes_it_reads_nothing_now_and_all_of_it_later() -> None:
    whole = _session(5)
    for cut in (len(whole) // 3, len(whole) - 2):
        parsed = gemini.parse(Input(name="session-x.json", data=whole[:cut], context=CursorContext(format="gemini")))
        assert parsed.exchanges == [] and parsed.context.format == "gemini"  # never read as plain text
        [entry] = parsed.ledger.entries
        assert entry.outcome == "skipped" and "incomplete JSON" in entry.what
    assert len(_parse(whole)) == 5
    checkpoint = json.dumps([{"role": "user", "parts": [{"text": "привет"}]},
                             {"role": "model", "parts": [{"text": "ок"}]}])
    cut = gemini.parse(Input(name="checkpoint-a.json", data=checkpoint[:30].encode()))
    assert cut.exchanges == []


def test_the_format_reads_the_project_beside_the_chat(tmp_path: Path) -> None:
    gem = tmp_path / ".gemini"
    chat = gem / "tmp" / "app" / "chats" / "session-2026-03-02T10-00-5b1c2d3e.json"
    chat.parent.mkdir(parents=True)
    chat.write_bytes(_session(2))
    (gem / "projects.json").write_text(json.dumps({"projects": {"/home/dev/app": "app"}}))
    assert gemini.FORMAT.beside is not None
    ctx = gemini.FORMAT.beside(chat, CursorContext(format="gemini"), DirLook())
    assert ctx.cwd == "/home/dev/app"
    parsed = gemini.parse(Input(name=str(chat), data=chat.read_bytes(), context=ctx))
    assert {e.project for e in parsed.exchanges} == {"/home/dev/app"}


def test_a_checkpoint_in_the_current_shape_is_read_like_the_legacy_array() -> None:
    path = REPO / "tests" / "fixtures" / "gemini" / "checkpoint-importer.json"
    data = path.read_bytes()
    assert registry.detect_file(data[: registry.HEAD_BYTES], path.name) is gemini.FORMAT
    assert registry.detect_file(data[:300], path.name) is gemini.FORMAT  # a head cut anywhere
    parsed = gemini.parse(Input(name=str(path), data=data, context=CursorContext(format="gemini")))
    assert [e.user for e in parsed.exchanges] == ["почему импортёр повторяет запрос три раза?",
                                                  "run the importer tests"]
    assert {e.cwd for e in parsed.exchanges} == {"/home/dev/okapi"}  # from the setup context, which is no prompt
    assert "[tool: read_file] /home/dev/okapi/importer.py\n  -> RETRIES = 3" in parsed.exchanges[0].assistant
    assert "  -> error: Command exited with code 1" in parsed.exchanges[1].assistant
    assert [a.ref for a in parsed.ledger.entries] == [f"history[{i}]" for i in range(10)]
    legacy = json.dumps(json.loads(data)["history"]).encode()
    again = gemini.parse(Input(name=str(path), data=legacy, context=CursorContext(format="gemini")))
    assert [(e.key, e.render()) for e in again.exchanges] == [(e.key, e.render()) for e in parsed.exchanges]
