"""ChatGPT data export (``conversations.json``), SCHEMAS.md section 3.

The file is a JSON array of conversations; each holds a ``mapping`` tree of message nodes. Only the visible
branch is read (``current_node`` up to the root, reversed); regenerations and edited prompts on other branches
are dropped, never interleaved. One exchange per human prompt: the prompt and everything up to the next one.

- session_id is the conversation id, title its title, position the turn index within the conversation and
  key the id of the user message node (stable across exports).
- Hidden and non-human nodes are not prompts: system messages, ``user_editable_context`` (custom
  instructions), nodes flagged ``is_visually_hidden_from_conversation``. Reasoning (``thoughts``,
  ``reasoning_recap``) is dropped.
- An assistant message addressed to a tool (``recipient`` other than ``all``: browser, python, a plugin
  operation) becomes ``[tool: recipient] arg``; the tool's reply becomes ``  -> short result``.
- Image, audio and other asset parts are named (``[image]``) rather than dropped, and so are uploaded files
  (``metadata.attachments``: ``[attachment: name]``): a prompt that is only an upload is still a prompt, and
  its answer is kept.
- When ``current_node`` is missing or dangling, the newest leaf is taken as the visible end.

Every node of every mapping is accounted for in the ledger (``<conversation index>/<node id>``): stored,
folded (tool traffic) or skipped (root, hidden, other branch, reasoning...).
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from mempald.normalize.common import MAX_ARG as _MAX_ARG
from mempald.normalize.common import MAX_RESULT as _MAX_RESULT
from mempald.normalize.common import conversation_array
from mempald.normalize.common import one_line as _one_line
from mempald.normalize.format import Format, Input, Parsed, Probe
from mempald.normalize.ledger import Ledger
from mempald.normalize.model import CursorContext, Exchange, strip_injected

SOURCE_KIND = "chatgpt"
AGENT = "chatgpt"

_SKIP_CONTENT = frozenset({"user_editable_context", "model_editable_context", "thoughts", "reasoning_recap"})


def iso_from_epoch(value: Any) -> str | None:
    """``2023-06-09T08:10:04.422605+00:00`` from epoch seconds; None if absent or out of range."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return datetime.fromtimestamp(value, UTC).isoformat()
    except (OverflowError, OSError, ValueError):
        return None


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return ""
    ctype = part.get("content_type")
    if isinstance(part.get("text"), str):  # audio_transcription and friends carry their text
        return str(part["text"])
    if ctype == "image_asset_pointer":
        return "[image]"
    if isinstance(ctype, str) and "audio" in ctype:
        return "[audio]"
    if isinstance(ctype, str) and ctype:
        return f"[{ctype}]"
    return ""


def content_text(content: Any) -> str:
    """Readable text of a message ``content`` for any content type (empty when there is none)."""
    if not isinstance(content, dict):
        return ""
    ctype = content.get("content_type")
    if isinstance(ctype, str) and ctype in _SKIP_CONTENT:
        return ""
    parts = content.get("parts")
    if isinstance(parts, list):
        return "\n".join(t for t in (_part_text(p) for p in parts) if t)
    if ctype == "tether_quote":
        bits = [content.get("title"), content.get("url"), content.get("text")]
        return "\n".join(b for b in bits if isinstance(b, str) and b)
    if ctype == "system_error":
        bits = [content.get("name"), content.get("text")]
        return ": ".join(b for b in bits if isinstance(b, str) and b)
    for key in ("text", "result", "summary", "content"):
        val = content.get(key)
        if isinstance(val, str) and val:
            return val
    return ""


def attachments(meta: dict[str, Any]) -> list[str]:
    """``[attachment: name]`` lines for the files uploaded with a message."""
    items = meta.get("attachments")
    out: list[str] = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict):
            name = item.get("name") if isinstance(item.get("name"), str) else ""
            line = f"[attachment: {name or 'unnamed'}]"
            if line not in out:
                out.append(line)
    return out


def _visible_path(mapping: dict[str, Any], current: Any) -> list[dict[str, Any]]:
    """Message dicts on the visible branch, root first."""
    end = current if isinstance(current, str) and current in mapping else _newest_leaf(mapping)
    path: list[dict[str, Any]] = []
    seen: set[str] = set()
    node_id = end
    while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
        seen.add(node_id)
        node = mapping[node_id]
        if not isinstance(node, dict):
            break
        msg = node.get("message")
        if isinstance(msg, dict):
            path.append({**msg, "_node_id": node_id})
        node_id = node.get("parent")
    path.reverse()
    return path


def _newest_leaf(mapping: dict[str, Any]) -> str | None:
    best: tuple[float, int] | None = None
    best_id: str | None = None
    for i, (node_id, node) in enumerate(mapping.items()):
        if not isinstance(node, dict) or node.get("children"):
            continue
        msg = node.get("message")
        created = msg.get("create_time") if isinstance(msg, dict) else None
        ts = float(created) if isinstance(created, int | float) and not isinstance(created, bool) else 0.0
        rank = (ts, i)
        if best is None or rank >= best:
            best, best_id = rank, node_id
    return best_id


