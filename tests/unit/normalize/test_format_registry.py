"""The format registry (issue #16 point 6): each format declares its detection and one parse signature, the
registry alone decides a file's format, and the cursor keeps a typed context compatible with the cursors
already in users' state databases."""

from __future__ import annotations

import inspect
import json
import sqlite3
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from mempald.normalize import registry
from mempald.normalize.format import Input, Parsed
from mempald.normalize.model import CursorContext, Line, NormalizeError
from mempald.sources.roots import Source
from mempald.state.db import Cursor, State

EXPECTED = {
    "claude_code/real2/projects/-home-yingbohao/302863af-e0a0-4488-8928-7f132c701fae.jsonl": "claude_code",
    "claude_code/real2/projects/-Users-jeremy-Projects-Thanos/agent-ae96867.jsonl": "claude_code",
    "codex/real2/rollout-2026-07-03T15-12-18-019f26d2-378f-7123-aaab-925df3e2bf7b.jsonl": "codex",
    "aider/real2/ping13__aider-testing/aider-chat-pong.md": "aider",
    "gemini_cli/session-2025-12-03T00-07-9a1d8d8f.json": "gemini",
    "gemini_cli/real2/tmp/9cfc5cfa6f8fd18d3d1ecfcfd77bd22358803e86899edd66537e36fc1bc8652a/checkpoint-kvantum.json":
        "gemini",
    "chatgpt/conversations.subset.json": "chatgpt",
    "claude_ai/brandtcormorant_claude-json-schema.json": None,  # a JSON Schema: in no known format
    "claude_code/reference/agent-schemas_history.schema.json": None,
    "PROVENANCE.md": "text",
}


def test_every_format_has_one_parse_signature() -> None:
    assert [f.name for f in registry.FORMATS] == ["cursor", "aider", "specstory", "cursor_export", "gemini",
                                                  "antigravity", "cursor_transcript", "opencode_export", "copilot",
                                                  "copilot_cli", "chatgpt",
                                                  "claude_ai", "codex", "claude_code", "cline", "slack", "opencode",
                                                  "opencode_db", "kilo_db", "cursor_agent", "agent_memory", "text"]
    for fmt in registry.FORMATS:
        sig = inspect.signature(fmt.parse)
        assert list(sig.parameters) == ["inp"], fmt.name
        assert fmt.reads in ("lines", "document", "folder", "rows") and fmt.summary
        empty = Input(name="x", lines=[], data=b"", files={})
        if fmt.name in ("claude_code", "codex", "aider", "text", "antigravity", "agent_memory",
                        "cursor_transcript"):
            out = fmt.parse(empty)
            assert isinstance(out, Parsed) and out.exchanges == [] and out.context.format == fmt.name


def test_the_registry_decides_every_real_file(formats_dir: Path) -> None:
    for rel, name in EXPECTED.items():
        path = formats_dir / rel
        fmt = registry.detect_file(path.read_bytes()[: registry.HEAD_BYTES], path.name)
        assert (fmt.name if fmt else None) == name, rel
        # a head cut anywhere still detects (JSON documents are sniffed for their keys)
        if name in ("chatgpt", "gemini") and path.stat().st_size > 3000:
            cut = registry.detect_file(path.read_bytes()[:1500], path.name)
            assert cut is not None and cut.name == name, rel
    assert registry.detect_folder(p.name for p in (formats_dir / "slack" / "slackdump_export_2025").iterdir()) \
        == registry.by_name("slack")
    official = formats_dir / "slack" / "official_export_2016_houstondatavis"
    assert registry.detect_folder(p.name for p in official.iterdir()) == registry.by_name("slack")


def test_gemini_jsonl_chat_is_detected_by_its_header() -> None:
    head = b'{"sessionId":"s","projectHash":"h","startTime":"2026-06-07T23:59:13.730Z","kind":"main"}\n'
    fmt = registry.detect_file(head + b'{"$set":{"lastUpdated":"x"}}\n', "session-2026-06-07T23-59-8f28e924.jsonl")
    assert fmt is not None and fmt.name == "gemini"


