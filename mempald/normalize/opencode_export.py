"""``opencode export`` documents: one session as ``{"info": {session}, "messages": [{"info": {message},
"parts": [{part}...]}...]}`` (OpenCode 2: ``"messages": [{id, type, ...}]``, its session messages,
``mempald.normalize.opencode_v2``), dropped in an export folder (a document, re-read whole when rewritten).

Read by ``mempald.normalize.opencode``: the same exchange ids as the session read live from OpenCode's storage
or database. Records are accounted for as ``info``, ``messages[i]`` and ``messages[i].parts[j]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from mempald.normalize.common import as_str
from mempald.normalize.format import Format, Input, Parsed, Probe, loads
from mempald.normalize.ledger import Ledger
from mempald.normalize.model import NormalizeError
from mempald.normalize.opencode import Message, read_session, session_of
from mempald.normalize.opencode_v2 import messages_of

NAME = "opencode_export"


def _is_export(root: Any) -> bool:
    info = root.get("info") if isinstance(root, dict) else None
    return isinstance(info, dict) and as_str(info.get("id")).startswith("ses_") and isinstance(
        root.get("messages"), list)


def parse(inp: Input) -> Parsed:
    """The exchanges of one exported session. NormalizeError when the document is not an OpenCode export."""
    root = loads(inp.data)
    if not _is_export(root):
        raise NormalizeError(f"{inp.name or 'document'}: not an OpenCode export (no session 'info' and 'messages')")
    ledger = Ledger()
    session = session_of(root["info"])
    ledger.skipped("info", "session record")
    if "todos" in root:
        ledger.skipped("todos", "todo list")
    messages: list[Message] = []
    for i, item in enumerate(root["messages"]):
        ref = f"messages[{i}]"
        info = item.get("info") if isinstance(item, dict) else None
        if isinstance(item, dict) and info is None and isinstance(item.get("type"), str) and as_str(item.get("id")):
            messages.extend(messages_of({"id": item["id"], "type": item["type"], "data": item}, ref))  # OpenCode 2
            continue
        if not isinstance(info, dict) or not as_str(info.get("id")):
            ledger.skipped(ref, "not a message")
            continue
        raw_parts = item.get("parts")
        parts: list[tuple[str | int, Mapping[str, Any]]] = []
        for j, part in enumerate(raw_parts if isinstance(raw_parts, list) else []):
            if isinstance(part, dict):
                parts.append((f"{ref}.parts[{j}]", part))
            else:
                ledger.skipped(f"{ref}.parts[{j}]", "not an object")
        messages.append(Message(as_str(info["id"]), ref, info, parts))
    out = read_session(session, messages, ledger)
    ctx = replace(inp.context, format=NAME, session_id=session.id, cwd=inp.context.cwd or session.directory)
    return Parsed(out, ledger, ctx.with_title(session.title, 1) if session.title else ctx)


def detect(probe: Probe) -> bool:
    """A JSON object whose ``info`` is a session (``"id": "ses_..."``) beside a ``messages`` list."""
    doc = probe.document
    if doc is not None:
        return _is_export(doc)
    text = probe.text
    return text.startswith("{") and '"info"' in text[:2048] and '"id": "ses_' in text[:4096].replace(
        '"id":"ses_', '"id": "ses_') and '"messages"' in text


FORMAT = Format(NAME, "document", detect, parse, suffixes=(".json",), ids="message",
                summary="OpenCode sessions written by `opencode export`")
