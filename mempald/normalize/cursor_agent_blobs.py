"""The pieces of a ``cursor-agent`` chat store (pure): its metadata row, its root blob and its message blobs, as
``cursor_agent`` reads them (the store's layout and what was verified where is in that module's docstring).

- ``meta`` key ``"0"``: the metadata JSON, hex-encoded as TEXT (``meta_of``);
- the root blob: protobuf wire format (``root_of``): field 1 repeated, each the raw 32-byte SHA-256 of a message
  blob, in conversation order; field 4 an inline message still being written (provisional); field 9 the
  workspace's ``file://`` URI; any other field is skipped by its wire type;
- a message blob: UTF-8 JSON ``{"role": "system"|"user"|"assistant"|"tool", "content": str | [part...]}``
  (``prompt_of``, ``answer_of``).

A user message's text wraps what the user typed in ``<user_query>``; the context Cursor injects around it
(``<user_info>`` with ``Workspace Path:``, ``<rules>``, ``<attached_files>``, ``<additional_data>``, a git status,
reminders...) is not the prompt: the attached files are kept as attachments, the rest dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from mempald.normalize import cursor_bubbles as cb
from mempald.normalize.common import add_unique, as_str
from mempald.normalize.format import loads
from mempald.normalize.model import strip_injected

DIGEST = 32  # bytes of a SHA-256: a child reference in the root blob
MAX_CHILDREN = 100_000
HEAD = 96  # bytes of a message looked at for its role
_QUERY = re.compile(r"<user_query>\s*(.*?)\s*</user_query>", re.S)
_INJECTED = ("user_info", "rules", "user_rules", "attached_files", "additional_data", "project_layout", "git_status",
             "system_reminder", "system-reminder", "cursor_commands", "custom_instructions", "timestamp",
             "agent_requestable_workspace_rules", "agent_skills", "available_skills", "manually_attached_skills",
             "open_and_recently_viewed_files", "memories", "mcp_instructions", "image_files", "terminal_files")
_BLOCK = re.compile(r"<(" + "|".join(re.escape(t) for t in _INJECTED) + r")\b[^>]*>.*?</\1>", re.S)
_WORKSPACE = re.compile(r"^\s*Workspace Path:\s*(.+?)\s*$", re.M)
_ATTACHED = re.compile(r"<(attached_files|additional_data|manually_added_selection)\b[^>]*>(.*?)</\1>", re.S)
_PATH = re.compile(r"""path=["']?([^,"'\s>]+)|^\s*-\s+(\S[^\n]*?)\s*$""", re.M)


class RootError(ValueError):
    """The root blob is not the protobuf message it should be (truncated, a wrong wire type, a bad digest)."""


@dataclass(frozen=True)
class Root:
    children: tuple[str, ...]  # the message blob ids (hex), in order
    provisional: bool  # a message still being written sits inline in the root
    workspace: str  # the workspace folder the root names ("" when it names none)


def meta_of(value: Any) -> dict[str, Any] | None:
    """The metadata object of ``meta`` key ``"0"`` (hex-encoded JSON; plain JSON is accepted too)."""
    raw: Any = value
    if isinstance(raw, bytes):
        raw = raw.decode("ascii", errors="replace")
    if not isinstance(raw, str) or not raw.strip():
        return None
    text = raw.strip()
    if not text.startswith("{"):
        try:
            text = bytes.fromhex(text).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return None
    data = loads(text)
    return data if isinstance(data, dict) else None


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while pos < len(data) and shift < 70:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
    raise RootError("truncated or overlong varint")


def root_of(data: Any) -> Root:
    """The root blob's children, provisional message and workspace (``RootError`` when it does not decode)."""
    if not isinstance(data, bytes):
        raise RootError(f"not a blob ({type(data).__name__})")
    pos, children, provisional, workspace = 0, [], False, ""
    while pos < len(data):
        key, pos = _varint(data, pos)
        field, wire = key >> 3, key & 7
        if field == 0:
            raise RootError("field number 0")
        if wire == 0:
            _, pos = _varint(data, pos)
        elif wire in {1, 5}:
            pos += 8 if wire == 1 else 4
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise RootError("a length past the end of the blob")
            value, pos = data[pos:pos + size], pos + size
            if field == 1:
                if size != DIGEST:
                    raise RootError(f"a child reference of {size} bytes, not {DIGEST}")
                children.append(value.hex())
                if len(children) > MAX_CHILDREN:
                    raise RootError("too many children")
            elif field == 4:
                provisional = True
            elif field == 9:
                workspace = cb.path_of_uri(value.decode("utf-8", errors="replace"))
        else:
            raise RootError(f"wire type {wire}")
        if pos > len(data):
            raise RootError("a fixed-size field past the end of the blob")
    return Root(tuple(children), provisional, workspace)


def message_of(data: Any) -> dict[str, Any] | None:
    """A message blob's JSON object (None when it is not one)."""
    if not isinstance(data, bytes | str) or data.lstrip()[:1] not in (b"{", "{"):
        return None
    found = loads(data)
    return found if isinstance(found, dict) else None


def may_be_user(head: bytes) -> bool:
    """Could a message starting with these bytes be a user's (its role says so, or is not among them)?"""
    return b'"role":"user"' in head[:HEAD] or b'"role"' not in head[:HEAD]


def text_of(content: Any) -> str:
    """The text parts of a message's content (a string, or ``[{type: "text", text}...]``)."""
    if isinstance(content, str):
        return content
    parts = [as_str(p.get("text")) for p in content if isinstance(p, dict) and p.get("type") in ("text", None)] \
        if isinstance(content, list) else []
    return "\n\n".join(p for p in parts if p)


def workspace_of(text: str) -> str:
    """The ``Workspace Path:`` an injected ``<user_info>`` names ("" when none)."""
    info = re.search(r"<user_info>(.*?)</user_info>", text, re.S)
    found = _WORKSPACE.search(info.group(1)) if info else None
    return found.group(1) if found else ""


def prompt_of(message: dict[str, Any]) -> tuple[str, list[str]]:
    """What the user typed (inside ``<user_query>`` when there is one, else the text without the injected
    blocks) and the files the message attached."""
    text = strip_injected(text_of(message.get("content")))
    attached: list[str] = []
    for _tag, body in _ATTACHED.findall(text):
        for a, b in _PATH.findall(body):
            add_unique(attached, (a or b).strip() or None)
    queries = _QUERY.findall(text)
    typed = "\n\n".join(q for q in queries if q.strip()) if queries else _BLOCK.sub("", text)
    return typed.strip(), attached


def answer_of(message: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]], bool]:
    """An assistant message's answer texts, its tool calls (``{id, name, args}``) and whether it reasoned
    (reasoning is dropped)."""
    content = message.get("content")
    if isinstance(content, str):
        return ([content.strip()] if content.strip() else []), [], False
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    reasoned = False
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        kind = as_str(part.get("type"))
        if kind == "text" and as_str(part.get("text")).strip():
            texts.append(strip_injected(as_str(part["text"])).strip())
        elif kind in ("tool-call", "tool_call"):
            args = part.get("args") if part.get("args") is not None else part.get("input")
            calls.append({"id": as_str(part.get("toolCallId")), "name": as_str(part.get("toolName")) or "tool",
                          "params": args if isinstance(args, dict) else loads(args) if isinstance(args, str) else {}})
        elif kind in ("reasoning", "redacted-reasoning"):
            reasoned = True
    return texts, calls, reasoned


def results_of(message: dict[str, Any]) -> list[tuple[str, Any, bool]]:
    """A tool message's results: (tool call id, result, is error)."""
    content = message.get("content")
    out: list[tuple[str, Any, bool]] = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and part.get("type") in ("tool-result", "tool_result"):
            result = part.get("result", part.get("content"))
            if isinstance(result, list):
                result = text_of(result)
            out.append((as_str(part.get("toolCallId")), result, bool(part.get("isError"))))
    return out
