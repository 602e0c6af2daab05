"""The message list of a Gemini CLI chat in each of its shapes (pure), with what happened to every record.

``jsonl_messages`` replays a 0.45+ ``session-*.jsonl`` the way Gemini CLI loads it: a message record whose id
was seen replaces the earlier copy in place (a streamed message is written again as it grows), ``$set`` with
``messages`` replaces the whole list, ``$rewindTo`` drops that message and all after it; heartbeats and the
header change no message. Each record that ends up in no message is skipped in the ledger with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mempald.normalize.format import loads
from mempald.normalize.ledger import Ledger


@dataclass(frozen=True, slots=True)
class Message:
    ref: str  # where it came from: messages[3], [5], line 12, line 4#2
    index: int  # its place in the final list (names it when it has no id)
    body: dict[str, Any] | None  # None: the record was not an object


@dataclass(frozen=True, slots=True)
class Log:
    session_id: str
    messages: list[Message]
    kind: str = ""  # the header's kind ("subagent" for a sub-agent's chat)


def session_messages(items: list[Any]) -> list[Message]:
    return [Message(f"messages[{i}]", i, m if isinstance(m, dict) else None) for i, m in enumerate(items)]


def checkpoint_messages(items: list[Any], at: str = "") -> list[Message]:
    return [Message(f"{at}[{i}]", i, m if isinstance(m, dict) else None) for i, m in enumerate(items)]


def jsonl_messages(data: bytes, ledger: Ledger) -> Log | None:
    """The messages of a JSONL chat, or None when the first record is not a Gemini CLI chat header."""
    lines = data.split(b"\n")
    if lines and not lines[-1].strip():
        lines.pop()
    session_id = ""
    kind = ""
    current: list[tuple[str, dict[str, Any]]] = []  # (ref, message), in order
    for n, raw in enumerate(lines, 1):
        ref = f"line {n}"
        if not raw.strip():
            ledger.skipped(ref, "blank")
            continue
        rec = loads(raw)
        if not isinstance(rec, dict):
            if n == 1:
                return None
            ledger.skipped(ref, "not JSON")
            continue
        if n == 1 or (not session_id and "sessionId" in rec and "projectHash" in rec):
            if not isinstance(rec.get("sessionId"), str) or "messages" in rec:
                return None
            session_id = rec["sessionId"]
            kind = rec["kind"] if isinstance(rec.get("kind"), str) else ""
            ledger.skipped(ref, "session header")
            continue
        if "$rewindTo" in rec:
            target = rec.get("$rewindTo")
            ids = [_id(m) for _, m in current]
            cut = ids.index(target) if target in ids else 0
            for r, _ in current[cut:]:
                ledger.skipped(r, "rewound")
            current = current[:cut]
            ledger.skipped(ref, "rewind")
            continue
        patch = rec.get("$set")
        if isinstance(patch, dict):
            msgs = patch.get("messages")
            if not isinstance(msgs, list):
                ledger.skipped(ref, "heartbeat")
                continue
            for r, _ in current:
                ledger.skipped(r, "replaced by a later snapshot")
            current = [(f"{ref}#{i}", m) for i, m in enumerate(msgs) if isinstance(m, dict)]
            if not current:
                ledger.skipped(ref, "empty snapshot")
            for i, m in enumerate(msgs):
                if not isinstance(m, dict):
                    ledger.skipped(f"{ref}#{i}", "not an object")
            continue
        mid = _id(rec)
        at = next((i for i, (_, m) in enumerate(current) if mid is not None and _id(m) == mid), None)
        if at is None:
            current.append((ref, rec))
        else:
            ledger.skipped(current[at][0], "superseded by a later copy")
            current[at] = (ref, rec)
    if not session_id:
        return None
    return Log(session_id, [Message(r, i, m) for i, (r, m) in enumerate(current)], kind)


def _id(msg: dict[str, Any]) -> str | None:
    mid = msg.get("id")
    return mid if isinstance(mid, str) and mid else None
