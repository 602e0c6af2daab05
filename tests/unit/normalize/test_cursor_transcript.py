"""Cursor's agent transcripts (issue 43): ``~/.cursor/projects/<slug>/agent-transcripts/`` in both shapes (the
``.jsonl`` of current releases, the legacy ``.txt``), over samples written here in the real shapes
(``tests/fixtures/cursor_transcript``): prompts as typed, Cursor's own follow-ups never a prompt, answers whole,
tool calls summarised, thinking dropped, every line accounted for, the same keys as Cursor's store, the workspace
found on disk, bad input counted."""

from __future__ import annotations

import json
from pathlib import Path, PurePath

import pytest

from mempald.normalize import cursor, cursor_transcript, cursor_transcript_beside, registry
from mempald.normalize.cursor_bubbles import prompt_key
from mempald.normalize.cursor_transcript_text import said, stamp
from mempald.normalize.format import Input
from mempald.normalize.ledger import Account
from mempald.normalize.model import CursorContext, Exchange
from mempald.sources.look import LOOK
from mempald.sources.roots import Source
from tests.conftest import REPO
from tests.cursor_samples import answer, create_db, user, write_conversation

FIXTURES = REPO / "tests/fixtures/cursor_transcript/projects/home-dev-code-spotter/agent-transcripts"
CID = "4f0c2a9e-5b1d-4c7e-9a3f-2d8e6b1c0a57"
SUB = "9b2e7d41-3c6a-4f58-8e1d-0a7c5b3f2e96"
LEGACY = "c3a81f0e-6d2b-4e95-b7c4-18f2a9d05e3b"
JSONL = FIXTURES / CID / f"{CID}.jsonl"
SUBAGENT = FIXTURES / CID / "subagents" / f"{SUB}.jsonl"
TXT = FIXTURES / f"{LEGACY}.txt"
FIRST = "Why does the rate limiter let bursts through? It should cap at 20 a second."
SECOND = "Apply it and add a test for a burst of 20, like in the screenshot."


def parse(path: Path | str, data: bytes | None = None, cwd: str = "") -> tuple[list[Exchange], dict[str, int],
                                                                              list[Account]]:
    raw = Path(path).read_bytes() if data is None else data
    out = cursor_transcript.parse(Input(name=str(path), data=raw, context=CursorContext(format="cursor_transcript",
                                                                                          cwd=cwd)))
    return out.exchanges, out.ledger.counts(), out.ledger.entries


def test_both_shapes_are_detected_and_nothing_else_is_taken() -> None:
    for path in (JSONL, SUBAGENT, TXT):
        found = registry.detect_file(path.read_bytes()[: registry.HEAD_BYTES], path.name)
        assert found is cursor_transcript.FORMAT, path
    claude = b'{"type":"user","message":{"role":"user","content":"hi"},"uuid":"u1","sessionId":"s"}\n'
    assert registry.detect_file(claude, "s.jsonl") is not cursor_transcript.FORMAT
    assert registry.detect_file(b"user: a note about users\nmore\n", "notes.txt") is registry.TEXT
    assert registry.by_name("cursor").agent == "cursor" and registry.for_agent("cursor") is cursor.FORMAT


