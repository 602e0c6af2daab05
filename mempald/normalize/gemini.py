"""Gemini CLI chat files (``~/.gemini/tmp/<projectHash>/chats/session-*.json``), SCHEMAS.md section 6.1.

One JSON object ``{sessionId, projectHash, startTime, lastUpdated, messages[], summary?}``, rewritten whole on
every update, so the reader re-reads the whole file and keys must not depend on byte offsets: the key is the
id of the user message.

One exchange per ``user`` message: the prompt plus the ``gemini`` messages after it. Tool calls become
``[tool: name] arg`` lines with a ``  -> short result`` (or ``  -> cancelled`` / ``  -> error: ...``);
``info``/``error``/``warning`` messages (e.g. "Request cancelled.") become ``[info] ...`` lines; thoughts are
dropped. ``content`` may be a string or a list of parts (``{text}``).
"""

from __future__ import annotations

import json
from typing import Any

from mempald.normalize.common import MAX_ARG as _MAX_ARG
from mempald.normalize.common import MAX_RESULT as _MAX_RESULT
from mempald.normalize.common import add_unique, touched_path
from mempald.normalize.common import as_str as _s
from mempald.normalize.common import one_line as _one_line
from mempald.normalize.model import Exchange, NormalizeError, strip_injected

SOURCE_KIND = "gemini"
AGENT = "gemini"

FILE_TOOLS = frozenset({"read_file", "write_file", "replace", "edit", "read_many_files"})
_ARG_KEYS = ("command", "file_path", "absolute_path", "path", "dir_path", "pattern", "query", "url", "prompt",
             "description")


def content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return _s(content.get("text"))
    if isinstance(content, list):
        parts = [p if isinstance(p, str) else _s(p.get("text")) if isinstance(p, dict) else "" for p in content]
        return "\n".join(p for p in parts if p)
    return ""


def _tool_lines(call: dict[str, Any]) -> tuple[str, list[str]]:
    name = _s(call.get("name")) or _s(call.get("displayName")) or "tool"
    args = call.get("args")
    arg = ""
    if isinstance(args, dict):
        for key in _ARG_KEYS:
            val = args.get(key)
            if isinstance(val, str) and val.strip():
                arg = val
                break
    lines = [f"[tool: {name}] {_one_line(arg, _MAX_ARG)}".rstrip()]
    status = _s(call.get("status"))
    result = _result_text(call)
    if status in ("cancelled", "canceled"):
        lines.append("  -> cancelled")
    elif status == "error":
        lines.append("  -> error: " + _one_line(result, _MAX_RESULT) if result else "  -> error")
    elif result:
        lines.append("  -> " + _one_line(result, _MAX_RESULT))
    return name, lines


def call_files(call: dict[str, Any]) -> list[str]:
    """The files a Gemini file tool (read_file, write_file, replace, edit) names in its arguments."""
    args = call.get("args")
    if _s(call.get("name")) not in FILE_TOOLS or not isinstance(args, dict):
        return []
    out: list[str] = []
    for key in ("file_path", "absolute_path", "path"):
        add_unique(out, touched_path(args.get(key), None))
    paths = args.get("paths")
    for item in paths if isinstance(paths, list) else []:
        add_unique(out, touched_path(item, None))
    return out


def _result_text(call: dict[str, Any]) -> str:
    display = call.get("resultDisplay")
    if isinstance(display, str) and display.strip():
        return display
    result = call.get("result")
    if isinstance(result, list):
        for item in result:
            fr = item.get("functionResponse") if isinstance(item, dict) else None
            resp = fr.get("response") if isinstance(fr, dict) else None
            if isinstance(resp, dict):
                for key in ("output", "error", "content"):
                    val = resp.get(key)
                    if isinstance(val, str) and val.strip():
                        return val
    return ""


def parse_session(doc: dict[str, Any], name: str = "") -> list[Exchange]:
    sid = doc.get("sessionId")
    session_id = sid if isinstance(sid, str) else (name.rsplit(".", 1)[0] if name else "")
    title = _s(doc.get("summary")).strip() or None
    messages = doc.get("messages")
    out: list[Exchange] = []
    turn: dict[str, Any] | None = None

    def close() -> None:
        nonlocal turn
        if turn is None:
            return
        extra = (("model", turn["model"]),) if turn["model"] else ()
        out.append(Exchange(
            source_kind=SOURCE_KIND, session_id=session_id, key=turn["key"], user=turn["user"],
            assistant="\n".join(turn["reply"]).strip(), timestamp=turn["ts"], agent=AGENT, title=title,
            position=len(out), tools=tuple(turn["tools"]), extra=extra, files=tuple(turn["files"]),
        ))
        turn = None

    for i, msg in enumerate(messages if isinstance(messages, list) else []):
        if not isinstance(msg, dict):
            continue
        mtype = msg.get("type")
        text = content_text(msg.get("content"))
        if mtype == "user":
            user = strip_injected(text).strip()
            close()  # a prompt that was only injected context: its answer is dropped with it
            if not user:
                continue
            key = _s(msg.get("id")) or f"{session_id}:{i}"
            turn = {"key": key, "user": user, "reply": [], "tools": [], "ts": _s(msg.get("timestamp")) or None,
                    "model": "", "files": []}
            continue
        if turn is None:
            continue
        if mtype in ("gemini", "model", "assistant"):
            if text.strip():
                turn["reply"].append(strip_injected(text).strip())
            model = msg.get("model")
            if isinstance(model, str) and model and not turn["model"]:
                turn["model"] = model
            calls = msg.get("toolCalls")
            for call in calls if isinstance(calls, list) else []:
                if isinstance(call, dict):
                    tool, lines = _tool_lines(call)
                    turn["tools"].append(tool)
                    turn["reply"].extend(lines)
                    for f in call_files(call):
                        add_unique(turn["files"], f)
        elif mtype in ("info", "error", "warning") and text.strip():
            turn["reply"].append(f"[{mtype}] {_one_line(text, _MAX_RESULT)}")
    close()
    return out


def parse_document(data: bytes, name: str = "") -> list[Exchange]:
    """Exchanges of one Gemini CLI session file. NormalizeError if it is not one at all."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise NormalizeError(f"{name or 'document'}: not JSON ({type(exc).__name__})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        raise NormalizeError(f"{name or 'document'}: not a Gemini CLI session (no 'messages' list)")
    return parse_session(doc, name)
