"""Issue #17 cases for Codex, Aider, Gemini CLI, ChatGPT and Claude.ai: on the real files of
../shared/fixtures/formats (*/real2, read line by line; prompt counts by hand in PROVENANCE.md or, for Aider,
by reading every ``####`` line), and on samples written here in the exact shape of the real records where no
real file has the case."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mempald.ingest.drawers import SourceInfo, build_drawers
from mempald.ingest.units import folder_wing
from mempald.normalize import aider, chatgpt, claude_ai, codex, gemini
from mempald.normalize.format import Input
from tests.conftest import lines_in

CODEX_142 = "codex/real2/rollout-2026-07-03T15-12-18-019f26d2-378f-7123-aaab-925df3e2bf7b.jsonl"
CODEX_112 = "codex/real2/rollout-2026-03-09T16-29-31-019cd4b8-43b8-78a3-9985-04f6307807de.jsonl"
AIDER_PONG = "aider/real2/ping13__aider-testing/aider-chat-pong.md"
AIDER_RFP = "aider/real2/Ahmedrali__rfp_response_platform__backend/.aider.chat.history.md"
CHECKPOINT = ("gemini_cli/real2/tmp/9cfc5cfa6f8fd18d3d1ecfcfd77bd22358803e86899edd66537e36fc1bc8652a/"
              "checkpoint-kvantum.json")


def jsonl(records: list[dict[str, Any]]) -> bytes:
    return b"\n".join(json.dumps(r, ensure_ascii=False).encode() for r in records) + b"\n"


# --- Codex ------------------------------------------------------------------------------------------------

def test_codex_exec_command_reads_as_the_command_and_its_output(formats_dir: Path) -> None:
    ex = codex.parse_lines(lines_in((formats_dir / CODEX_142).read_bytes()))
    assert [e.user for e in ex] == ["ubpb_c4_342M_sdar_g1这个jobs失败了，你能看到失败原因吗？",
                                    "你要ssh进GPU开发机去看这个文件"]
    first = ex[0].assistant.splitlines()
    assert "[tool: exec_command] pwd && rg --files | head -80" in first
    assert "  -> /Users/wjx/qz-cli" in first  # line 18: the output, not the unified-exec header
    assert "  -> error (exit 1):" in first  # line 19: rg found nothing
    text = "\n".join(e.render() for e in ex)
    assert "Chunk ID" not in text and "Wall time" not in text and '"yield_time_ms"' not in text
    assert "[tool: tool_search] qzcli job task status logs failure ubpb_c4_342M_sdar_g1" in first


def test_codex_code_mode_exec_reads_as_its_tool_calls() -> None:
    """0.14x code mode: a custom_tool_call ``exec`` whose input is JavaScript calling ``tools.*`` (the shape
    Codex writes: name, call_id, input string; output a list of input_text parts)."""
    script = ('const r = await tools.exec_command({cmd: "npm test -- --watch=false", workdir: "/repo/web", '
              'yield_time_ms: 30000});\ntext(r.output);\n'
              "const s = await tools.exec_command({\"cmd\":\"sed -n '1,80p' src/app.ts\",\"workdir\":\"/repo/web\"});")
    recs = [
        {"timestamp": "2026-08-01T10:00:00.000Z", "type": "session_meta",
         "payload": {"id": "s-1", "cwd": "/repo", "cli_version": "0.144.0"}},
        {"timestamp": "2026-08-01T10:00:01.000Z", "type": "event_msg",
         "payload": {"type": "user_message", "message": "run the web tests", "images": []}},
        {"timestamp": "2026-08-01T10:00:02.000Z", "type": "response_item",
         "payload": {"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Running the tests**"}],
                     "encrypted_content": "gAAAA"}},
        {"timestamp": "2026-08-01T10:00:03.000Z", "type": "response_item",
         "payload": {"type": "custom_tool_call", "status": "completed", "call_id": "call_1", "name": "exec",
                     "input": script}},
        {"timestamp": "2026-08-01T10:00:09.000Z", "type": "response_item",
         "payload": {"type": "custom_tool_call_output", "call_id": "call_1", "output": [
             {"type": "input_text", "text": "Chunk ID: 1a2b3c\nWall time: 5.2 seconds\nProcess exited with code 0\n"
                                            "Original token count: 9\nOutput:\nTests: 12 passed, 12 total\n"}]}},
        {"timestamp": "2026-08-01T10:00:10.000Z", "type": "response_item",
         "payload": {"type": "message", "role": "assistant", "content": [
             {"type": "output_text", "text": "All 12 web tests pass."}], "phase": "final_answer"}},
    ]
    (e,) = codex.parse_lines(lines_in(jsonl(recs)))
    assert e.assistant.splitlines() == [
        "[tool: exec_command] npm test -- --watch=false",
        "[tool: exec_command] sed -n '1,80p' src/app.ts",
        "  -> Tests: 12 passed, 12 total",
        "All 12 web tests pass.",
    ]
    assert e.tools == ("exec_command", "exec_command") and e.files == ("/repo/web/src/app.ts",)
    assert "Running the tests" not in e.render() and "await" not in e.render()  # reasoning, the JS wrapper


def test_codex_custom_prompts_are_marked_not_passed_off_as_typed(formats_dir: Path) -> None:
    lines = lines_in((formats_dir / CODEX_112).read_bytes())
    num = {ln.offset: i + 1 for i, ln in enumerate(lines)}
    ex = codex.parse_lines(lines)
    # PROVENANCE: 13 prompts, 7 typed (79, 159, 270, 298, 395, 405, 428 as events; their copies one line up)
    assert len(ex) == 13
    typed = [e for e in ex if not e.user.startswith("[custom prompt")]
    assert [num[e.offset] for e in typed if e.offset is not None] == [78, 158, 269, 297, 394, 404, 427]
    custom = [e.user for e in ex if e.user.startswith("[custom prompt")]
    assert custom[0] == ("[custom prompt] UC-15, corresponding acceptance tests are in Acceptance Tests folder with "
                         "the same use case number, create a branch that matches the use case number")
    assert all("You **MUST** consider the user input" not in e.user for e in ex)
    assert len(custom) == 6 and custom[3] == '[custom prompt: Checklist Purpose: "Unit Tests for English"]'


# --- Aider -------------------------------------------------------------------------------------------------

def test_aider_help_output_and_blank_inputs_are_not_prompts(formats_dir: Path) -> None:
    ex = aider.parse_document((formats_dir / AIDER_PONG).read_bytes(), "aider-chat-pong.md")
    # 11 prompts typed: lines 50, 202, 478, 534, 603, 623, 756, 792, 998, 1100 and "/ask how many lines of code"
    assert len(ex) == 11 and ex[0].user == "can you make a simple game of pong with pygame?"
    assert ex[-1].user == "how many lines of code"
    text = "\n".join(e.render() for e in ex)
    assert "<blank>" not in text and "Switch to a new chat mode" not in text  # #### <blank>, /help's list
    assert "[aider: /help]" in text and "[aider: /tokens]" in text


def test_aider_architect_handoffs_and_multiline_prompts(formats_dir: Path) -> None:
    parsed = aider.parse(Input(name="h.md", data=(formats_dir / AIDER_RFP).read_bytes()))
    ex = parsed.exchanges
    assert len(ex) == 28  # every #### line read: 28 prompts in 7 runs (the list is in the test module's doc)
    refs = {a.ref: a for a in parsed.ledger.entries}
    # 240-327 and 4589-4857 repeat the architect's reply to the editor model: folded, not a prompt
    for n in (240, 327, 554, 4589, 4857):
        assert refs[f"line {n}"].what == "architect handoff", n
    assert not any(e.user.startswith("Okay, I've reviewed") for e in ex)
    multi = next(e for e in ex if e.user.startswith("update the postgress user name"))
    assert multi.user.count("\n") == 2 and "CREATE DATABASE rfp_platform;" in multi.user  # lines 1780-1782
    curl = next(e for e in ex if e.user.startswith("now it starts with no errors"))
    assert curl.user.endswith("how can we fix this ror?") and '-H "Content-Type: application/json"' in curl.user
    assert max(len(e.user) for e in ex) < 2000


# --- Gemini CLI --------------------------------------------------------------------------------------------

def test_gemini_checkpoint_is_read(formats_dir: Path) -> None:
    parsed = gemini.parse(Input(name=str(formats_dir / CHECKPOINT), data=(formats_dir / CHECKPOINT).read_bytes()))
    ex = parsed.exchanges
    assert [e.key for e in ex] == [f"checkpoint-kvantum:{i}" for i in (2, 6, 8, 10, 12, 25)]
    assert ex[0].user == "как лучше всего настроить вид qt приложений?"
    assert parsed.context.cwd == "/home/smitee" and ex[0].cwd == "/home/smitee"  # from the setup context
    # the functionCall (4) and its cancelled functionResponse (5) are in the first exchange, not a prompt
    assert "[tool: run_shell_command] paru -S --needed qt5ct qt6ct kvantum" in ex[0].assistant
    assert "  -> error: [Operation Cancelled] Reason: User did not allow tool call" in ex[0].assistant
    assert ex[4].files == ("/home/smitee/.config/hypr/hyprland.conf", "/home/smitee/.config/hypr/enfi.conf")
    assert all("This is the Gemini CLI" not in e.render() and "Got it. Thanks" not in e.render() for e in ex)


def _gemini_current() -> bytes:
    """A 0.45+ session-*.jsonl as Gemini CLI writes it: header, a $set with the session context, appended
    records (a streamed message written twice), tool results as user messages with functionResponse parts,
    info/error messages, a mode notice and a rewind."""
    ctx = ("<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n"
           "- **Workspace Directories:**\n  - /home/dev/shop\n- **Directory Structure:**\n...\n</session_context>")
    call = {"id": "read_file-1", "name": "read_file", "args": {"absolute_path": "/home/dev/shop/cart.py"},
            "status": "success", "timestamp": "2026-06-08T10:00:03Z"}
    return jsonl([
        {"sessionId": "3c90ee3d", "projectHash": "ddb0e09e", "startTime": "2026-06-08T10:00:00Z",
         "lastUpdated": "2026-06-08T10:00:00Z", "kind": "main"},
        {"$set": {"messages": [{"id": "ctx", "timestamp": "2026-06-08T10:00:00Z", "type": "user",
                                "content": [{"text": ctx}]}]}},
        {"id": "u1", "timestamp": "2026-06-08T10:00:01Z", "type": "user",
         "content": [{"text": "why is the cart empty?"}]},
        {"id": "g1", "timestamp": "2026-06-08T10:00:02Z", "type": "gemini", "content": [{"text": "Let me"}]},
        {"id": "g1", "timestamp": "2026-06-08T10:00:02Z", "type": "gemini", "content": [{"text": "Let me read it."}],
         "toolCalls": [call], "model": "gemini-3-pro-preview"},
        {"id": "r1", "timestamp": "2026-06-08T10:00:03Z", "type": "user", "content": [
            {"functionResponse": {"id": "read_file-1", "name": "read_file",
                                  "response": {"output": "def add(): pass"}}}]},
        {"id": "g2", "timestamp": "2026-06-08T10:00:04Z", "type": "gemini",
         "content": [{"text": "`add` does nothing: it never appends the item."}]},
        {"id": "i1", "timestamp": "2026-06-08T10:00:05Z", "type": "info", "content": "Request cancelled."},
        {"id": "n1", "timestamp": "2026-06-08T10:00:06Z", "type": "user", "content": [{"text":
            "User has manually exited Plan Mode. Switching to Default mode (edits will require confirmation)."}]},
        {"id": "u2", "timestamp": "2026-06-08T10:00:07Z", "type": "user", "content": [{"text": "fix it"}]},
        {"id": "g3", "timestamp": "2026-06-08T10:00:08Z", "type": "gemini", "content": [{"text": "wrong turn"}]},
        {"$rewindTo": "u2"},
        {"$set": {"lastUpdated": "2026-06-08T10:00:09Z"}},
        {"id": "u3", "timestamp": "2026-06-08T10:00:10Z", "type": "user", "content": [{"text": "fix add()"}]},
        {"id": "e1", "timestamp": "2026-06-08T10:00:11Z", "type": "error", "content": "Quota exceeded"},
    ])


def test_gemini_current_session_format() -> None:
    parsed = gemini.parse(Input(name="session-2026-06-08T10-00-3c90ee3d.jsonl", data=_gemini_current()))
    ex = parsed.exchanges
    assert [(e.key, e.user) for e in ex] == [("u1", "why is the cart empty?"), ("u3", "fix add()")]
    assert ex[0].session_id == "3c90ee3d" and ex[0].cwd == "/home/dev/shop"
    # the final answer after the tool result is kept; the streamed message once, as last written
    assert ex[0].assistant.splitlines() == [
        "Let me read it.", "[tool: read_file] /home/dev/shop/cart.py", "  -> def add(): pass",
        "`add` does nothing: it never appends the item.", "[info] Request cancelled."]
    assert ex[0].files == ("/home/dev/shop/cart.py",) and ex[1].assistant == "[error] Quota exceeded"
    reasons = {a.ref: a.what for a in parsed.ledger.entries if a.outcome == "skipped"}
    assert reasons["line 2#0"] == "session context" and reasons["line 9"] == "mode notice"
    assert reasons["line 10"] == "rewound" and reasons["line 4"] == "superseded by a later copy"


# --- ChatGPT and Claude.ai ---------------------------------------------------------------------------------

def _chatgpt_upload_only() -> bytes:
    """An export conversation whose prompt is only an uploaded file (the real shape: empty text part, the file in
    metadata.attachments)."""
    def node(nid: str, parent: str | None, children: list[str], msg: dict[str, Any] | None) -> dict[str, Any]:
        return {"id": nid, "message": msg, "parent": parent, "children": children}

    user = {"id": "m-user", "author": {"role": "user", "name": None, "metadata": {}}, "create_time": 1718000000.0,
            "content": {"content_type": "text", "parts": [""]}, "status": "finished_successfully",
            "metadata": {"attachments": [{"id": "file-abc", "size": 48213, "name": "q3-report.pdf",
                                          "mime_type": "application/pdf"}]}, "recipient": "all"}
    answer = {"id": "m-ans", "author": {"role": "assistant", "name": None, "metadata": {}},
              "create_time": 1718000005.0, "content": {"content_type": "text", "parts": [
                  "The Q3 report shows revenue up 12%, driven by the EU."]}, "status": "finished_successfully",
              "metadata": {"model_slug": "gpt-4o"}, "recipient": "all"}
    conv = {"title": "Q3 report", "create_time": 1718000000.0, "update_time": 1718000005.0, "id": "c-1",
            "current_node": "n-ans", "mapping": {
                "root": node("root", None, ["n-user"], None),
                "n-user": node("n-user", "root", ["n-ans"], user),
                "n-ans": node("n-ans", "n-user", [], answer)}}
    return json.dumps([conv]).encode()


def test_chatgpt_prompt_that_is_only_an_upload_is_kept() -> None:
    (e,) = chatgpt.parse_document(_chatgpt_upload_only(), "conversations.json")
    assert e.user == "[attachment: q3-report.pdf]"
    assert e.assistant == "The Q3 report shows revenue up 12%, driven by the EU."


def test_claude_ai_pasted_text_is_kept_whole() -> None:
    pasted = "Traceback (most recent call last):\n" + "  File \"app.py\", line 3, in <module>\n" * 200
    conv = {"uuid": "c1", "name": "Crash", "created_at": "2025-01-01T00:00:00Z", "updated_at": "2025-01-01T00:01:00Z",
            "chat_messages": [
                {"uuid": "m1", "text": "why does this crash?", "content": [], "sender": "human",
                 "created_at": "2025-01-01T00:00:00Z", "files": [],
                 "attachments": [{"file_name": "", "file_size": len(pasted), "file_type": "txt",
                                  "extracted_content": pasted}]},
                {"uuid": "m2", "text": "Line 3 imports a missing module.", "content": [], "sender": "assistant",
                 "created_at": "2025-01-01T00:00:05Z", "files": [], "attachments": []}]}
    (e,) = claude_ai.parse_document(json.dumps([conv]).encode())
    assert e.user.startswith("why does this crash?\n[pasted text]\nTraceback (most recent call last):")
    assert e.user.count('File "app.py", line 3') == 200 and "[attachment: unnamed]" not in e.user


# --- wings of exports --------------------------------------------------------------------------------------

def test_exports_file_under_their_folder_not_their_format(tmp_path: Path) -> None:
    root = tmp_path / "exports"
    assert folder_wing(root / "chatgpt-2024-06" / "conversations.json", root) == "chatgpt-2024-06"
    assert folder_wing(root / "conversations.json", root) == "exports"
    assert folder_wing(tmp_path / "myrepo" / ".aider.chat.history.md", tmp_path / "myrepo") == "myrepo"
    gem = tmp_path / ".gemini" / "tmp" / "9cfc5cfa6f8fd18d3d1ecfcfd77bd22358803e86899edd66537e36fc1bc8652a"
    assert folder_wing(gem / "chats" / "session-1.json", tmp_path / ".gemini") == ""
    (e,) = chatgpt.parse_document(_chatgpt_upload_only())
    info = SourceInfo(kind="chatgpt", path="/x", source_key="k", machine="m", user="u",
                      default_wing=folder_wing(root / "chatgpt-2024-06" / "conversations.json", root))
    (d,) = build_drawers([e], info, lambda t: len(t.split()), 1000)
    assert d.payload["wing"] == "chatgpt-2024-06"