def test_a_jsonl_transcript_keeps_what_was_typed_and_the_whole_answer() -> None:
    assert not JSONL.read_bytes().endswith(b"\n")  # as Cursor writes them: the last record has no newline
    exchanges, counts, entries = parse(JSONL)
    assert [e.user for e in exchanges] == [FIRST, SECOND]
    assert [e.key for e in exchanges] == [prompt_key(CID, FIRST, {}), prompt_key(CID, SECOND, {})]
    first, second = exchanges
    assert {e.session_id for e in exchanges} == {CID} and {e.source_kind for e in exchanges} == {"cursor"}
    assert first.timestamp == "2026-11-06T03:35:00Z"  # 9:05 AM at UTC+5:30, read with its own offset
    assert "```ts\nbucket.refill(now);\nif (!bucket.take()) return reject();\n```" in first.assistant
    assert "[tool: ReadFile] /home/dev/code/spotter/src/limiter.ts" in first.assistant
    assert "[tool: Shell] npm test -- limiter" in first.assistant
    assert "[REDACTED]" not in first.assistant and "<user_query>" not in first.user
    assert first.files == ("/home/dev/code/spotter/src/limiter.ts",)  # Grep's folder is searched, not touched
    # attachments recorded as such, never pasted into the prompt
    assert dict(second.extra)["attachments"].split("\n") == [
        "/home/dev/code/spotter/assets/image-1d2c.png", "/home/dev/code/spotter/src/limiter.ts:12-18"]
    assert "code_selection" not in second.user and "image" not in second.user.lower().replace("screenshot", "")
    # Cursor's own follow-up after the sub-agent is no prompt: its answer stays in the exchange before it
    assert "subagent result" not in " ".join(e.user for e in exchanges)
    assert second.assistant.endswith("covers a burst of 20.")  # the last line, with no newline after it, read
    assert "/home/dev/code/spotter/test/limiter.test.ts" in second.files and "ApplyPatch" in second.tools
    lines = [n for n, ln in enumerate(JSONL.read_text().split("\n"), 1) if ln.strip()]
    assert sorted(int(str(a.ref).split()[1]) for a in entries) == lines  # every line, once
    assert counts == {"stored": 6, "folded: tool call": 4, "folded: Cursor's own follow-up (not typed)": 1}


def test_the_same_chat_in_cursors_store_has_the_same_keys(tmp_path: Path) -> None:
    db_path = tmp_path / "User" / "globalStorage" / "state.vscdb"
    db = create_db(db_path)
    write_conversation(db, CID, [user("u1", FIRST), answer("a1", "The bucket refills after take()."),
                                 user("u2", SECOND), answer("a2", "Done.")])
    db.close()
    inp = cursor.gather(PurePath(db_path), CursorContext(format="cursor"), LOOK)
    store = cursor.parse(inp).exchanges
    transcript, _counts, _entries = parse(JSONL)
    assert [(e.source_kind, e.session_id, e.key) for e in store] == \
        [(e.source_kind, e.session_id, e.key) for e in transcript]


def test_a_legacy_txt_transcript_drops_thinking_and_keeps_the_answer() -> None:
    exchanges, counts, _entries = parse(TXT)
    assert [e.user for e in exchanges] == ["start the docs site, I want to see it in the browser",
                                           "it shows a 404 at the root"]
    assert [e.key for e in exchanges] == [prompt_key(LEGACY, e.user, {}) for e in exchanges]
    first, second = exchanges
    assert "Preparing" not in first.assistant and "I'll tell the user" not in first.assistant  # thinking dropped
    assert first.assistant.endswith("Open `http://localhost:5173/docs/` in your browser.\n\n"
                                    "If you want me to stop it later, just say so.")
    assert "[tool: Shell] npm run docs:dev" in first.assistant and first.tools == ("LS", "Shell")
    assert "vite config sets" not in second.assistant  # a list inside the thinking stays thinking
    assert second.assistant.startswith("[tool: ReadFile] /home/dev/code/spotter/docs/vite.config.ts\n\n"
                                       "The site is configured with `base: '/docs/'`")
    assert counts == {"stored": 4, "folded: tool call": 3}


def test_a_subagent_transcript_is_one_exchange_of_its_parent_session() -> None:
    ctx = cursor_transcript_beside.beside(PurePath(SUBAGENT), CursorContext(cwd="/w"), LOOK)
    assert ctx.parent == prompt_key(CID, SECOND, {})  # the exchange whose Subagent call gave it its task
    out = cursor_transcript.parse(Input(name=str(SUBAGENT), data=SUBAGENT.read_bytes(), context=ctx))
    assert [e.parent for e in out.exchanges] == [ctx.parent]
    (ex,), counts, _entries = parse(SUBAGENT)
    assert (ex.session_id, ex.key, ex.kind, ex.user) == (CID, f"subagent:{SUB}", "subagent", "")
    assert ex.agent == "cursor/subagent" and ex.source_kind == "cursor"
    assert ex.assistant.startswith("[task] Find every caller of Bucket.take")  # its parent's task, not a prompt
    assert ex.assistant.endswith("Both call `take()` before `refill()`.")
    assert counts == {"stored": 2, "folded: task from the parent agent": 1}


