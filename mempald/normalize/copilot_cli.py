"""The GitHub Copilot CLI's sessions (``~/.copilot/session-state/<id>/events.jsonl``, older releases
``~/.copilot/session-state/<id>.jsonl``), read whole when they change like Gemini's JSONL chats (a ``document``
format; exchange ids are the ``user.message`` events' own ids, so a re-read stores only new exchanges).

Each line is an event ``{type, id, timestamp, parentId, data}``: ``session.start`` (``sessionId``,
``copilotVersion``, ``context.cwd`` / ``context.branch``: the session's project), ``user.message`` (``content``,
the prompt as typed; ``transformedContent`` is what the CLI sent and is never the prompt; ``attachments``
recorded as such), ``assistant.message`` (``content``, ``toolRequests``), ``tool.execution_start`` /
``tool.execution_complete`` (``[tool: name] arg`` and ``  -> result``), ``assistant.reasoning`` (dropped), the
streaming ``*_delta`` events (the whole message follows them: dropped), and session bookkeeping
(``session.info``, ``session.model_change``, ``assistant.turn_start``...: skipped, named). Releases before
``events.jsonl`` kept one JSON object a session in ``~/.copilot/history-session-state/`` (``chatMessages`` in
the OpenAI shape, ``tool_calls`` summarised, ``tool`` results folded): read too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any

from mempald.normalize.common import MAX_ARG, MAX_RESULT, add_unique, as_str, one_line, touched_path
from mempald.normalize.format import Format, Input, Parsed, Place, Probe, loads
from mempald.normalize.ledger import Ledger
from mempald.normalize.model import CursorContext, Exchange, NormalizeError, strip_injected

SOURCE_KIND = "copilot_cli"
AGENT = "copilot"
_ARG_KEYS = ("command", "path", "file_path", "pattern", "query", "url", "description")
_FILE_TOOLS = frozenset({"view", "create", "edit", "str_replace", "str_replace_editor", "read_file", "write_file"})


@dataclass
class _Reader:
    sid: str
    ctx: CursorContext
    ledger: Ledger = field(default_factory=Ledger)
    out: list[Exchange] = field(default_factory=list)
    key: str = ""
    user: str = ""
    when: str | None = None
    answer: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    attached: list[str] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)

    def close(self) -> None:
        if self.key and (self.user or self.answer):
            cwd = self.ctx.cwd or None
            extra = (("attachments", "\n".join(self.attached)),) if self.attached else ()
            self.out.append(Exchange(SOURCE_KIND, self.sid, self.key, self.user, "\n\n".join(self.answer),
                                     timestamp=self.when, cwd=cwd, git_branch=self.ctx.git_branch or None,
                                     agent=AGENT, position=len(self.out), tools=tuple(self.tools),
                                     files=tuple(self.files), extra=extra, project=cwd))
        self.key, self.user, self.when, self.answer, self.tools, self.files, self.attached = (
            "", "", None, [], [], [], [])

    def event(self, ref: int, etype: str, eid: str, ts: str | None, data: dict[str, Any]) -> None:
        if etype == "session.start":
            context = data.get("context") if isinstance(data.get("context"), dict) else {}
            assert isinstance(context, dict)
            self.sid = as_str(data.get("sessionId")) or self.sid
            self.ctx = replace(self.ctx, session_id=self.sid, cwd=self.ctx.cwd or as_str(context.get("cwd")),
                               git_branch=self.ctx.git_branch or as_str(context.get("branch")))
            self.ledger.folded(ref, "", "session start")
        elif etype == "user.message":
            self.close()
            self.key, self.when = eid or f"line@{ref}", ts
            self.user = strip_injected(as_str(data.get("content"))).strip()
            for att in data.get("attachments") or [] if isinstance(data.get("attachments"), list) else []:
                if isinstance(att, dict):
                    add_unique(self.attached, as_str(att.get("path")) or as_str(att.get("displayName")) or None)
            self.ledger.stored(ref, self.key)
        elif etype == "assistant.message":
            self._open(eid or f"line@{ref}", ts)
            text = strip_injected(as_str(data.get("content"))).strip()
            if text:
                self.answer.append(text)
                self.ledger.stored(ref, self.key)
            else:
                self.ledger.folded(ref, self.key, "tool request")
        elif etype == "tool.execution_start":
            self._open(eid or f"line@{ref}", ts)
            name = as_str(data.get("toolName")) or "tool"
            args = data.get("arguments")
            args = loads(args) if isinstance(args, str) else args
            args = args if isinstance(args, dict) else {}
            arg = next((args[k] for k in _ARG_KEYS if isinstance(args.get(k), str) and args[k].strip()), "")
            self.answer.append(f"[tool: {name}] {one_line(arg, MAX_ARG)}".rstrip())
            self.names[as_str(data.get("toolCallId"))] = name
            add_unique(self.tools, name)
            if name in _FILE_TOOLS:
                add_unique(self.files, touched_path(args.get("path") or args.get("file_path"), self.ctx.cwd))
            self.ledger.folded(ref, self.key, "tool call")
        elif etype == "tool.execution_complete":
            result = data.get("result")
            text = as_str(result.get("content")) if isinstance(result, dict) else as_str(result)
            if self.key and (text.strip() or data.get("success") is False):
                status = "" if data.get("success") is not False else "error: "
                self.answer.append(f"  -> {status}{one_line(text, MAX_RESULT)}".rstrip())
            if self.key:
                self.ledger.folded(ref, self.key, "tool result")
            else:
                self.ledger.skipped(ref, "a tool result before any prompt")
        elif etype.endswith("_delta") or etype == "assistant.reasoning":
            self.ledger.skipped(ref, "streaming delta" if etype.endswith("_delta") else "reasoning")
        else:
            self.ledger.skipped(ref, f"session event {etype}" if etype else "no event type")

    def _open(self, key: str, ts: str | None) -> None:
        if not self.key:
            self.key, self.when = key, ts  # an answer before any prompt (a resumed session): kept


def _legacy(root: dict[str, Any], reader: _Reader) -> None:
    """A session of releases before ``events.jsonl`` (``~/.copilot/history-session-state/<id>.json``):
    ``{sessionId, startTime, chatMessages: [{role: user|assistant|tool, content, tool_calls?}]}``."""
    reader.sid = as_str(root.get("sessionId")) or reader.sid
    reader.ctx = replace(reader.ctx, session_id=reader.sid)
    when = as_str(root.get("startTime")) or None
    for n, msg in enumerate(root["chatMessages"]):
        ref = f"chatMessages[{n}]"
        role = as_str(msg.get("role")) if isinstance(msg, dict) else ""
        if role == "user":
            reader.close()
            reader.key, reader.when = f"{reader.sid}:{n}", when
            reader.user = strip_injected(as_str(msg.get("content"))).strip()
            reader.ledger.stored(ref, reader.key)
        elif role == "assistant":
            reader._open(f"{reader.sid}:{n}", when)
            text = strip_injected(as_str(msg.get("content"))).strip()
            calls = msg.get("tool_calls") if isinstance(msg.get("tool_calls"), list) else []
            for call in calls:
                fn = call.get("function") if isinstance(call, dict) else None
                if isinstance(fn, dict):
                    args = loads(as_str(fn.get("arguments")))
                    args = args if isinstance(args, dict) else {}
                    arg = next((args[k] for k in _ARG_KEYS if isinstance(args.get(k), str) and args[k].strip()), "")
                    name = as_str(fn.get("name")) or "tool"
                    add_unique(reader.tools, name)
                    text = (text + "\n\n" if text else "") + f"[tool: {name}] {one_line(arg, MAX_ARG)}".rstrip()
            if text:
                reader.answer.append(text)
                reader.ledger.stored(ref, reader.key)
            else:
                reader.ledger.skipped(ref, "empty message")
        elif role == "tool" and reader.key:
            reader.answer.append("  -> " + one_line(as_str(msg.get("content")), MAX_RESULT))
            reader.ledger.folded(ref, reader.key, "tool result")
        else:
            reader.ledger.skipped(ref, f"message of role {role!r}" if role else "not a message")


def parse(inp: Input) -> Parsed:
    stem = PurePosixPath(inp.name.replace("\\", "/"))
    sid = inp.context.session_id or (stem.parent.name if stem.name == "events.jsonl" else stem.stem)
    reader = _Reader(sid, replace(inp.context, format=SOURCE_KIND))
    root = loads(inp.data) if inp.data.lstrip().startswith(b"{") and b"chatMessages" in inp.data[:1 << 20] else None
    if isinstance(root, dict) and isinstance(root.get("chatMessages"), list):
        _legacy(root, reader)
        reader.close()
        return Parsed(reader.out, reader.ledger, reader.ctx)
    seen = False
    offset = 0
    for raw in inp.data.split(b"\n"):
        ref = offset
        offset += len(raw) + 1
        if not raw.strip():
            continue
        rec = loads(raw)
        if not isinstance(rec, dict) or not isinstance(rec.get("data", {}), dict):
            reader.ledger.skipped(ref, "not a Copilot CLI event")
            continue
        seen = seen or isinstance(rec.get("type"), str)
        reader.event(ref, as_str(rec.get("type")), as_str(rec.get("id")), as_str(rec.get("timestamp")) or None,
                     rec.get("data") or {})
    if not seen:
        raise NormalizeError(f"{inp.name or 'document'}: not a Copilot CLI session")
    reader.close()
    return Parsed(reader.out, reader.ledger, replace(reader.ctx, session_id=reader.sid))


def detect(probe: Probe) -> bool:
    """JSONL whose first event is ``session.start`` with ``data.copilotVersion`` or ``producer``; a legacy session
    object (``sessionId`` and ``chatMessages``)."""
    doc = probe.document
    if isinstance(doc, dict):
        return isinstance(doc.get("chatMessages"), list) and "sessionId" in doc
    first = probe.records[0] if probe.records else None
    if first is not None:
        data = first.get("data")
        return first.get("type") == "session.start" and isinstance(data, dict) and (
            "copilotVersion" in data or "producer" in data)
    return re.match(r'\{\s*"type"\s*:\s*"session\.start"', probe.text) is not None and "copilot" in probe.text[:4096]


_ROOTS = ("~/.copilot/session-state", "~/.copilot/history-session-state")
PLACES = (Place("GitHub Copilot CLI", linux=_ROOTS, macos=_ROOTS,
                windows=("%USERPROFILE%/.copilot/session-state", "%USERPROFILE%/.copilot/history-session-state"),
                globs=("*/events.jsonl", "*.jsonl", "*.json")),)

FORMAT = Format(SOURCE_KIND, "document", detect, parse, suffixes=(".jsonl", ".json"),
                summary="GitHub Copilot CLI sessions (~/.copilot/session-state)", places=PLACES, ids="message",
                agent=AGENT)