def test_which_names_a_conversation_source_reads(tmp_path: Path) -> None:
    src = Source("convos:x", tmp_path, "convos", "auto")
    for name in ("a.jsonl", "conversations.json", "notes.md", "x.txt", "r.markdown", ".aider.chat.history.md"):
        assert src.wants(tmp_path / name), name
        assert registry.wanted(name)
    for name in (".hidden.jsonl", "image.png", "a.py", ".aider.input.history"):
        assert not src.wants(tmp_path / name), name


def test_cursor_context_round_trip_and_old_shapes(tmp_path: Path) -> None:
    ctx = CursorContext(format="claude_code", session_id="s", cwd="/p", position=7, read_end=812, parent="u1")
    assert CursorContext.from_json(json.loads(json.dumps(ctx.to_json()))) == ctx
    # written before the typed context: strings for numbers, unknown keys
    old = CursorContext.from_json({"position": "3", "read_end": "812", "session_id": "s", "cwd": "/p", "junk": 1})
    assert (old.position, old.read_end, old.session_id, old.cwd) == (3, 812, "s", "/p")
    assert CursorContext.from_json({"position": "x", "format": 5}) == CursorContext()
    assert ctx.with_title("A title", 2).title == "A title"
    assert ctx.with_title("A title", 2).with_title("worse", 1).title == "A title"


def test_cursors_already_in_a_state_database_are_read(tmp_path: Path) -> None:
    """Rows as an older daemon wrote them: a JSONL cursor with a string context, and a Slack export whose file
    count sat in the inode column."""
    db = tmp_path / "state.sqlite"
    State(db).close()
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO cursors VALUES (?,?,?,?,?,?,?,?,?,?)",
                     ("/t.jsonl", "k", 11, 900, 1.5, 400, "h", json.dumps({"position": "2", "read_end": "900",
                                                                             "session_id": "s1"}), 3, 0.0))
        conn.execute("INSERT INTO cursors VALUES (?,?,?,?,?,?,?,?,?,?)",
                     ("/export", "k", 12, 5000, 2.5, 5000, "", json.dumps({"format": "slack"}), 40, 0.0))
        conn.execute("INSERT INTO cursors VALUES (?,?,?,?,?,?,?,?,?,?)",
                     ("/broken", "k", 1, 1, 1.0, 1, "", "{not json", 0, 0.0))
    state = State(db)
    jl = state.get_cursor("/t.jsonl")
    assert jl is not None and jl.context.position == 2 and jl.context.read_end == 900
    slack = state.get_cursor("/export")
    assert slack is not None and slack.context.files == 12 and slack.same_folder(12, 5000, 2.5)
    assert not slack.same_folder(13, 5000, 2.5)
    assert state.all_cursors()["/broken"].context == CursorContext()
    # written again: the count is in the typed context, not in the inode column
    state.put_cursor(Cursor("/export", "k", 999, 5000, 2.5, 5000, "", CursorContext(format="slack", files=12), 40))
    again = State(db).get_cursor("/export")
    assert again is not None and again.inode == 999 and again.same_folder(12, 5000, 2.5)
    state.close()


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=600), st.sampled_from([f.name for f in registry.FORMATS]))
def test_any_bytes_through_any_format_never_crash(data: bytes, name: str) -> None:
    """Whatever a file holds, its format's parse returns (or, for a document not in that format, raises the
    one NormalizeError), and detection answers."""
    fmt = registry.by_name(name)
    lines = [Line(i * 1000, raw) for i, raw in enumerate(data.split(b"\n")) if raw.strip()]
    inp = Input(name="f", lines=lines, data=data, files={"users.json": data, "general/2024-01-01.json": data})
    try:
        out = fmt.parse(inp)
    except NormalizeError:
        assert fmt.reads != "lines"
        return
    refs = {a.ref for a in out.ledger.entries}
    if fmt.reads == "lines":
        assert refs >= {ln.offset for ln in lines}  # every line accounted for, whatever it held
    registry.detect_file(data, "x.jsonl")
