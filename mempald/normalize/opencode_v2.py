"""OpenCode 2's messages (pure): rows of its ``session_message`` table (``id``, ``session_id``, ``type``, ``data``:
the message without its id and type) as the message records ``mempald.normalize.opencode`` reads.

Types: ``user`` (``text``, ``files[{uri, mime, name}]``, ``agents``), ``assistant`` (``model: {id}``, ``content``:
``text`` / ``reasoning`` / ``tool`` items (``name``, ``state: {status, input, content[{type: text, text}],
error: {message}}``), ``error: {type, message}``), ``synthetic`` (OpenCode's own notices: never a prompt),
``system`` (context updates), ``shell`` (a ``!command`` the user ran: its command is the prompt, its output the
answer), ``compaction`` (``summary``: a summary exchange), ``agent-switched`` and ``model-switched`` (counted, no
text). A type not known here is counted, never a crash. Refs: ``session_message:<id>`` (``#text``,
``#files[i]``, ``#content[i]`` for what a row holds). OpenCode 2 copies a session written by OpenCode 1 into this
table under ``evt_legacy_backfill_`` ids: the copy is skipped where the original rows are read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mempald.normalize.common import as_str
from mempald.normalize.format import loads
from mempald.normalize.opencode import Message

BACKFILL_PREFIX = "evt_legacy_backfill_"


def _created(data: Mapping[str, Any], fallback: Any) -> Any:
    time = data.get("time")
    created = time.get("created") if isinstance(time, Mapping) else None
    return created if isinstance(created, int | float) else fallback


def _content_text(content: Any) -> str:
    items = content if isinstance(content, list) else []
    return "\n".join(as_str(c.get("text")) for c in items if isinstance(c, Mapping) and c.get("type") == "text")


def _tool(item: Mapping[str, Any]) -> dict[str, Any]:
    raw = item.get("state")
    state: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    tool_input = state.get("input")
    error = state.get("error")
    return {"type": "tool", "tool": as_str(item.get("name")), "state": {
        "status": as_str(state.get("status")),
        "input": tool_input if isinstance(tool_input, Mapping) else {"raw": as_str(tool_input)},
        "output": _content_text(state.get("content")),
        "error": as_str(error.get("message")) if isinstance(error, Mapping) else "",
    }}


def _assistant(ref: str, data: Mapping[str, Any], info: dict[str, Any]) -> list[tuple[str | int, Mapping[str, Any]]]:
    model = data.get("model")
    if isinstance(model, Mapping) and isinstance(model.get("id"), str):
        info["modelID"] = model["id"]
    error = data.get("error")
    if isinstance(error, Mapping):
        message = as_str(error.get("message"))
        info["error"] = {"name": as_str(error.get("type")) or "error", "data": {"message": message}}
    parts: list[tuple[str | int, Mapping[str, Any]]] = []
    content = data.get("content")
    for i, item in enumerate(content if isinstance(content, list) else []):
        key = f"{ref}#content[{i}]"
        if not isinstance(item, Mapping):
            part: dict[str, Any] = {"type": "not an object"}
        else:
            part = _tool(item) if item.get("type") == "tool" else dict(item)
        parts.append((key, {**part, "id": f"{i:06d}"}))  # the content's own order (its ids are not ordered)
    return parts


def messages_of(row: Mapping[str, Any], ref: str = "") -> list[Message]:
    """The message records one ``session_message`` row holds (a shell command: its prompt and its answer);
    ``ref``: where it is accounted for, when not in the database (an export's ``messages[i]``)."""
    rid, mtype = as_str(row.get("id")), as_str(row.get("type"))
    ref = ref or f"session_message:{rid}"
    raw = row.get("data")
    value = loads(raw) if isinstance(raw, str | bytes) else raw
    data: Mapping[str, Any] = value if isinstance(value, Mapping) else {}
    info: dict[str, Any] = {"role": mtype or "untyped", "time": {"created": _created(data, row.get("time_created"))}}
    if mtype == "user":
        text = {"type": "text", "id": f"{0:06d}", "text": as_str(data.get("text"))}
        parts: list[tuple[str | int, Mapping[str, Any]]] = [(f"{ref}#text", text)]
        files = data.get("files")
        for i, item in enumerate(files if isinstance(files, list) else []):
            f: Mapping[str, Any] = item if isinstance(item, Mapping) else {}
            parts.append((f"{ref}#files[{i}]", {"type": "file", "id": f"{i + 1:06d}", "mime": as_str(f.get("mime")),
                                                "filename": as_str(f.get("name")), "url": as_str(f.get("uri"))}))
        return [Message(rid, ref, info, parts)]
    if mtype in ("synthetic", "system"):
        info["role"] = "user" if mtype == "synthetic" else "system"
        injected: dict[str, Any] = {"type": "text", "text": as_str(data.get("text")), "synthetic": True}
        return [Message(rid, ref, info, [(f"{ref}#text", injected)] if mtype == "synthetic" else [])]
    if mtype == "assistant":
        info["role"] = "assistant"
        return [Message(rid, ref, info, _assistant(ref, data, info))]
    if mtype == "compaction":
        summary = {"type": "text", "text": as_str(data.get("summary"))}
        return [Message(rid, ref, {**info, "role": "assistant", "summary": True}, [(f"{ref}#summary", summary)])]
    if mtype == "shell":
        command = as_str(data.get("command"))
        typed = {"type": "text", "text": f"!{command}"}
        prompt = Message(rid, ref, {**info, "role": "user"}, [(f"{ref}#command", typed)])
        tool = {"type": "tool", "tool": "shell", "state": {"status": "completed", "input": {"command": command},
                                                           "output": as_str(data.get("output"))}}
        answer = Message(f"{rid}#output", f"{ref}#output", {**info, "role": "assistant", "parentID": rid},
                         [(f"{ref}#tool", tool)])
        return [prompt, answer]
    return [Message(rid, ref, info)]