def test_bad_input_is_counted_never_a_crash() -> None:
    whole = JSONL.read_bytes()
    cut = whole[: whole.rindex(b"\n") + 20]  # the last record half written
    exchanges, counts, _ = parse(JSONL, cut)
    assert counts["skipped: incomplete last line (still being written)"] == 1
    assert exchanges[-1].assistant.endswith("[tool: Write] /home/dev/code/spotter/test/limiter.test.ts")
    assert parse(JSONL, b"")[1] == {"skipped: empty": 1}
    junk = bytes(range(256)) * 4
    assert parse("x.jsonl", junk)[0] == [] and parse("x.txt", junk)[0] == []
    exchanges, counts, _ = parse("notes.txt", b"user: a note about users\nnot a transcript\n")
    assert exchanges == [] and counts == {"skipped: not a Cursor transcript (no user: / assistant: messages)": 1}
    exchanges, counts, _ = parse("x.jsonl", b'{"role":"user","message":{"content":[]}}\n[1,2]\n{"type":"turn_ended"}')
    assert exchanges == [] and counts == {"skipped: empty prompt": 1, "skipped: not an object": 1,
                                          "skipped: turn_ended marker": 1}


def test_user_messages_say_what_was_typed() -> None:
    assert stamp("Saturday, Aug 15, 2026, 6:46 PM (UTC-7)") == "2026-08-16T01:46:00Z"
    assert stamp("Sunday, Sep 20, 2026, 12:31 AM (UTC+3)") == "2026-09-19T21:31:00Z"
    assert stamp("not a time") is None
    told = said("<timestamp>Tuesday, May 5, 2026, 3:52 PM (UTC+6)</timestamp>\n<system_notification>\nThe following "
                "task has finished.\n\n<task>\nkind: shell\nstatus: error\ntask_id: 9831\ntitle: Start Supabase login"
                "\n</task>\n</system_notification>\n<user_query>Briefly inform the user about the task result and "
                "perform any follow-up actions (if needed).</user_query>")
    assert told.cursors and told.prompt == "" and told.note == "[task finished] Start Supabase login (error)"
    ctx = said("<user_info>\nOS Version: linux\nWorkspace Path: /home/dev/code/spotter\n</user_info>\n"
               "<git_status>M a.py</git_status>\n<user_query>\nfix the JWT signing\n</user_query>")
    assert (ctx.prompt, ctx.workspace, ctx.cursors) == ("fix the JWT signing", "/home/dev/code/spotter", False)
    assert said("plain words, no tags").prompt == "plain words, no tags"


def test_the_workspace_is_found_on_disk_else_a_workspace_path_else_cursor(tmp_path: Path) -> None:
    folder = tmp_path / "code" / "my_proj.v2" / "sub dir"
    folder.mkdir(parents=True)
    (tmp_path / "code" / "my").mkdir()  # a decoy: the longest name that leads on is taken
    slug = cursor_transcript_beside.cursor_slug(str(folder))
    assert not slug.startswith("-") and "_" not in slug and "." not in slug
    path = PurePath(f"/h/.cursor/projects/{slug}/agent-transcripts/{CID}/{CID}.jsonl")
    assert cursor_transcript_beside.beside(path, CursorContext(), LOOK).cwd == str(folder)
    exchanges, _c, _e = parse(JSONL, cwd=str(folder))
    assert {e.project for e in exchanges} == {str(folder)}
    unknown = PurePath(f"/h/.cursor/projects/1769488977462/agent-transcripts/{CID}.txt")
    assert cursor_transcript_beside.beside(unknown, CursorContext(), LOOK).cwd == ""
    assert {e.project for e in parse(JSONL)[0]} == {"cursor"}  # not found: the wing named for the editor
    named = json.dumps({"role": "user", "message": {"content": [{"type": "text", "text": (
        "<user_info>Workspace Path: /srv/app</user_info>\n<user_query>\nhi\n</user_query>")}]}})
    assert parse("x.jsonl", named.encode())[0][0].project == "/srv/app"


