"""Cursor stores built by the tests in the real schema (no one's data): a ``User/`` folder with the global
``state.vscdb`` (``ItemTable`` and ``cursorDiskKV``, ``composerData:`` headers and ``bubbleId:`` messages), a
workspace database listing its conversations and its ``workspace.json``. The tests read them through the
intake's own ``Look`` (``mempald.sources.look.LOOK``)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

SCHEMA = ("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)",
          "CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
PROJECT = "/home/dev/projects/spotter"
T0 = 1766691308486


def create_db(path: Path, *, wal: bool = True) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute(f"PRAGMA journal_mode={'wal' if wal else 'delete'}")
    for sql in SCHEMA:
        db.execute(sql)
    return db


def put(db: sqlite3.Connection, key: str, value: Any, table: str = "cursorDiskKV") -> None:
    db.execute(f"INSERT INTO {table} (key, value) VALUES (?, ?)",
               (key, value if isinstance(value, str | bytes) or value is None else json.dumps(value)))


def composer(cid: str, bubbles: list[tuple[str, int]], *, name: str = "", updated: int = T0,
             status: str = "completed", **more: Any) -> dict[str, Any]:
    return {"_v": 10, "composerId": cid, "name": name, "text": "", "richText": "", "status": status,
            "createdAt": T0, "lastUpdatedAt": updated, "unifiedMode": "agent", "hasLoaded": True,
            "context": {"fileSelections": [], "selections": []}, "blobEncryptionKey": "k" * 16,
            "fullConversationHeadersOnly": [{"bubbleId": b, "type": t} for b, t in bubbles], "conversationMap": {},
            **more}


def user(bid: str, text: str, **more: Any) -> dict[str, Any]:
    return {"_v": 3, "type": 1, "bubbleId": bid, "text": text, "richText": "", "createdAt": "2026-11-02T10:00:00Z",
            "requestId": "r-" + bid, "attachedCodeChunks": [], "supportedTools": [1, 5], **more}


def answer(bid: str, text: str, **more: Any) -> dict[str, Any]:
    return {"_v": 3, "type": 2, "bubbleId": bid, "text": text, "createdAt": "2026-11-02T10:00:05Z",
            "codeBlocks": [], "tokenCount": {"inputTokens": 10, "outputTokens": 20}, **more}


def write_conversation(db: sqlite3.Connection, cid: str, messages: list[dict[str, Any]], **more: Any) -> None:
    put(db, f"composerData:{cid}", composer(cid, [(m["bubbleId"], m["type"]) for m in messages], **more))
    for m in messages:
        put(db, f"bubbleId:{cid}:{m['bubbleId']}", m)


def spotter_conversation() -> list[dict[str, Any]]:
    """A real-shaped agent conversation: a prompt with attachments, an answer with a code block, a tool call,
    thinking, a second prompt and answer."""
    return [
        user("u1", "Why does the rate limiter let bursts through?\nSee the router.", context={
            "fileSelections": [{"uri": {"$mid": 1, "fsPath": f"{PROJECT}/src/router.ts", "scheme": "file"}}],
            "selections": [{"uri": {"fsPath": f"{PROJECT}/src/limiter.ts"}, "text": "bucket.take()",
                            "range": {"selectionStartLineNumber": 12, "positionLineNumber": 18}}]}),
        answer("a1", "", thinking={"text": "the bucket refills before the check", "signature": "x"}),
        answer("a2", "", toolFormerData={"tool": 5, "name": "read_file", "status": "completed",
                                         "rawArgs": json.dumps({"target_file": "src/limiter.ts"}),
                                         "result": json.dumps({"contents": "export class Bucket {}"})}),
        answer("a3", "The bucket refills before `take()` checks it. Move the refill:\n\n"
                     "```ts\nbucket.refill(now);\nif (!bucket.take()) return reject();\n```\n"),
        user("u2", "Apply it and add a test."),
        answer("a4", "", toolFormerData={"name": "edit_file", "status": "completed",
                                         "params": {"relative_workspace_path": "src/limiter.ts"}},
               codeBlocks=[{"content": "-bucket.take();\n+bucket.refill(now);", "languageId": "diff",
                            "codeBlockIdx": 0}]),
        answer("a5", "Done: the refill now runs first and `limiter.test.ts` covers a burst of 20."),
    ]


def build_cursor_user(root: Path, *, wal: bool = True) -> Path:
    """``root/User`` with a global database of three conversations (one in the spotter workspace, one with no
    workspace, one with an unreadable message) and the spotter workspace's database; the global database's
    path."""
    glob = root / "User" / "globalStorage" / "state.vscdb"
    db = create_db(glob, wal=wal)
    put(db, "cursorAuth/accessToken", "secret-token", "ItemTable")  # never read
    write_conversation(db, "c-spotter", spotter_conversation(), name="Rate limiter bursts")
    write_conversation(db, "c-loose", [user("u9", "What does HTTP 429 mean?"),
                                       answer("a9", "Too Many Requests: the client is rate limited.")],
                       updated=T0 + 1000)
    write_conversation(db, "c-odd", [user("u7", "Explain the backoff."), answer("a7", "Exponential, capped at 30 s.")],
                       updated=T0 + 2000)
    put(db, "bubbleId:c-odd:a7", "{not json")  # a torn or foreign value: skipped, counted
    put(db, "checkpointId:c-spotter:1", {"files": []})  # other keys of the table are never read
    put(db, "bubbleId:c-gone:x1", answer("x1", "orphan"))  # a message whose conversation is gone
    db.close()
    ws = root / "User" / "workspaceStorage" / "5f1e2d3c"
    wdb = create_db(ws / "state.vscdb", wal=wal)
    put(wdb, "composer.composerData", {"allComposers": [{"composerId": "c-spotter", "name": "Rate limiter bursts"}],
                                       "selectedComposerIds": ["c-spotter"]}, "ItemTable")
    wdb.close()
    (ws / "workspace.json").write_text(json.dumps({"folder": f"file://{PROJECT}"}))
    return glob
