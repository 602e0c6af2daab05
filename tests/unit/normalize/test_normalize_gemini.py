"""The Gemini CLI normalizer on the two real session files in ../shared (messages read one by one) and on
synthetic sessions for newer shapes and missing fields."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mempald.normalize.gemini import SOURCE_KIND, parse_document
from mempald.normalize.model import INJECT_CLOSE, INJECT_OPEN, NormalizeError

FORMATS = Path(__file__).resolve().parents[3].parent / "shared" / "fixtures" / "formats"


def session(name: str) -> bytes:
    path = FORMATS / "gemini_cli" / name
    if not path.is_file():
        pytest.skip(f"the shared Gemini CLI fixture is not at {path} (it lives beside the repo, not in it)")
    return path.read_bytes()


def test_short_session() -> None:
    ex = parse_document(session("session-2025-11-21T20-38-8016034b.json"), "session-2025-11-21T20-38-8016034b.json")
    assert len(ex) == 1
    e = ex[0]
    assert e.source_kind == SOURCE_KIND == "gemini" and e.agent == "gemini" and e.offset is None
    assert e.session_id == "8016034b-8665-42c9-bb72-6486cf8a8162"
    assert e.key == "018f7e6c-e170-48c4-8194-7832389f68a0" and e.position == 0
    assert e.user == "run notepad as admin" and e.timestamp == "2025-11-21T20:38:37.738Z"
    assert e.tools == ("run_shell_command",) and e.extra == (("model", "gemini-2.5-flash"),)
    assert e.assistant.startswith("I will use `run_shell_command` to open Notepad with administrator privileges.")
    assert "[tool: run_shell_command] Start-Process notepad -Verb RunAs" in e.assistant
    assert e.assistant.endswith("I have successfully launched Notepad with administrator privileges. "
                                "What would you like to do next?")


def test_long_session_with_cancellations() -> None:
    ex = parse_document(session("session-2025-12-03T00-07-9a1d8d8f.json"))
    assert [e.user for e in ex] == [
        "SSH into my router", "https://192.168.8.1:22/", "root", "password is Jicarilla12484",
        "Format the file system of the  USB drive attached at Mischa (E:) to EXT4",
        "install WSL and format this drive into EXT4",
    ]
    assert all(e.session_id == "9a1d8d8f-70c7-4d07-829c-40eadd91e570" for e in ex)
    assert [e.position for e in ex] == list(range(6))
    first = ex[0]
    assert first.tools == ("run_shell_command", "run_shell_command")
    assert first.assistant.startswith('[tool: run_shell_command] ipconfig | findstr "Default Gateway"\n  -> ')
    assert "I found your router's gateway IP address: **192.168.8.1**." in first.assistant
    assert first.extra == (("model", "gemini-3-pro-preview"),)
    assert ex[2].assistant == ("[tool: run_shell_command] ssh root@192.168.8.1\n  -> cancelled\n"
                               "[info] Request cancelled.")
    assert ex[5].tools == ("run_shell_command",) * 4
    assert "[tool: run_shell_command] wsl --install" in ex[5].assistant
    assert ex[5].assistant.endswith("*(Replace `sdX` with the correct device identifier, e.g., `sdb` or `sdc`).*"
                                    "\n\n**Please reboot now.**")
    # thoughts are not stored
    assert all('"subject"' not in e.render() for e in ex)


def test_synthetic_shapes_and_missing_fields() -> None:
    doc = {
        "sessionId": "s-1", "projectHash": "abc", "summary": "Fix the flaky test",
        "messages": [
            {"type": "gemini", "content": "before any prompt"},
            {"id": "m1", "type": "user", "timestamp": "2026-01-01T00:00:00Z",
             "content": [{"text": f"{INJECT_OPEN}>memory{INJECT_CLOSE}"}, {"text": "why is test_io flaky?"}]},
            {"type": "gemini", "content": [{"text": "Looking."}],
             "toolCalls": [{"name": "read_file", "args": {"absolute_path": "/p/test_io.py"}, "status": "success",
                            "result": [{"functionResponse": {"response": {"output": "def test_io(): ..."}}}]},
                           {"name": "run_shell_command", "args": {"command": "pytest"}, "status": "error",
                            "resultDisplay": "exit 1"},
                           "junk"]},
            {"type": "error", "content": "Quota exceeded"},
            {"type": "user", "content": f"{INJECT_OPEN}>only memory{INJECT_CLOSE}"},
            {"type": "gemini", "content": "answer to injected context"},
            {"type": "user", "content": "thanks"},
            {"type": "mystery", "content": "ignored"},
            7,
        ],
    }
    ex = parse_document(json.dumps(doc).encode(), "session-x.json")
    opening = ex.pop(0)  # a chat that opens with a model turn keeps it, with no prompt
    assert (opening.user, opening.assistant, opening.key) == ("", "before any prompt", "s-1:0")
    assert [e.user for e in ex] == ["why is test_io flaky?", "thanks"]
    assert ex[0].key == "m1" and ex[1].key == "s-1:6" and ex[0].title == "Fix the flaky test"
    assert ex[0].tools == ("read_file", "run_shell_command")
    assert ex[0].assistant == ("Looking.\n[tool: read_file] /p/test_io.py\n  -> def test_io(): ...\n"
                               "[tool: run_shell_command] pytest\n  -> error: exit 1\n[error] Quota exceeded")
    assert ex[1].assistant == "" and ex[1].timestamp is None
    assert all("injected context" not in e.render() and "memory" not in e.render() for e in ex)


def test_not_a_gemini_session() -> None:
    for bad in (b"", b"[]", b'{"sessionId": "x"}', b"\xff\xfe", b'{"messages": {}}'):
        with pytest.raises(NormalizeError):
            parse_document(bad)
    assert parse_document(b'{"messages": []}') == []
