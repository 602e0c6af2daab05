"""Claude.ai data export (``conversations.json`` and ``conversations-NNNN.json`` batches), SCHEMAS.md section 4.

The file is a JSON array of conversations (a batch file has the same shape; a single conversation object as
saved from the web API is accepted too). One exchange per human message: the message plus the assistant
messages that follow it on the visible branch.

- session_id is the conversation uuid, title its name, position the turn index, key the human message uuid.
- Text comes from ``content[]`` text blocks when there are any, else from ``text`` (old exports fill ``text``
  and leave ``content`` empty; newer ones do the opposite).
- Attachments and files are named in the human text as ``[attachment: name]`` / ``[file: name]`` lines; the
  extracted content of an uploaded file is not copied (it can be a whole document). A long paste, which
  Claude.ai turns into an attachment with no file name, is the human's words: it is kept whole, after a
  ``[pasted text]`` line.
- Branches (edits, retries) are rebuilt from ``parent_message_uuid``: from ``current_leaf_message_uuid`` when
  present (web API), else from the root following, at every fork, the child with the latest ``created_at``.
  Without any parent links the list order is the conversation.
- Assistant ``thinking`` is dropped; ``tool_use`` becomes ``[tool: name] arg`` (artifacts: command and title),
  ``tool_result`` becomes ``  -> short result``; unknown block types are ignored.
- A non-empty conversation ``summary`` becomes one more exchange of kind ``summary``.

Every message is accounted for in the ledger (``<conversation index>/<message index>``).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from mempald.normalize.common import MAX_ARG as _MAX_ARG
from mempald.normalize.common import MAX_RESULT as _MAX_RESULT
from mempald.normalize.common import as_str as _s
from mempald.normalize.common import conversation_array
from mempald.normalize.common import one_line as _one_line
from mempald.normalize.format import Format, Input, Parsed, Probe
from mempald.normalize.ledger import Ledger
from mempald.normalize.model import CursorContext, Exchange, strip_injected

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
    pasted: list[str] = []
    for key, label in (("attachments", "attachment"), ("files", "file"), ("files_v2", "file")):
        items = msg.get(key)
        if not isinstance(items, list):
            continue
        for item in items:
            if not isinstance(item, dict):
                continue
            fname = _s(item.get("file_name"))
            content = _s(item.get("extracted_content")).strip()
            if label == "attachment" and not fname and content:
                pasted.append(f"[pasted text]\n{content}")  # a long paste: the human's own words
                continue
            line = f"[{label}: {fname or 'unnamed'}]"
            if line not in names:
                names.append(line)
    text = strip_injected(text).strip()
    extra = [strip_injected(p).strip() for p in pasted] + names
    if extra:
        text = strip_injected("\n".join(b for b in [text, *extra] if b)).strip()
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


def parse_conversation(conv: dict[str, Any], ledger: Ledger | None = None, where: str = "") -> list[Exchange]:
    """Exchanges of one conversation; every message accounted for in ``ledger`` as ``<where>/<index>``."""
    ledger = ledger if ledger is not None else Ledger()
    uuid = conv.get("uuid")
    session_id = uuid if isinstance(uuid, str) else ""
    title = _s(conv.get("name")) or None
    out: list[Exchange] = []
    turn: dict[str, Any] | None = None
    orphan = "answer before any prompt"
    raw = conv.get("chat_messages")
    index = {id(m): i for i, m in enumerate(raw)} if isinstance(raw, list) else {}

    def ref(m: dict[str, Any]) -> str:
        return f"{where}/{index.get(id(m), '?')}" if where else str(index.get(id(m), "?"))

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

    visible = visible_messages(conv)
    shown = {id(m) for m in visible}
    for i, m in enumerate(raw if isinstance(raw, list) else []):
        if id(m) not in shown:
            ledger.skipped(f"{where}/{i}" if where else str(i), "other branch" if isinstance(m, dict) else
                           "not an object")
    for i, msg in enumerate(visible):
        r = ref(msg)
        sender = msg.get("sender")
        if sender == "human":
            user = human_text(msg)
            close()  # a prompt that was only injected context: its answer is dropped with it
            if not user:
                orphan = "answer to injected context"
                ledger.skipped(r, "injected context")
                continue
            key = _s(msg.get("uuid")) or f"{session_id}:{i}"
            turn = {"key": key, "user": user, "reply": [], "tools": [], "ts": _s(msg.get("created_at")) or None}
            ledger.stored(r, key, "prompt")
        elif sender == "assistant" and turn is not None:
            lines, tools = assistant_parts(msg)
            turn["reply"].extend(lines)
            turn["tools"].extend(tools)
            if lines:
                ledger.stored(r, turn["key"], "answer")
            else:
                ledger.skipped(r, "no text")
        else:
            ledger.skipped(r, orphan if sender == "assistant" else f"{sender or 'unknown'} message")
    close()
    summary = _s(conv.get("summary")).strip()
    if summary:
        out.append(Exchange(
            source_kind=SOURCE_KIND, session_id=session_id, key=f"{session_id}:summary", user="",
            assistant=summary, timestamp=_s(conv.get("updated_at")) or None, agent=AGENT, title=title,
            position=len(out), kind="summary",
        ))
    return out


def parse(inp: Input) -> Parsed:
    """Every conversation in a Claude.ai export file. NormalizeError only if it is not such a file at all."""
    convs = conversation_array(inp.data, inp.name, label="Claude.ai", marker="chat_messages", marker_type=list)
    ledger = Ledger()
    out: list[Exchange] = []
    for i, conv in enumerate(convs):
        out.extend(parse_conversation(conv, ledger, str(i)))
    return Parsed(out, ledger, replace(inp.context, format=SOURCE_KIND))


def parse_document(data: bytes, name: str = "") -> list[Exchange]:
    """The exchanges of a Claude.ai export file (``parse`` with a fresh context)."""
    return parse(Input(name=name, data=data, context=CursorContext(format=SOURCE_KIND))).exchanges


def detect(probe: Probe) -> bool:
    """A JSON array of (or one) conversation objects with ``chat_messages``; sniffed in a cut head."""
    doc = probe.document
    if isinstance(doc, dict):
        return isinstance(doc.get("chat_messages"), list)
    if isinstance(doc, list):
        return any(isinstance(c, dict) and isinstance(c.get("chat_messages"), list) for c in doc[:20])
    return probe.text.startswith(("{", "[")) and re.search(r'"chat_messages"\s*:\s*\[', probe.text) is not None


FORMAT = Format(SOURCE_KIND, "document", detect, parse, suffixes=(".json",),
                summary="Claude.ai data exports (conversations.json, conversations-NNNN.json)")
