"""The Claude.ai export normalizer. No real export is public, so the samples in tests/fixtures/claude_ai were
written here in the shape documented by ../shared/fixtures/formats/claude_ai (README.md and the JSON schema
generated from a real export): new-style content blocks, old-style text, branches, a batch file and a web-API
conversation object."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mempald.normalize.claude_ai import SOURCE_KIND, parse_document
from mempald.normalize.model import NormalizeError

SAMPLES = Path(__file__).resolve().parents[2] / "fixtures" / "claude_ai"
FORMATS = Path(__file__).resolve().parents[3].parent / "shared" / "fixtures" / "formats"


def load(name: str) -> bytes:
    return (SAMPLES / name).read_bytes()


def test_export_counts_and_order() -> None:
    ex = parse_document(load("conversations.json"), "conversations.json")
    assert [(e.title, e.kind) for e in ex] == [
        ("Postgres index for the orders table", "exchange"), ("Postgres index for the orders table", "exchange"),
        ("Lisbon weekend", "exchange"), ("Lisbon weekend", "exchange"), ("Lisbon weekend", "exchange"),
        ("Lisbon weekend", "summary"),
        ("Git rebase question", "exchange"), ("Git rebase question", "exchange"),
    ]
    assert all(e.source_kind == SOURCE_KIND == "claude_ai" and e.agent == "claude.ai" for e in ex)
    assert [e.position for e in ex] == [0, 1, 0, 1, 2, 3, 0, 1]


def test_content_blocks_attachments_and_tools() -> None:
    first, second = parse_document(load("conversations.json"))[:2]
    assert first.session_id == "0b6f3a1e-2c4d-4e5f-8a9b-1c2d3e4f5a61"
    assert first.key == "6a0e9b1c-1111-4a2b-8c3d-000000000001"
    assert first.timestamp == "2025-09-14T08:02:12.004511Z"
    assert first.user == ("Queries filtering orders by customer_id and created_at are slow (2 s). Which index "
                          "should I add?\n[attachment: explain.txt]\n[file: schema.pdf]")
    assert "Seq Scan" not in first.user  # the attachment is named, its extracted content not copied
    assert first.tools == ("artifacts",)
    assert first.assistant == (
        "Your plan shows a sequential scan on `orders`. Add a composite index with the equality column first:\n"
        "[tool: artifacts] create Composite index for orders\n"
        "  -> OK\n"
        "Build it CONCURRENTLY so writes are not blocked."
    )
    assert "sequential scan; a composite index fits" not in first.render()  # thinking is dropped
    assert second.user == "Would a BRIN index on created_at be enough instead?"
    assert second.assistant.startswith("Only if rows are inserted in created_at order")


def test_branches_follow_the_latest_created_at() -> None:
    ex = [e for e in parse_document(load("conversations.json")) if e.title == "Lisbon weekend"]
    assert [e.user for e in ex[:3]] == ["Plan two days in Lisbon for me.", "Where should I ride tram 28 and when?",
                                        "And the best pastel de nata?"]
    assert ex[1].assistant == "Board tram 28 before 9am at Martim Moniz, the queue is short then."
    text = "\n".join(e.render() for e in ex)
    assert "Add a museum on day 1." not in text and "Tile Museum" not in text  # the older edit
    assert "Ride it at noon" not in text  # the older retry
    assert ex[2].tools == ("web_search",)
    assert ex[2].assistant == ("[tool: web_search] best pastel de nata Lisbon\n  -> Since 1837, the original recipe.\n"
                               "Pasteis de Belem, the original since 1837.")
    assert ex[3].user == "" and ex[3].assistant.startswith("The user planned a weekend in Lisbon")
    assert ex[3].key == "7e2a9c4b-5d6e-4f70-81a2-b3c4d5e6f702:summary"


def test_old_style_text_and_injected_context() -> None:
    ex = [e for e in parse_document(load("conversations.json")) if e.title == "Git rebase question"]
    assert [e.user for e in ex] == ["How do I squash the last three commits?", "[attachment: error.log]"]
    # the injected-only prompt is dropped together with its answer
    assert ex[0].assistant == "Run `git rebase -i HEAD~3` and mark the last two commits as `squash`."
    assert all("mempal-context" not in e.render() and "prefers rebase" not in e.render() for e in ex)
    assert ex[1].assistant == "Your branch has fewer than three commits; use `git rebase -i --root`."


def test_batch_file_is_the_same_format() -> None:
    (e,) = parse_document(load("conversations-0001.json"), "conversations-0001.json")
    assert e.user == "Should --dry-run be renamed to --plan?"
    assert e.tools == ("project_knowledge_search",)
    assert "  -> error: No results" in e.assistant
    assert e.assistant.endswith("Keep --dry-run and add --plan as an alias; removing it breaks scripts.")


def test_web_api_object_uses_the_current_leaf() -> None:
    (e,) = parse_document(load("web_api_conversation.json"))
    assert e.session_id == "2e588968-f7a3-4728-bbf0-d417a26b2b15" and e.title == "Create Google Document"
    assert e.user.startswith("Can you write a google document for me?")
    assert e.assistant == "I'm not able to directly create a Google document in your Google account."
    assert e.timestamp == "2025-03-05T18:06:11.694633+00:00"


def test_samples_match_the_real_schema() -> None:
    """Every field the samples use on conversations and messages is one the real export's schema lists."""
    schema_path = FORMATS / "claude_ai" / "brandtcormorant_claude-json-schema.json"
    if not schema_path.is_file():
        pytest.skip(f"the shared Claude.ai schema is not at {schema_path}")
    schema = json.loads(schema_path.read_text())
    conv_keys = set(schema["items"]["properties"]) | {"summary"}  # summary: 2026 export (README)
    msg_keys = set(schema["items"]["properties"]["chat_messages"]["items"]["properties"]) | {"parent_message_uuid"}
    for conv in json.loads(load("conversations.json")) + json.loads(load("conversations-0001.json")):
        assert set(conv) <= conv_keys
        for msg in conv["chat_messages"]:
            assert set(msg) <= msg_keys


def test_not_a_claude_export() -> None:
    with pytest.raises(NormalizeError):
        parse_document(b"\x00\x01")
    with pytest.raises(NormalizeError):
        parse_document(b"[1, 2, 3]")
    with pytest.raises(NormalizeError):
        parse_document(b"42")
    assert parse_document(b"[]") == []
    assert parse_document(b'[{"uuid": "x", "chat_messages": [{"sender": "human"}, 5, {"sender": "assistant"}]}]') == []
