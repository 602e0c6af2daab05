"""cursor-agent chat stores built by the tests in the real shape (no one's data): ``chats/<md5 of the workspace
path>/<agent id>/store.db`` in WAL mode with the tables ``meta (key TEXT PRIMARY KEY, value TEXT)`` (key ``"0"``:
hex-encoded JSON metadata) and ``blobs (id TEXT PRIMARY KEY, data BLOB)`` (content-addressed by SHA-256): JSON
message blobs and a protobuf root blob listing them (field 1, 32-byte digests, in order), naming the workspace
(field 9, a ``file://`` URI) and carrying fields the reader skips (a workspace descriptor, a token count). A chat
grows as cursor-agent grows it: new message blobs, a new root, the meta row pointed at it."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

PROJECT = "/home/dev/projects/ledgerly"
AGENT = "5b0c7e2a-41d9-4c3e-9a57-0e8f2d6b1c34"
CREATED = 1782900000000
SCHEMA = ("CREATE TABLE blobs (id TEXT PRIMARY KEY, data BLOB)", "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")


def varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def blob(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def root_blob(ids: list[str], workspace: str | None, provisional: dict[str, Any] | None = None) -> bytes:
    data = b"".join(field(1, bytes.fromhex(i)) for i in ids)
    if provisional is not None:
        data += field(4, blob(provisional))
    if workspace:
        data += field(9, ("file://" + workspace).encode())
        data += field(21, field(1, workspace.encode()) + field(2, workspace.rsplit("/", 1)[-1].encode()))
    return data + varint(5 << 3) + varint(28484)  # a varint field (a context token count): skipped


def store_path(chats: Path, workspace: str = PROJECT, agent: str = AGENT) -> Path:
    return chats / hashlib.md5(workspace.encode()).hexdigest() / agent / "store.db"


def write_chat(db_path: Path, messages: list[dict[str, Any]], *, workspace: str | None = PROJECT,
               agent: str = AGENT, name: str = "Ledger total drift", provisional: dict[str, Any] | None = None,
               skip: tuple[int, ...] = ()) -> str:
    """Write (or grow) the chat at ``db_path`` to hold ``messages`` (its message blobs but those at ``skip``, a
    new root, the meta row naming it); returns the root's id."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    fresh = not db_path.exists()
    db = sqlite3.connect(db_path, isolation_level=None)
    try:
        if fresh:
            db.execute("PRAGMA journal_mode=wal")
            for sql in SCHEMA:
                db.execute(sql)
        db.execute("BEGIN")
        ids = []
        for n, m in enumerate(messages):
            data = blob(m)
            ids.append(hashlib.sha256(data).hexdigest())
            if n not in skip:
                db.execute("INSERT OR IGNORE INTO blobs (id, data) VALUES (?, ?)", (ids[-1], data))
        root = root_blob(ids, workspace, provisional)
        root_id = hashlib.sha256(root).hexdigest()
        db.execute("INSERT OR IGNORE INTO blobs (id, data) VALUES (?, ?)", (root_id, root))
        meta = {"agentId": agent, "latestRootBlobId": root_id, "name": name, "mode": "default",
                "createdAt": CREATED, "lastUsedModel": "gpt-5"}
        db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('0', ?)", (blob(meta).hex(),))
        db.execute("COMMIT")
    finally:
        db.close()
    return root_id


def user_info(workspace: str = PROJECT) -> dict[str, Any]:
    return {"role": "user", "content": (
        "<user_info>\nOS Version: linux 6.8.0-49-generic\n\nShell: bash\n\n"
        f"Workspace Path: {workspace}\n\nIs directory a git repo: Yes, at {workspace}\n\n"
        "Today's date: Tuesday, July 1, 2026\n</user_info>")}


def query(text: str, attached: str = "") -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": attached + f"<user_query>\n{text}\n</user_query>"}],
            "providerOptions": {"cursor": {"requestId": hashlib.md5(text.encode()).hexdigest()}}}


def said(text: str) -> dict[str, Any]:
    return {"id": "1", "role": "assistant", "content": [{"type": "text", "text": text}]}


def ledgerly() -> list[dict[str, Any]]:
    """A real-shaped chat: the system prompt, the injected user_info, a prompt with an attached file, reasoning,
    a tool call and its result, an answer with a code block; a second prompt and its answer."""
    return [
        {"role": "system", "content": "You are an AI coding assistant, powered by GPT-5. You operate in Cursor."},
        user_info(),
        query("Why does the monthly ledger total drift by a cent?",
              "<attached_files>\n<file_contents>\n```path=src/ledger.py, lines=1-3\n"
              "def total(rows):\n    return sum(r.amount for r in rows)\n```\n</file_contents>\n</attached_files>\n"),
        {"id": "1", "role": "assistant", "content": [
            {"type": "reasoning", "text": "The amounts are floats; summing them accumulates error.",
             "providerOptions": {"cursor": {"modelName": "gpt-5"}}, "signature": "c2lnbmF0dXJl"},
            {"type": "tool-call", "toolCallId": "toolu_01Hq7", "toolName": "Read",
             "args": {"path": "src/ledger.py"},
             "providerOptions": {"cursor": {"rawToolCallArgs": "{\"path\": \"src/ledger.py\"}"}}}]},
        {"role": "tool", "id": "toolu_01Hq7", "content": [
            {"type": "tool-result", "toolName": "Read", "toolCallId": "toolu_01Hq7",
             "result": "def total(rows):\n    return sum(r.amount for r in rows)", "isError": False}]},
        said("The amounts are binary floats, so the monthly sum drifts. Keep cents as Decimal:\n\n"
             "```python\nfrom decimal import Decimal\n\ndef total(rows):\n"
             "    return sum((Decimal(r.amount) for r in rows), Decimal(0))\n```"),
        query("Add a regression test for the cent drift."),
        {"id": "1", "role": "assistant", "content": [
            {"type": "tool-call", "toolCallId": "toolu_02Kx9", "toolName": "Write",
             "args": {"path": "tests/test_ledger.py", "contents": "def test_total(): ..."}}]},
        {"role": "tool", "id": "toolu_02Kx9", "content": [
            {"type": "tool-result", "toolName": "Write", "toolCallId": "toolu_02Kx9", "result": "Wrote 12 lines"}]},
        said("Added tests/test_ledger.py: three rows of 0.10 now total exactly 0.30."),
    ]


def grown() -> list[dict[str, Any]]:
    """The same chat one exchange later."""
    return [*ledgerly(), query("Does the CSV export round the same way?"),
            said("Yes: the exporter formats the Decimal total with two places, so the CSV matches the ledger.")]


def build_chat(chats: Path, messages: list[dict[str, Any]] | None = None, **kw: Any) -> Path:
    """A chat store under ``chats`` (a ``~/.cursor/chats`` folder) holding ``messages`` (default ``ledgerly()``)."""
    path = store_path(chats, kw.get("workspace") or PROJECT, kw.get("agent", AGENT))
    write_chat(path, ledgerly() if messages is None else messages, **kw)
    return path
