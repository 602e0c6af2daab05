"""The Codex rollout normalizer on the real rollouts in ../shared (counts and contents verified by reading the
files line by line) and on small synthetic rollouts for what the redacted samples cannot show."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mempald.normalize.codex import SOURCE_KIND, parse_lines, session_meta
from mempald.normalize.model import INJECT_CLOSE, INJECT_OPEN, Line
from tests.conftest import lines_of

FORMATS = Path(__file__).resolve().parents[3].parent / "shared" / "fixtures" / "formats"
ROLLOUT = "localpush_redacted_rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"


@pytest.fixture
def codex_dir() -> Path:
    path = FORMATS / "codex"
    if not path.is_dir():
        pytest.skip(f"the shared Codex fixtures are not at {path} (they live beside the repo, not in it)")
    return path


def rec(rtype: str, payload: dict[str, Any], ts: str = "2026-01-01T00:00:00.000Z") -> dict[str, Any]:
    return {"timestamp": ts, "type": rtype, "payload": payload}


def to_lines(records: list[dict[str, Any]]) -> list[Line]:
    out, off = [], 0
    for r in records:
        raw = json.dumps(r).encode()
        out.append(Line(off, raw))
        off += len(raw) + 1
    return out


def user_item(text: str) -> dict[str, Any]:
    return rec("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})


def assistant_item(text: str, phase: str = "final_answer") -> dict[str, Any]:
    return rec("response_item", {"type": "message", "role": "assistant", "phase": phase,
                                 "content": [{"type": "output_text", "text": text}]})


def test_real_rollout_one_turn_with_mcp_tools(codex_dir: Path) -> None:
    lines = lines_of(codex_dir / ROLLOUT)
    assert len(lines) == 63
    ex = parse_lines(lines)
    assert len(ex) == 1
    e = ex[0]
    assert e.source_kind == SOURCE_KIND == "codex" and e.agent == "codex" and e.kind == "exchange"
    assert e.session_id == "019c8bfe-ec25-79e0-97d7-bda6a9c575ff"
    assert e.cwd == "/redacted/path/ea96e59ed9" and e.git_branch == "main"
    # the human turn is the user_message event (line 10); its response_item copy (line 9) anchors the offset
    assert e.user == "[REDACTED_MESSAGE len=98 sha=c002ff99]"
    assert e.offset == lines[8].offset and b"sha=c002ff99" in lines[8].raw and b'"role":"user"' in lines[8].raw
    assert e.key == str(lines[8].offset)
    assert e.timestamp == "2026-02-23T19:34:26.099Z"
    assert e.tools == ("mcp__cloud-associates__search_workflows", "[REDACTED_NAME len=43 sha=c186413b]",
                       "mcp__cloud-associates__execute_workflow", "mcp__cloud-associates__execute_workflow",
                       "mcp__cloud-associates__execute_workflow")
    out = e.assistant
    assert "[tool: mcp__cloud-associates__search_workflows] [REDACTED_ARGUMENTS len=46 sha=4cb9a2fc]" in out
    assert "  -> [REDACTED_OUTPUT len=4215 sha=9a9d94de]" in out
    # the answer is taken once: response_item assistant text, never the agent_message duplicate
    assert out.count("[REDACTED_TEXT len=") == 6 and "[REDACTED_MESSAGE" not in out
    assert out.endswith("[REDACTED_TEXT len=647 sha=10502814]")
    # developer messages, injected user context (AGENTS.md, environment) and reasoning are not in the drawer
    rendered = e.render()
    for sha in ("c490750a", "1eb53f31", "393c5edf", "81c7c868", "d5bf7356", "d10ca27b", "beedaecc", "e23f6ec6"):
        assert sha not in rendered


def test_reread_from_the_exchange_offset_is_stable(codex_dir: Path) -> None:
    lines = lines_of(codex_dir / ROLLOUT)
    full = parse_lines(lines)[0]
    assert full.offset is not None
    tail = [ln for ln in lines if ln.offset >= full.offset]
    again = parse_lines(tail, session_id="019c8bfe-ec25-79e0-97d7-bda6a9c575ff", cwd="/elsewhere",
                        git_branch="main")
    assert again == [full]
    # a read cut between the response_item copy and the user_message event still yields the same key
    partial = parse_lines(tail[:1], session_id="s")
    assert len(partial) == 1 and partial[0].key == full.key and partial[0].offset == full.offset


def test_compaction_is_a_summary_not_a_prompt(codex_dir: Path) -> None:
    lines = lines_of(codex_dir / "localpush_redacted_compaction_excerpt.jsonl")
    ex = parse_lines(lines)
    assert len(ex) == 1
    s = ex[0]
    assert s.kind == "summary" and s.user == ""
    assert s.session_id == "019c8a59-e9dd-71f0-9ae3-4079fe9726a9" and s.git_branch == "main"
    assert s.offset == lines[5].offset and s.key == f"compacted:{lines[5].offset}"
    assert s.assistant.startswith("[REDACTED_MESSAGE len=0 sha=e3b0c442]")
    # what the agent says after the compaction is kept with it, once
    assert s.assistant.count("[REDACTED_TEXT len=246 sha=980b7167]") == 1
    assert "REDACTED_MESSAGE len=246" not in s.assistant
    # the replacement history (old turns) is not replayed as new prompts; the tool call before it had no turn
    assert "821fd802" not in s.render() and "5be68803" not in s.render() and s.tools == ()


def test_turn_aborted_keeps_what_was_said(codex_dir: Path) -> None:
    lines = lines_of(codex_dir / "rtchess_turn_aborted_excerpt.jsonl")
    assert len(lines) == 14
    ex = parse_lines(lines, session_id="019aad50-a7e6-7422-b7a8-0b384290624f", cwd="/fallback")
    assert len(ex) == 2
    first, second = ex
    assert all(e.session_id == "019aad50-a7e6-7422-b7a8-0b384290624f" for e in ex)
    assert all(e.cwd == "/Users/pinouchon/code/rtchess" for e in ex)  # turn_context beats the fallback
    assert first.user.startswith("Now let's go forward and implement the realtime aspect: Reminder:")
    assert first.user.endswith("Any player can move off-cooldown pieces at any time")
    assert first.assistant == "[turn aborted: interrupted]"
    assert first.offset == lines[1].offset and first.timestamp == "2025-11-22T22:16:54.052Z"
    assert second.user.endswith("all pieces (white and black) are controlled by the user")
    assert second.offset == lines[7].offset and second.assistant == ""
    assert [e.position for e in ex] == [0, 1]
    # the answer to an earlier turn (line 1) has no prompt in these lines; reasoning is never stored
    assert all("Total JS lines" not in e.render() and "Reworking to asynchronous" not in e.render() for e in ex)


def test_session_meta(codex_dir: Path) -> None:
    meta = session_meta(lines_of(codex_dir / ROLLOUT))
    assert meta["session_id"] == meta["id"] == "019c8bfe-ec25-79e0-97d7-bda6a9c575ff"
    assert meta["cwd"] == "/redacted/path/ea96e59ed9"
    assert meta["git_branch"] == "main" and meta["git_commit"] == "19f8748648146d82ee1ad92387fc9d93613f022b"
    assert meta["originator"] == "Codex Desktop" and meta["cli_version"] == "0.104.0-alpha.1"
    assert meta["source"] == "vscode" and meta["timestamp"] == "2026-02-23T19:34:25.573Z"
    assert session_meta(lines_of(codex_dir / "rtchess_turn_aborted_excerpt.jsonl")) == {}
    assert session_meta([]) == {} and session_meta([Line(0, b"{nope")]) == {}


def _synthetic() -> list[dict[str, Any]]:
    patch = ("*** Begin Patch\n*** Update File: src/app.py\n@@\n-a\n+b\n"
             "*** Add File: tests/test_app.py\n+x\n*** End Patch")
    return [
        rec("session_meta", {"id": "sess-1", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/work/proj",
                             "git": {"branch": "feature/x", "commit_hash": "abc"}}),
        rec("response_item", {"type": "message", "role": "developer",
                              "content": [{"type": "input_text", "text": "<permissions instructions>..."}]}),
        user_item("# AGENTS.md instructions for /work/proj\n\nAlways run tests."),
        user_item("<environment_context>\n  <cwd>/work/proj</cwd>\n</environment_context>"),
        rec("event_msg", {"type": "task_started", "turn_id": "t1"}),
        user_item("why does the build fail?"),
        rec("event_msg", {"type": "user_message", "images": [], "message":
                          f'{INJECT_OPEN} id="m1">old memory{INJECT_CLOSE}\nwhy does the build fail?'}),
        rec("turn_context", {"turn_id": "t1", "cwd": "/work/proj/sub", "model": "gpt-5.3-codex"}),
        rec("event_msg", {"type": "agent_reasoning", "text": "secret thoughts"}),
        rec("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "secret thoughts"}],
                              "encrypted_content": "gAAAAA"}),
        rec("event_msg", {"type": "agent_message", "message": "Let me look."}),
        assistant_item("Let me look.", "commentary"),
        rec("response_item", {"type": "function_call", "name": "shell", "call_id": "c1",
                              "arguments": json.dumps({"command": ["bash", "-lc", "ls -la"], "workdir": "/w"})}),
        rec("event_msg", {"type": "exec_command_begin", "call_id": "c1", "command": ["bash", "-lc", "ls -la"]}),
        rec("response_item", {"type": "function_call_output", "call_id": "c1",
                              "output": "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nREADME.md\nsrc\n"}),
        rec("response_item", {"type": "custom_tool_call", "name": "apply_patch", "call_id": "c2", "input": patch,
                              "status": "completed"}),
        rec("response_item", {"type": "custom_tool_call_output", "call_id": "c2", "output": json.dumps(
            {"output": "Success. Updated the following files:\nM src/app.py", "metadata": {"exit_code": 0}})}),
        rec("response_item", {"type": "function_call", "name": "shell_command", "call_id": "c3",
                              "arguments": json.dumps({"command": "pytest -q"})}),
        rec("response_item", {"type": "function_call_output", "call_id": "c3",
                              "output": "Exit code: 1\nWall time: 2 seconds\nOutput:\n1 failed, 3 passed"}),
        rec("response_item", {"type": "local_shell_call", "call_id": "c4", "status": "completed",
                              "action": {"type": "exec", "command": ["git", "status"]}}),
        rec("response_item", {"type": "web_search_call", "status": "completed",
                              "action": {"type": "search", "query": "pytest exit code 1"}}),
        rec("event_msg", {"type": "mcp_tool_call_begin", "call_id": "c5",
                          "invocation": {"server": "docs", "tool": "lookup", "arguments": {"query": "build"}}}),
        rec("event_msg", {"type": "agent_message", "message": "The build fails because of a missing import."}),
        assistant_item("The build fails because of a missing import."),
        rec("event_msg", {"type": "task_complete", "turn_id": "t1"}),
        rec("event_msg", {"type": "user_message", "kind": "environment_context", "message": "<environment_context/>"}),
        rec("event_msg", {"type": "user_message", "message": f"{INJECT_OPEN}>only memory{INJECT_CLOSE}"}),
        assistant_item("An answer to injected context only."),
        rec("event_msg", {"type": "user_message", "message":
                          "# Context from my IDE setup:\n\n## Active file: src/app.py\n\n## My request for Codex:\n"
                          "add a test"}),
        rec("event_msg", {"type": "token_count", "info": None}),
        rec("event_msg", {"type": "agent_message", "message": "Added tests/test_app.py."}),
        rec("event_msg", {"type": "turn_aborted", "reason": "interrupted"}),
    ]


def test_synthetic_turns_dedupe_tools_and_injected_context() -> None:
    lines = to_lines(_synthetic())
    ex = parse_lines(lines, first_position=5)
    assert [e.user for e in ex] == ["why does the build fail?", "add a test"]
    first, second = ex
    assert first.offset == lines[5].offset and first.key == str(lines[5].offset)
    assert first.session_id == "sess-1" and first.git_branch == "feature/x" and first.cwd == "/work/proj/sub"
    assert first.position == 5 and second.position == 6
    assert first.tools == ("shell", "apply_patch", "shell_command", "shell", "web_search", "docs.lookup")
    assert first.assistant == "\n".join([
        "Let me look.",
        "[tool: shell] ls -la",
        "  -> README.md src",
        "[tool: apply_patch] src/app.py, tests/test_app.py",
        "  -> Success. Updated the following files: M src/app.py",
        "[tool: shell_command] pytest -q",
        "  -> error (exit 1): 1 failed, 3 passed",
        "[tool: shell] git status",
        "[tool: web_search] pytest exit code 1",
        "[tool: docs.lookup] build",
        "The build fails because of a missing import.",
    ])
    assert "secret thoughts" not in first.render() and "old memory" not in first.render()
    # no response_item answer in this turn: the agent_message events are the answer
    assert second.assistant == "Added tests/test_app.py.\n[turn aborted: interrupted]"
    assert all("injected context only" not in e.render() for e in ex)


def test_rollout_without_user_message_events_uses_response_items() -> None:
    records: list[dict[str, Any]] = [
        {"id": "old-1", "timestamp": "2025-05-01T10:00:00.000Z", "instructions": None,
         "git": {"branch": "main", "commit_hash": "abc"}},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text":
                                                         "<user_instructions>be terse</user_instructions>"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the bug"}]},
        {"type": "function_call", "name": "shell", "call_id": "c1",
         "arguments": json.dumps({"command": ["bash", "-lc", "pytest -q"]})},
        {"type": "function_call_output", "call_id": "c1",
         "output": json.dumps({"output": "1 failed", "metadata": {"exit_code": 1, "duration_seconds": 0.5}})},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Fixed."}]},
    ]
    ex = parse_lines(to_lines(records))
    assert len(ex) == 1
    e = ex[0]
    assert e.user == "fix the bug" and e.session_id == "old-1" and e.git_branch == "main"
    assert e.tools == ("shell",)
    assert e.assistant == "[tool: shell] pytest -q\n  -> error (exit 1): 1 failed\nFixed."
    assert session_meta(to_lines(records))["session_id"] == "old-1"


def test_missing_fields_and_bad_lines_are_skipped() -> None:
    lines = [
        Line(0, b"not json"),
        Line(10, b"[1, 2]"),
        Line(20, json.dumps(rec("event_msg", {"type": "user_message"})).encode()),
        Line(30, json.dumps({"type": "event_msg", "payload": "x"}).encode()),
        Line(40, json.dumps(rec("event_msg", {"type": "user_message", "message": "  hi  "})).encode()),
        Line(50, json.dumps(rec("response_item", {"type": "function_call"})).encode()),
        Line(60, json.dumps(rec("response_item", {"type": "message", "role": "assistant", "content": "plain"}))
             .encode()),
        Line(70, json.dumps(rec("compacted", {"message": ""})).encode()),
        Line(80, json.dumps(rec("some_future_type", {"type": "whatever"})).encode()),
    ]
    ex = parse_lines(lines)
    assert len(ex) == 1
    assert ex[0].user == "hi" and ex[0].session_id == "" and ex[0].tools == ("function",)
    assert ex[0].assistant == "[tool: function]\nplain"
    assert parse_lines([]) == []
