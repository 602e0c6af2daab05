"""Claude.ai data export (``conversations.json`` and ``conversations-NNNN.json`` batches), SCHEMAS.md section 4.

The file is a JSON array of conversations (a batch file has the same shape; a single conversation object as
saved from the web API is accepted too). One exchange per human message: the message plus the assistant
messages that follow it on the visible branch.

- session_id is the conversation uuid, title its name, position the turn index, key the human message uuid.
- Text comes from ``content[]`` text blocks when there are any, else from ``text`` (old exports fill ``text``
  and leave ``content`` empty; newer ones do the opposite).
- Attachments and files are named in the human text as ``[attachment: name]`` / ``[file: name]`` lines; their
  extracted content is not copied (it can be a whole document).
- Branches (edits, retries) are rebuilt from ``parent_message_uuid``: from ``current_leaf_message_uuid`` when
  present (web API), else from the root following, at every fork, the child with the latest ``created_at``.
  Without any parent links the list order is the conversation.
- Assistant ``thinking`` is dropped; ``tool_use`` becomes ``[tool: name] arg`` (artifacts: command and title),
  ``tool_result`` becomes ``  -> short result``; unknown block types are ignored.
- A non-empty conversation ``summary`` becomes one more exchange of kind ``summary``.
"""

from __future__ import annotations

from typing import Any

from mempald.normalize.common import MAX_ARG as _MAX_ARG
from mempald.normalize.common import MAX_RESULT as _MAX_RESULT
from mempald.normalize.common import as_str as _s
from mempald.normalize.common import conversation_array
from mempald.normalize.common import one_line as _one_line
from mempald.normalize.model import Exchange, strip_injected

SOURCE_KIND = "claude_ai"
AGENT = "claude.ai"
NULL_PARENT = "00000000-0000-4000-8000-000000000000"

_ARG_KEYS = ("query", "path", "command", "url", "pattern", "title", "description", "code", "content")


def _blocks(msg: dict[str, Any]) -> list[dict[str, Any]]:
    content = msg.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _tool_summary(block: dict[str, Any]) -> str:
    name = _s(block.get("name")) or "tool"
    tool_input = block.get("input")
    arg = ""
    if isinstance(tool_input, dict):
        if name == "artifacts":
            bits = [_s(tool_input.get("command")), _s(tool_input.get("title")) or _s(tool_input.get("id"))]
            arg = " ".join(b for b in bits if b)
        else:
            for key in _ARG_KEYS:
                val = tool_input.get(key)
                if isinstance(val, str) and val.strip():
                    arg = val
                    break
    elif isinstance(tool_input, str):
        arg = tool_input
    return f"[tool: {name}] {_one_line(arg, _MAX_ARG)}".rstrip()


def _result_summary(block: dict[str, Any]) -> str | None:
    content = block.get("content")
    if isinstance(content, list):
        text = "\n".join(_s(b.get("text")) for b in content if isinstance(b, dict))
    else:
        text = _s(content)
    if not text.strip():
        return None
    prefix = "  -> error: " if block.get("is_error") is True else "  -> "
    return prefix + _one_line(text, _MAX_RESULT)


def human_text(msg: dict[str, Any]) -> str:
    texts = [_s(b.get("text")) for b in _blocks(msg) if b.get("type") == "text"]
    text = "\n".join(t for t in texts if t).strip() or _s(msg.get("text")).strip()
    names: list[str] = []
    for key, label in (("attachments", "attachment"), ("files", "file"), ("files_v2", "file")):
        items = msg.get(key)
        if not isinstance(items, list):
            continue
        for item in items:
            fname = _s(item.get("file_name")) if isinstance(item, dict) else ""
            line = f"[{label}: {fname or 'unnamed'}]"
            if isinstance(item, dict) and line not in names:
                names.append(line)
    text = strip_injected(text).strip()
    if names:
        text = strip_injected((text + "\n" if text else "") + "\n".join(names)).strip()
    return text