def _tool_arg(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return _one_line(" ".join(lines) if lines else text, _MAX_ARG)


def parse_conversation(conv: dict[str, Any], ledger: Ledger | None = None, where: str = "") -> list[Exchange]:
    """Exchanges of one conversation object (empty if it has no usable mapping); every node accounted for in
    ``ledger`` as ``<where>/<node id>``."""
    ledger = ledger if ledger is not None else Ledger()
    mapping = conv.get("mapping")
    if not isinstance(mapping, dict):
        ledger.skipped(where or "conversation", "no mapping")
        return []
    conv_id = conv.get("id") or conv.get("conversation_id")
    session_id = conv_id if isinstance(conv_id, str) else ""
    title = conv.get("title") if isinstance(conv.get("title"), str) else None
    out: list[Exchange] = []
    turn: dict[str, Any] | None = None
    orphan = "answer before any prompt"

    def ref(node_id: str) -> str:
        return f"{where}/{node_id}" if where else node_id

    def close() -> None:
        nonlocal turn
        if turn is None:
            return
        extra = (("model", turn["model"]),) if turn["model"] else ()
        out.append(Exchange(
            source_kind=SOURCE_KIND, session_id=session_id, key=turn["key"], user=turn["user"],
            assistant="\n".join(turn["reply"]).strip(), timestamp=turn["ts"], agent=AGENT, title=title,
            position=len(out), kind="exchange", tools=tuple(turn["tools"]), extra=extra,
        ))
        turn = None

    visible = _visible_path(mapping, conv.get("current_node"))
    on_path = {m["_node_id"] for m in visible}
    for node_id, node in mapping.items():
        if node_id in on_path:
            continue
        has_msg = isinstance(node, dict) and isinstance(node.get("message"), dict)
        ledger.skipped(ref(str(node_id)), "other branch" if has_msg else "root node")
    for msg in visible:
        r = ref(msg["_node_id"])
        author = msg.get("author")
        role = author.get("role") if isinstance(author, dict) else None
        name = author.get("name") if isinstance(author, dict) else None
        content = msg.get("content")
        raw_meta = msg.get("metadata")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        if meta.get("is_visually_hidden_from_conversation"):
            ledger.skipped(r, "hidden")
            continue
        raw_ctype = content.get("content_type") if isinstance(content, dict) else None
        ctype = raw_ctype if isinstance(raw_ctype, str) else None
        text = content_text(content)
        if role == "user":
            if ctype in _SKIP_CONTENT:
                ledger.skipped(r, "custom instructions" if ctype == "user_editable_context" else str(ctype))
                continue
            user = "\n".join(b for b in [strip_injected(text).strip(), *attachments(meta)] if b)
            close()  # a prompt that was only injected context: its answer is dropped with it
            if not user:
                orphan = "answer to injected context"
                ledger.skipped(r, "injected context" if text.strip() else "empty")
                continue
            ts = iso_from_epoch(msg.get("create_time")) or iso_from_epoch(conv.get("create_time"))
            turn = {"key": str(msg.get("id") or msg["_node_id"]), "user": user, "reply": [], "tools": [],
                    "ts": ts, "model": ""}
            ledger.stored(r, turn["key"], "prompt")
            continue
        if turn is None or not text.strip():
            ledger.skipped(r, f"{role or 'unknown'} message" if turn is not None else
                           orphan if role in ("assistant", "tool") else f"{role or 'unknown'} message")
            continue
        if role == "assistant":
            slug = meta.get("model_slug")
            if isinstance(slug, str) and slug and not turn["model"]:
                turn["model"] = slug
            recipient = msg.get("recipient")
            if isinstance(recipient, str) and recipient not in ("all", ""):
                turn["tools"].append(recipient)
                turn["reply"].append(f"[tool: {recipient}] {_tool_arg(text)}".rstrip())
                ledger.folded(r, turn["key"], "tool call")
            else:
                turn["reply"].append(strip_injected(text).strip())
                ledger.stored(r, turn["key"], "answer")
        elif role == "tool":
            prefix = "  -> error: " if ctype == "system_error" else "  -> "
            label = f"{name}: " if isinstance(name, str) and name and ctype != "system_error" else ""
            turn["reply"].append(prefix + _one_line(label + text, _MAX_RESULT))
            ledger.folded(r, turn["key"], "tool result")
        else:
            ledger.skipped(r, f"{role or 'unknown'} message")
    close()
    return out


def parse(inp: Input) -> Parsed:
    """Every conversation in a ``conversations.json`` export (a list, or one conversation object).

    Raises NormalizeError only when the bytes are not a ChatGPT export at all.
    """
    convs = conversation_array(inp.data, inp.name, label="ChatGPT", marker="mapping", marker_type=dict)
    ledger = Ledger()
    out: list[Exchange] = []
    for i, conv in enumerate(convs):
        out.extend(parse_conversation(conv, ledger, str(i)))
    return Parsed(out, ledger, replace(inp.context, format=SOURCE_KIND))


def detect(probe: Probe) -> bool:
    """A JSON array of (or one) conversation objects with a ``mapping``; sniffed in a cut head."""
    doc = probe.document
    if isinstance(doc, dict):
        return isinstance(doc.get("mapping"), dict) or (
            isinstance(doc.get("conversations"), list) and any(
                isinstance(c, dict) and isinstance(c.get("mapping"), dict) for c in doc["conversations"][:20]))
    if isinstance(doc, list):
        return any(isinstance(c, dict) and isinstance(c.get("mapping"), dict) for c in doc[:20])
    text = probe.text
    mapping = re.search(r'"mapping"\s*:\s*\{', text)
    chat = re.search(r'"chat_messages"\s*:\s*\[', text)
    if mapping is None or (chat is not None and chat.start() < mapping.start()):
        return False
    return any(k in text for k in ('"current_node"', '"content_type"', '"author"'))


def parse_document(data: bytes, name: str = "") -> list[Exchange]:
    """The exchanges of a ChatGPT export (``parse`` with a fresh context)."""
    return parse(Input(name=name, data=data, context=CursorContext(format=SOURCE_KIND))).exchanges


FORMAT = Format(SOURCE_KIND, "document", detect, parse, suffixes=(".json",),
                summary="ChatGPT data exports (conversations.json)")