def test_the_place_names_only_the_transcripts(tmp_path: Path) -> None:
    (place,) = cursor_transcript.PLACES
    src = Source("cursor_transcript:x", tmp_path, "convos", "cursor_transcript", globs=place.globs)
    wanted = [f"Users-a-p/agent-transcripts/{CID}/{CID}.jsonl", f"Users-a-p/agent-transcripts/{LEGACY}.txt",
              f"Users-a-p/agent-transcripts/{CID}/subagents/{SUB}.jsonl"]
    unwanted = ["Users-a-p/terminals/1.txt", "Users-a-p/agent-tools/x.txt", "Users-a-p/mcps/s/tools/t.json",
                "Users-a-p/assets/image.png", "Users-a-p/worker.log"]
    assert all(src.wants(tmp_path / w) for w in wanted)
    assert not any(src.wants(tmp_path / u) for u in unwanted)


def test_a_txt_release_with_think_blocks_and_the_users_own_edits() -> None:
    text = ("user:\n[Image]\n<image_files>\nThe following images were provdied by the user and saved to the workspace "
            "for future use:\n1. C:\\Users\\dev\\.cursor\\projects\\d-work-game/assets/image-1.png\n\nThese images can "
            "be copied for use in other locations.\n</image_files>\n<user_query>\n\nwhy are two bindings null?\n"
            "</user_query>\n\nassistant:\n<think>\nThe user asks about the null bindings.\n\n1. read the generator\n"
            "</think>\nChecking the binding code first.\n\n[Tool call] read_file\n"
            "  target_file: d:\\work\\game\\Gen.cs\n"
            "[Tool call] codebase_search\n  query: UI bind component null\n  target_directories: []\n\n"
            "[Tool result] read_file\n\n[Tool result] codebase_search\n\nassistant:\n<think>\nFound it.\n</think>\n"
            "`AddComponent` accepts `null`; it now returns early.\n\nuser:\n<attached_files>\n"
            "The user made the following "
            "changes. If they reverted your changes, assume it was intentional and leave intact; ask if unsure.\n"
            "--- d:\\work\\game\\Gen.cs\t\n+++ d:\\work\\game\\Gen.cs\t\n@@ -601,7 +601,5 @@\n"
            "-                // check "
            "the alternatives/first\n+              return;\n</attached_files>\n<user_query>\nkeep my change\n"
            "</user_query>\n\nassistant:\nKept.")
    exchanges, counts, _ = parse(f"{LEGACY}.txt", text.encode())
    assert [e.user for e in exchanges] == ["why are two bindings null?", "keep my change"]
    first, second = exchanges
    assert "The user asks" not in first.assistant and "Found it" not in first.assistant  # <think> dropped
    assert first.assistant.startswith("Checking the binding code first.")
    assert first.assistant.endswith("`AddComponent` accepts `null`; it now returns early.")
    assert "[tool: codebase_search] UI bind component null" in first.assistant
    assert dict(first.extra)["attachments"] == "C:\\Users\\dev\\.cursor\\projects\\d-work-game/assets/image-1.png"
    assert dict(second.extra)["attachments"] == "d:\\work\\game\\Gen.cs"  # the file the user's own diff changed
    assert counts == {"stored": 5}


@pytest.mark.timeout(60)
def test_a_paste_of_unclosed_tags_is_read_in_one_pass() -> None:
    """Cursor's blocks are found in one pass: 20,000 unclosed tags took 78 s with a backtracking pattern."""
    told = said("<attached_files>" * 20000 + "<timestamp>" * 20000 + "<user_query>\nwhat is this?\n</user_query>")
    assert told.prompt == "what is this?" and told.attached == []
    nested = said("<additional_data>Below are some potentially helpful pieces of information\n<attached_files>\n"
                  "<file_contents>\n```path=api.py, lines=1-7\nimport vllm\n```\n</file_contents>\n</attached_files>\n"
                  "</additional_data>\n\n<user_query>\nbuild an api for vllm\n</user_query>")
    assert (nested.prompt, nested.attached) == ("build an api for vllm", ["api.py"])