def assistant_parts(msg: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(reply lines, tool names) of one assistant message."""
    lines: list[str] = []
    tools: list[str] = []
    blocks = _blocks(msg)
    for block in blocks:
        btype = block.get("type")
        if btype == "text":
            text = strip_injected(_s(block.get("text"))).strip()
            if text:
                lines.append(text)
        elif btype == "tool_use":
            tools.append(_s(block.get("name")) or "tool")
            lines.append(_tool_summary(block))
        elif btype == "tool_result":
            result = _result_summary(block)
            if result:
                lines.append(result)
    if not lines:
        text = strip_injected(_s(msg.get("text"))).strip()
        if text:
            lines.append(text)
    return lines, tools


def visible_messages(conv: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages of the visible branch, oldest first."""
    raw = conv.get("chat_messages")
    msgs = [m for m in raw if isinstance(m, dict)] if isinstance(raw, list) else []
    by_id = {m["uuid"]: m for m in msgs if isinstance(m.get("uuid"), str)}
    if not any(isinstance(m.get("parent_message_uuid"), str) for m in msgs):
        return msgs

    def parent_of(m: dict[str, Any]) -> str | None:
        parent = m.get("parent_message_uuid")
        return parent if isinstance(parent, str) and parent in by_id and parent != m.get("uuid") else None

    leaf = conv.get("current_leaf_message_uuid")
    if isinstance(leaf, str) and leaf in by_id:
        path: list[dict[str, Any]] = []
        seen: set[str] = set()
        node: str | None = leaf
        while node is not None and node not in seen:
            seen.add(node)
            path.append(by_id[node])
            node = parent_of(by_id[node])
        path.reverse()
        return path

    order = {id(m): i for i, m in enumerate(msgs)}
    children: dict[str | None, list[dict[str, Any]]] = {}
    for m in msgs:
        children.setdefault(parent_of(m), []).append(m)

    def newest(cands: list[dict[str, Any]]) -> dict[str, Any]:
        return max(cands, key=lambda m: (_s(m.get("created_at")), order[id(m)]))

    path = []
    visited: set[int] = set()
    cands = children.get(None, [])
    while cands:
        chosen = newest(cands)
        if id(chosen) in visited:
            break
        visited.add(id(chosen))
        path.append(chosen)
        uid = chosen.get("uuid")
        cands = children.get(uid, []) if isinstance(uid, str) else []
    return path


def parse_conversation(conv: dict[str, Any]) -> list[Exchange]:
    uuid = conv.get("uuid")
    session_id = uuid if isinstance(uuid, str) else ""
    title = _s(conv.get("name")) or None
    out: list[Exchange] = []
    turn: dict[str, Any] | None = None

    def close() -> None:
        nonlocal turn
        if turn is None:
            return
        out.append(Exchange(
            source_kind=SOURCE_KIND, session_id=session_id, key=turn["key"], user=turn["user"],
            assistant="\n".join(turn["reply"]).strip(), timestamp=turn["ts"], agent=AGENT, title=title,
            position=len(out), tools=tuple(turn["tools"]),
        ))
        turn = None

    for i, msg in enumerate(visible_messages(conv)):
        sender = msg.get("sender")
        if sender == "human":
            user = human_text(msg)
            close()  # a prompt that was only injected context: its answer is dropped with it
            if not user:
                continue
            key = _s(msg.get("uuid")) or f"{session_id}:{i}"
            turn = {"key": key, "user": user, "reply": [], "tools": [], "ts": _s(msg.get("created_at")) or None}
        elif sender == "assistant" and turn is not None:
            lines, tools = assistant_parts(msg)
            turn["reply"].extend(lines)
            turn["tools"].extend(tools)
    close()
    summary = _s(conv.get("summary")).strip()
    if summary:
        out.append(Exchange(
            source_kind=SOURCE_KIND, session_id=session_id, key=f"{session_id}:summary", user="",
            assistant=summary, timestamp=_s(conv.get("updated_at")) or None, agent=AGENT, title=title,
            position=len(out), kind="summary",
        ))
    return out


def parse_document(data: bytes, name: str = "") -> list[Exchange]:
    """Every conversation in a Claude.ai export file. NormalizeError only if it is not such a file at all."""
    convs = conversation_array(data, name, label="Claude.ai", marker="chat_messages", marker_type=list)
    out: list[Exchange] = []
    for conv in convs:
        out.extend(parse_conversation(conv))
    return out
