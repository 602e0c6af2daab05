"""Format detection by content, on every real sample in ../shared (whole heads and heads cut short) and on
synthetic edge cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mempald.normalize.detect import detect_bytes, detect_dir

FORMATS = Path(__file__).resolve().parents[3].parent / "shared" / "fixtures" / "formats"
LAYOUT = "claude_code/projects_layout/-home-USER-projects-spotter-worktrees-spotter-4te"

EXPECTED = {
    "aider/.aider.chat.history.head.md": "aider",
    "chatgpt/conversations.subset.json": "chatgpt",
    "claude_code/short_session_v2.1.38.jsonl": "claude_code",
    f"{LAYOUT}/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl": "claude_code",
    f"{LAYOUT}/ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents/agent-aac57f5.jsonl": "claude_code",
    f"{LAYOUT}/ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents/agent-acompact-946d2b.jsonl": "claude_code",
    "codex/localpush_redacted_rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl": "codex",
    "codex/localpush_redacted_compaction_excerpt.jsonl": "codex",
    "codex/rtchess_turn_aborted_excerpt.jsonl": "codex",
    "gemini_cli/session-2025-11-21T20-38-8016034b.json": "gemini",
    "gemini_cli/session-2025-12-03T00-07-9a1d8d8f.json": "gemini",
    "SCHEMAS.md": None,
    "claude_ai/README.md": None,
    "aider/.aider.input.history": None,
    "claude_ai/brandtcormorant_claude-json-schema.json": None,
    "claude_code/reference/agent-schemas_v2.1.144_session.schema.json": None,
    "slack/official_export_2016_houstondatavis/users.json": None,
    "slack/official_export_2016_houstondatavis/general/2015-10-17.json": None,
    "slack/slackdump_export_2025/channels.json": None,
}


@pytest.mark.parametrize(("rel", "kind"), sorted(EXPECTED.items()))
def test_real_samples(rel: str, kind: str | None) -> None:
    path = FORMATS / rel
    if not path.is_file():
        pytest.skip(f"the shared fixture {path} is absent (the samples live beside the repo, not in it)")
    data = path.read_bytes()
    assert detect_bytes(data[:65536], path.name) == kind
    # a head cut anywhere (the daemon reads 64 KiB) still gives the same answer, without the name
    for cut in (4096, 1500):
        assert detect_bytes(data[:cut]) == kind, cut


def test_claude_ai_samples() -> None:
    samples = Path(__file__).resolve().parents[2] / "fixtures" / "claude_ai"
    for name in ("conversations.json", "conversations-0001.json", "web_api_conversation.json"):
        data = (samples / name).read_bytes()
        assert detect_bytes(data) == "claude_ai"
        assert detect_bytes(data[:700]) == "claude_ai", name


def test_synthetic_edge_cases() -> None:
    cc_summary = json.dumps({"type": "summary", "summary": "Fix login", "leafUuid": "u1"}).encode()
    assert detect_bytes(cc_summary + b"\n") == "claude_code"
    snapshot = json.dumps({"type": "file-history-snapshot", "messageId": "m", "snapshot": {}}).encode()
    assert detect_bytes(snapshot + b"\n" + json.dumps({"type": "user", "parentUuid": None, "sessionId": "s",
                                                       "isSidechain": False}).encode()) == "claude_code"
    old_codex = json.dumps({"id": "x", "timestamp": "2025-05-01T00:00:00Z", "instructions": None}).encode()
    assert detect_bytes(old_codex + b"\n" + b'{"record_type":"state"}\n') == "codex"
    assert detect_bytes(b'{"timestamp":"t","type":"event_msg","payload":{"type":"token_count"}}\n') == "codex"
    assert detect_bytes(b"\xef\xbb\xbf  " + json.dumps([{"mapping": {}, "current_node": None}]).encode()) == "chatgpt"
    assert detect_bytes(json.dumps({"sessionId": "s", "projectHash": "h", "messages": []}).encode()) == "gemini"
    assert detect_bytes(b"# notes\n\n# aider chat started at 2025-01-01 10:00:00\n") == "aider"
    assert detect_bytes(b"", ".aider.chat.history.md") == "aider"
    assert detect_bytes(b'{"type":"session.start","data":{"sessionId":"s"}}\n') is None  # Copilot CLI: not read
    for unknown in (b"", b"hello", b"[]", b"{}", b"[1,2]", b'{"type": "user"}', b"\xff\xfe\x00", b"{" * 5000):
        assert detect_bytes(unknown) is None, unknown


def test_detect_dir() -> None:
    assert detect_dir(["channels.json", "users.json", "general", "integration_logs.json"]) == "slack"
    assert detect_dir(["export/users.json", "export/dms.json", "export/D0123/2025-01-01.json"]) == "slack"
    assert detect_dir(["users.json"]) is None
    assert detect_dir(["channels.json", "notes.md"]) is None
    assert detect_dir([]) is None
    root = FORMATS / "slack"
    if root.is_dir():
        for export in ("official_export_2016_houstondatavis", "slackdump_export_2025"):
            assert detect_dir(p.name for p in (root / export).iterdir()) == "slack"
