"""GitHub Copilot sessions written by the tests in the real shapes (no one's data): a VS Code chat session
(``chatSessions/<id>.json``), the same session as VS Code 1.104+'s mutation log (``.jsonl``), and a Copilot CLI
``events.jsonl``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PROJECT = "/home/dev/projects/heron"


def request(rid: str, text: str, response: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    return {"requestId": rid, "timestamp": 1762077600000, "modelId": "copilot/gpt-4.1",
            "message": {"text": text, "parts": [{"kind": "text", "text": text,
                                                 "range": {"start": 0, "endExclusive": len(text)}}]},
            "variableData": {"variables": []}, "response": response, "result": {"timings": {"totalElapsed": 900}},
            "followups": [], "isCanceled": False, "contentReferences": [], "codeCitations": [],
            "agent": {"id": "github.copilot.editsAgent"}, **more}


def session(requests: list[dict[str, Any]], sid: str = "6c1f0d3e-2b9a-4e55-9d61-0f3c2a7b8e11") -> dict[str, Any]:
    return {"version": 3, "requesterUsername": "dev", "requesterAvatarIconUri": {"$mid": 1, "scheme": "https"},
            "responderUsername": "GitHub Copilot", "initialLocation": "panel", "sessionId": sid,
            "creationDate": 1762077500000, "lastMessageDate": 1762077700000, "isImported": False,
            "customTitle": "Partition writer", "requests": requests}


def heron_requests() -> list[dict[str, Any]]:
    return [
        request("request_1", "#file:writer.py why are partitions written twice?", [
            {"kind": "thinking", "value": "look at the flush"},
            {"value": "The writer flushes in ", "supportThemeIcons": False, "supportHtml": False},
            {"kind": "inlineReference", "inlineReference": {"$mid": 1, "fsPath": f"{PROJECT}/writer.py",
                                                            "path": f"{PROJECT}/writer.py", "scheme": "file"}},
            {"value": " and again on close:\n\n```python\nself.flush()\nself.close()\n```\n"},
            {"kind": "toolInvocationSerialized", "toolId": "copilot_readFile", "toolCallId": "t1",
             "invocationMessage": {"value": "Reading writer.py, lines 1 to 80"},
             "pastTenseMessage": {"value": "Read writer.py, lines 1 to 80"}, "isComplete": True},
            {"kind": "progressMessage", "content": {"value": "Searching..."}},
        ], variableData={"variables": [{"id": "vscode.implicit.file", "kind": "file", "name": "file:writer.py",
                                        "value": {"$mid": 1, "fsPath": f"{PROJECT}/writer.py", "scheme": "file"}},
                                       {"id": "sel", "kind": "file", "name": "selection",
                                        "value": {"uri": {"fsPath": f"{PROJECT}/flush.py"},
                                                  "range": {"startLineNumber": 3, "endLineNumber": 9}}}]}),
        request("request_2", "Fix it.", [
            {"kind": "textEditGroup", "uri": {"$mid": 1, "fsPath": f"{PROJECT}/writer.py", "scheme": "file"},
             "edits": [[{"text": "", "range": {"startLineNumber": 40}}]], "done": True},
            {"kind": "undoStop", "id": "u1"},
            {"value": "Removed the second flush."},
        ]),
        request("request_3", "And the tests?", [{"value": "Start with a part"}], isCanceled=True),
    ]


def write_json_session(folder: Path) -> Path:
    ws = folder / "workspaceStorage" / "a1b2c3"
    (ws / "chatSessions").mkdir(parents=True, exist_ok=True)
    (ws / "workspace.json").write_text(json.dumps({"folder": f"file://{PROJECT}"}))
    path = ws / "chatSessions" / "6c1f0d3e-2b9a-4e55-9d61-0f3c2a7b8e11.json"
    path.write_text(json.dumps(session(heron_requests()), indent=2))
    return path


def mutation_log(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The log VS Code writes for a session built request by request."""
    first = session([], sid="0d9e8f7a-1111-4222-8333-944455556666")
    entries: list[dict[str, Any]] = [{"kind": 0, "v": first}]
    for n, req in enumerate(requests):
        entries.append({"kind": 2, "k": ["requests"], "v": [{**req, "response": []}]})
        entries.append({"kind": 2, "k": ["requests", n, "response"], "v": req["response"][:1]})
        entries.append({"kind": 1, "k": ["requests", n, "response"], "v": req["response"]})
        entries.append({"kind": 1, "k": ["requests", n, "result"], "v": req["result"]})
    entries.append({"kind": 1, "k": ["customTitle"], "v": "Partition writer (log)"})
    return entries


def write_jsonl_session(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "0d9e8f7a-1111-4222-8333-944455556666.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in mutation_log(heron_requests())))
    return path


def cli_events() -> list[dict[str, Any]]:
    def ev(n: int, etype: str, **data: Any) -> dict[str, Any]:
        return {"type": etype, "data": data, "id": f"e{n:02d}-5b1c", "timestamp": f"2026-11-02T09:00:{n:02d}.000Z",
                "parentId": f"e{n - 1:02d}-5b1c" if n else None}
    return [
        ev(0, "session.start", sessionId="9a8b7c6d-0000-4000-8000-aabbccddeeff", version=1, producer="copilot-agent",
           copilotVersion="0.0.369", startTime="2026-11-02T09:00:00.000Z",
           context={"cwd": PROJECT, "gitRoot": PROJECT, "branch": "main"}),
        ev(1, "session.info", infoType="folder_trust", message=f"Folder {PROJECT} has been added to trusted folders."),
        ev(2, "user.message", content="List the failing tests",
           transformedContent="<ctx>...</ctx> List the failing tests",
           attachments=[{"type": "file", "path": f"{PROJECT}/pytest.ini", "displayName": "pytest.ini"}]),
        ev(3, "assistant.turn_start", turnId="0"),
        ev(4, "assistant.reasoning", reasoningId="r1", content="run pytest"),
        ev(5, "assistant.message", messageId="m1", content="",
           toolRequests=[{"toolCallId": "c1", "name": "bash", "arguments": {"command": "pytest -q"}}]),
        ev(6, "tool.execution_start", toolCallId="c1", toolName="bash", arguments={"command": "pytest -q"}),
        ev(7, "tool.execution_complete", toolCallId="c1", success=True, result={"content": "2 failed, 40 passed"}),
        ev(8, "assistant.message_delta", messageId="m2", deltaContent="Two"),
        ev(9, "assistant.message", messageId="m2", content="Two tests fail: test_flush and test_close."),
        ev(10, "assistant.turn_end", turnId="0"),
        ev(11, "user.message", content="Fix test_flush"),
        ev(12, "tool.execution_start", toolCallId="c2", toolName="edit",
           arguments={"path": "writer.py", "old_str": "a", "new_str": "b"}),
        ev(13, "tool.execution_complete", toolCallId="c2", success=False, result={"content": "no match"}),
        ev(14, "assistant.message", messageId="m3", content="The edit did not apply; the line moved."),
    ]


def write_cli_session(folder: Path) -> Path:
    sdir = folder / "9a8b7c6d-0000-4000-8000-aabbccddeeff"
    sdir.mkdir(parents=True, exist_ok=True)
    path = sdir / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in cli_events()))
    return path
