"""Which format a file or folder is in, by content (SCHEMAS.md 6.5). Unknown is None: callers fall back to text.

``detect_bytes`` looks at the head of a file (it may be cut anywhere, so a JSON document that does not parse
is sniffed for its characteristic keys near the top):

- JSONL whose first records are ``session_meta`` / Codex envelopes (``response_item``, ``event_msg``,
  ``turn_context``, ``compacted`` with a ``payload``) -> ``codex``
- JSONL records with ``parentUuid`` / ``isSidechain`` / ``sessionId`` and a Claude Code ``type``
  (user, assistant, summary, file-history-snapshot, progress, system, queue-operation...) -> ``claude_code``
- a JSON array of objects with ``mapping`` (and ``current_node``) -> ``chatgpt``
- a JSON array of objects with ``chat_messages`` -> ``claude_ai``
- an object with ``sessionId`` + ``projectHash`` + ``messages`` -> ``gemini``
- Markdown with ``# aider chat started at`` (or the file name ``.aider.chat.history.md``) -> ``aider``

``detect_dir`` recognises a Slack export folder from its entry names (``users.json`` next to ``channels.json``,
or ``groups.json``/``dms.json``/``mpims.json`` for private and DM-only exports).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Any

CLAUDE_CODE_TYPES = frozenset({
    "user", "assistant", "summary", "file-history-snapshot", "progress", "system", "queue-operation",
    "custom-title", "ai-title", "agent-name", "last-prompt", "attachment", "permission-mode", "pr-link",
    "agent-setting", "bridge-session", "worktree-state",
})
CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted", "world_state"})
_MAX_LINES = 8
_AIDER = re.compile(r"^# aider chat started at ", re.MULTILINE)


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _jsonl_kind(records: list[dict[str, Any]]) -> str | None:
    for rec in records:
        rtype = rec.get("type")
        if not isinstance(rtype, str):
            rtype = None if "type" not in rec else ""
        if rtype == "session_meta" or (rtype in CODEX_TYPES and isinstance(rec.get("payload"), dict)):
            return "codex"
        if rtype in CLAUDE_CODE_TYPES and (
                "parentUuid" in rec or "isSidechain" in rec or "sessionId" in rec or "leafUuid" in rec
                or "messageId" in rec):
            return "claude_code"
        if rtype is None and "payload" not in rec and isinstance(rec.get("id"), str) and "timestamp" in rec and (
                "instructions" in rec or "git" in rec):
            return "codex"  # rollouts written before the envelope start with a bare session meta
    return None


def _document_kind(root: Any) -> str | None:
    if isinstance(root, dict):
        if "sessionId" in root and "projectHash" in root and isinstance(root.get("messages"), list):
            return "gemini"
        if isinstance(root.get("mapping"), dict):
            return "chatgpt"
        if isinstance(root.get("chat_messages"), list):
            return "claude_ai"
        return None
    if isinstance(root, list):
        for item in root[:20]:
            if isinstance(item, dict):
                if isinstance(item.get("mapping"), dict):
                    return "chatgpt"
                if isinstance(item.get("chat_messages"), list):
                    return "claude_ai"
    return None


_ARRAY_OF = {key: re.compile(rf'"{key}"\s*:\s*\[') for key in ("chat_messages", "messages")}
_MAPPING = re.compile(r'"mapping"\s*:\s*\{')
_SESSION_META = re.compile(r'"type"\s*:\s*"session_meta"')


def _sniff_truncated(text: str) -> str | None:
    """Key sniffing for a JSON document (or a first JSONL line) cut by the head limit."""
    first = text.split("\n", 1)[0]
    if text.startswith("{"):
        if _SESSION_META.search(first[:4096]):
            return "codex"
        if '"parentUuid"' in first[:4096] and ('"sessionId"' in first or '"isSidechain"' in first):
            return "claude_code"
        if '"sessionId"' in text and '"projectHash"' in text and _ARRAY_OF["messages"].search(text):
            return "gemini"
        if _ARRAY_OF["chat_messages"].search(text):
            return "claude_ai"
        if _MAPPING.search(text) and ('"current_node"' in text or '"content_type"' in text):
            return "chatgpt"
        return None
    if text.startswith("["):
        chat = _ARRAY_OF["chat_messages"].search(text)
        mapping = _MAPPING.search(text)
        if mapping and (chat is None or mapping.start() < chat.start()) and (
                '"current_node"' in text or '"content_type"' in text or '"author"' in text):
            return "chatgpt"
        if chat:
            return "claude_ai"
    return None


def detect_bytes(head: bytes, name: str = "") -> str | None:
    """The SOURCE_KIND of a file from its first bytes (and name), or None when unknown."""
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    base = PurePosixPath(name.replace("\\", "/")).name if name else ""
    if base == ".aider.chat.history.md" or _AIDER.search(text[:65536]):
        return "aider"
    if not text.startswith(("{", "[")):
        return None
    whole = _loads(text)
    if whole is not None:
        kind = _document_kind(whole)
        if kind:
            return kind
        if isinstance(whole, dict):
            return _jsonl_kind([whole])
        return None
    records: list[dict[str, Any]] = []
    for line in text.split("\n")[:_MAX_LINES]:
        rec = _loads(line) if line.strip().startswith("{") else None
        if isinstance(rec, dict):
            records.append(rec)
    kind = _jsonl_kind(records)
    return kind or _sniff_truncated(text)


def detect_dir(names: Iterable[str]) -> str | None:
    """``slack`` for a Slack export folder given its entry names (relative paths or base names), else None."""
    base = {PurePosixPath(n.replace("\\", "/")).name for n in names}
    if "users.json" in base and base & {"channels.json", "groups.json", "dms.json", "mpims.json"}:
        return "slack"
    return None
