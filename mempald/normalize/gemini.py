"""Gemini CLI chats (``~/.gemini/tmp/<project>/chats/``), SCHEMAS.md section 6.1, in their three shapes:

- a session file ``session-*.json``: one object ``{sessionId, projectHash, startTime, lastUpdated, messages[],
  summary?}``, rewritten whole on every update;
- a session file ``session-*.jsonl`` (Gemini CLI 0.45+): a header line ``{sessionId, projectHash, startTime,
  lastUpdated, kind}``, then message records ``{id, timestamp, type, content, ...}`` (a message written again
  replaces its earlier copy in place), ``{"$set": {"messages": [...]}}`` (the whole list replaced),
  ``{"$set": {"lastUpdated"}}`` heartbeats and ``{"$rewindTo": id}`` (that message and every later one gone);
- a ``/chat save`` checkpoint ``checkpoint-<tag>.json``: ``{history: [{role: user|model, parts[]}], authType?}``
  (current releases), a bare array of those before.

All three are read whole (the reader re-reads the file when it changes); keys do not depend on byte offsets:
a message's id, or ``<session>:<index>`` where there is none.

One exchange per prompt: the prompt plus the model messages after it, up to the next prompt. A ``user``
message that carries only ``functionResponse`` parts is a tool result (folded into the exchange, never a
prompt); the ``<session_context>`` preamble and the checkpoint's "This is the Gemini CLI. We are setting up the
context" are injected context (the working directory they name becomes the session's cwd), and so are the
"User has manually exited Plan Mode" / "Plan approved" notices and IDE context summaries. Tool calls become
``[tool: name] arg`` with ``  -> result`` (``cancelled``, ``error: ...``); ``info``/``error``/``warning``
messages become ``[info] ...`` lines; thoughts are dropped. A model turn before any prompt (a session that opens
with one) is kept as an exchange with no prompt, its tool calls included.

A sub-agent's chat (header ``kind: "subagent"``, in ``chats/<parent session id>/``) holds no prompt: its first
user message is the task its parent gave it, and later user messages are the harness's nudges ("You have
exceeded the maximum number of turns..."). It is one exchange of kind ``subagent`` (agent ``gemini/subagent``,
the task opening its text, the nudges folded in), linked to the parent exchange the ingest finds for it.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from mempald.normalize.common import MAX_ARG as _MAX_ARG
from mempald.normalize.common import MAX_RESULT as _MAX_RESULT
from mempald.normalize.common import add_unique, touched_path
from mempald.normalize.common import as_str as _s
from mempald.normalize.common import one_line as _one_line
from mempald.normalize.format import Format, Input, Parsed, Place, Probe, loads
from mempald.normalize.gemini_beside import beside
from mempald.normalize.gemini_log import Message, checkpoint_messages, jsonl_messages, session_messages
from mempald.normalize.ledger import Ledger
from mempald.normalize.model import CursorContext, Exchange, NormalizeError, strip_injected

SOURCE_KIND = "gemini"
AGENT = "gemini"
FILE_TOOLS = frozenset({"read_file", "write_file", "replace", "edit", "read_many_files"})
_ARG_KEYS = ("command", "file_path", "absolute_path", "path", "dir_path", "pattern", "query", "url", "prompt",
             "question", "description")
_CONTEXT_PREFIXES = ("<session_context>", "This is the Gemini CLI. We are setting up the context")
_NOTICES = ("User has manually exited Plan Mode", "Plan approved. Switching to",
            "Here is a summary of changes in the user's editor context")
_CWD = (re.compile(r"I'm currently working in the directory: (\S.*?)\s*$", re.M),
        re.compile(r"\*\*Workspace Directories:\*\*\s*\n\s*-\s*(\S.*?)\s*$", re.M))


def content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return _s(content.get("text"))
    if isinstance(content, list):
        parts = [p if isinstance(p, str) else _s(p.get("text")) if isinstance(p, dict) else "" for p in content]
        return "\n".join(p for p in parts if p)
    return ""


def _parts(content: Any) -> list[dict[str, Any]]:
    return [p for p in content if isinstance(p, dict)] if isinstance(content, list) else []


def _arg(args: Any) -> str:
    if isinstance(args, dict):
        for key in _ARG_KEYS:
            val = args.get(key)
            if isinstance(val, str) and val.strip():
                return val
    return ""


def _response_text(resp: Any) -> str:
    if isinstance(resp, dict):
        for key in ("output", "error", "content"):
            val = resp.get(key)
            if isinstance(val, str) and val.strip():
                return val
    return ""


def _tool_lines(call: dict[str, Any]) -> tuple[str, list[str]]:
    name = _s(call.get("name")) or _s(call.get("displayName")) or "tool"
    lines = [f"[tool: {name}] {_one_line(_arg(call.get('args')), _MAX_ARG)}".rstrip()]
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
            text = _response_text(fr.get("response")) if isinstance(fr, dict) else ""
            if text:
                return text
    return ""


def _session_cwd(text: str) -> str:
    for rx in _CWD:
        m = rx.search(text)
        if m:
            return m.group(1).strip()
    return ""


SUBAGENT = "subagent"


class _Reader:
    def __init__(self, session_id: str, title: str | None, ctx: CursorContext, kind: str = "") -> None:
        self.subagent = kind == SUBAGENT
        self.session_id = session_id
        self.title = title
        self.ctx = ctx
        self.out: list[Exchange] = []
        self.ledger = Ledger()
        self.turn: dict[str, Any] | None = None
        self.orphan = "answer before any prompt"

    def close(self) -> None:
        turn = self.turn
        if turn is None:
            return
        self.turn = None
        extra = (("model", turn["model"]),) if turn["model"] else ()
        self.out.append(Exchange(
            source_kind=SOURCE_KIND, session_id=self.session_id, key=turn["key"], user=turn["user"],
            assistant="\n".join(turn["reply"]).strip(), timestamp=turn["ts"], agent=AGENT, title=self.title,
            position=self.ctx.position + len(self.out), tools=tuple(turn["tools"]), extra=extra,
            files=tuple(turn["files"]), cwd=self.ctx.cwd or None, project=self.ctx.cwd or None,
            kind=SUBAGENT if self.subagent else "exchange", parent=self.ctx.parent if self.subagent else "",
        ))
        if self.subagent:
            self.out[-1] = replace(self.out[-1], agent=f"{AGENT}/{SUBAGENT}")

    def start(self, key: str, user: str, ts: Any, reply: list[str] | None = None) -> dict[str, Any]:
        self.turn = {"key": key, "user": user, "reply": reply or [], "tools": [], "files": [], "model": "",
                     "ts": _s(ts) or None}
        return self.turn

    def message(self, m: Message, msg: dict[str, Any]) -> None:
        mtype = msg.get("type")
        if mtype is None and msg.get("role") in ("user", "model"):
            mtype = "user" if msg["role"] == "user" else "gemini"
        content = msg.get("content", msg.get("parts"))
        text = content_text(content)
        parts = _parts(content)
        if mtype == "user":
            responses = [p["functionResponse"] for p in parts if isinstance(p.get("functionResponse"), dict)]
            if responses and not text.strip():
                self.tool_responses(m, responses)
                return
            self.user(m, msg, text)
            return
        if self.turn is None and mtype in ("gemini", "model", "assistant") and \
                self.orphan == "answer before any prompt" and (text.strip() or msg.get("toolCalls") or any(
                    isinstance(p.get("functionCall"), dict) for p in parts)):
            # a chat that opens with a model turn: kept with no prompt, tool calls and all
            self.start(_s(msg.get("id")) or f"{self.session_id}:{m.index}", "", msg.get("timestamp"))
        if self.turn is None:
            self.ledger.skipped(m.ref, self.orphan if mtype in ("gemini", "model", "assistant") else
                                f"{mtype or 'untyped'} message before any prompt")
            return
        turn = self.turn
        if mtype in ("gemini", "model", "assistant"):
            said = bool(text.strip())
            if said:
                turn["reply"].append(strip_injected(text).strip())
            model = msg.get("model")
            if isinstance(model, str) and model and not turn["model"]:
                turn["model"] = model
            calls = [c for c in msg.get("toolCalls") or [] if isinstance(c, dict)] if isinstance(
                msg.get("toolCalls"), list) else []
            calls += [{"name": p["functionCall"].get("name"), "args": p["functionCall"].get("args")}
                      for p in parts if isinstance(p.get("functionCall"), dict)]
            for call in calls:
                tool, lines = _tool_lines(call)
                turn["tools"].append(tool)
                turn["reply"].extend(lines)
                for f in call_files(call):
                    add_unique(turn["files"], f)
            if said:
                self.ledger.stored(m.ref, turn["key"], "answer")
            elif calls:
                self.ledger.folded(m.ref, turn["key"], "tool call")
            else:
                self.ledger.skipped(m.ref, "thoughts only" if msg.get("thoughts") else "empty")
        elif mtype in ("info", "error", "warning") and text.strip():
            turn["reply"].append(f"[{mtype}] {_one_line(text, _MAX_RESULT)}")
            self.ledger.folded(m.ref, turn["key"], f"{mtype} message")
        else:
            self.ledger.skipped(m.ref, f"{mtype or 'untyped'} message" if text.strip() else "empty")

    def tool_responses(self, m: Message, responses: list[dict[str, Any]]) -> None:
        if self.turn is None:
            self.ledger.skipped(m.ref, "tool result before any prompt")
            return
        for fr in responses:
            result = _response_text(fr.get("response"))
            if result:
                err = isinstance(fr.get("response"), dict) and "error" in fr["response"]
                self.turn["reply"].append(("  -> error: " if err else "  -> ") + _one_line(result, _MAX_RESULT))
        self.ledger.folded(m.ref, self.turn["key"], "tool result")

    def user(self, m: Message, msg: dict[str, Any], text: str) -> None:
        stripped = text.strip()
        if stripped.startswith(_CONTEXT_PREFIXES):
            self.close()
            cwd = _session_cwd(stripped)
            if cwd and not self.ctx.cwd:
                self.ctx = replace(self.ctx, cwd=cwd)
            self.orphan = "answer to injected context"
            self.ledger.skipped(m.ref, "session context")
            return
        if stripped.startswith(_NOTICES):
            self.ledger.skipped(m.ref, "mode notice" if not stripped.startswith("Here is") else "IDE context")
            return
        user = strip_injected(text).strip()
        if self.subagent and user:
            if self.turn is None:  # the task the parent gave: the sub-agent's work opens with it, never a prompt
                key = _s(msg.get("id")) or f"{self.session_id}:{m.index}"
                self.start(key, "", msg.get("timestamp"), [f"[sub-agent task] {user}"])
                self.ledger.stored(m.ref, key, "sub-agent task")
            else:  # the harness's nudge ("You have exceeded the maximum number of turns..."): not the user's
                self.turn["reply"].append(f"[sub-agent nudge] {_one_line(user, _MAX_RESULT)}")
                self.ledger.folded(m.ref, self.turn["key"], "sub-agent nudge")
            return
        self.close()  # a prompt that was only injected context: its answer is dropped with it
        if not user:
            self.orphan = "answer to injected context"
            self.ledger.skipped(m.ref, "injected context" if stripped else "empty")
            return
        key = _s(msg.get("id")) or f"{self.session_id}:{m.index}"
        self.start(key, user, msg.get("timestamp"))
        self.ledger.stored(m.ref, key, "prompt")


def parse(inp: Input) -> Parsed:
    """Exchanges of one Gemini CLI chat file (any shape). NormalizeError if it is none of them."""
    name = inp.name.replace("\\", "/").rsplit("/", 1)[-1]
    stem = name.rsplit(".", 1)[0] if name else ""
    root = loads(inp.data)
    ledger = Ledger()
    kind = ""
    if isinstance(root, dict) and isinstance(root.get("messages"), list):
        kind = _s(root.get("kind"))
        sid = root.get("sessionId")
        session_id = sid if isinstance(sid, str) else stem
        title = _s(root.get("summary")).strip() or None
        messages = session_messages(root["messages"])
    elif (history := _history(root)) is not None:
        session_id, title = inp.context.session_id or stem, None
        messages = checkpoint_messages(*history)
    elif root is None:
        log = jsonl_messages(inp.data, ledger)
        if log is None and _cut(inp.data):  # the CLI is writing it: nothing read now, all of it once it changes
            ledger.skipped("document", "incomplete JSON (cut while being written)")
            return Parsed([], ledger, replace(inp.context, format=SOURCE_KIND))
        if log is None:
            raise NormalizeError(f"{inp.name or 'document'}: not a Gemini CLI chat")
        session_id, messages, kind = log.session_id or stem, log.messages, log.kind
        title = None
    else:
        raise NormalizeError(f"{inp.name or 'document'}: not a Gemini CLI session (no 'messages' list)")
    reader = _Reader(session_id, title, replace(inp.context, format=SOURCE_KIND, session_id=session_id), kind)
    reader.ledger = ledger
    for m in messages:
        if m.body is None:
            reader.ledger.skipped(m.ref, "not an object")
        else:
            reader.message(m, m.body)
    reader.close()
    return Parsed(reader.out, reader.ledger, reader.ctx)


_CHECKPOINT_HEAD = re.compile(r'(?:\{\s*"history"\s*:\s*)?\[\s*\{\s*"role"\s*:\s*"(?:user|model)"')


def _history(root: Any) -> tuple[list[Any], str] | None:
    """A checkpoint's messages and where they are (``history`` of the object, or the bare legacy array)."""
    items, at = (root.get("history"), "history") if isinstance(root, dict) and "sessionId" not in root else (root, "")
    if isinstance(items, list) and items and all(isinstance(c, dict) and "role" in c and "parts" in c for c in items):
        return items, at
    return None


def _cut(data: bytes) -> bool:
    """A session object or checkpoint whose end is missing (Gemini CLI rewrites the file in place)."""
    head = data[:4096].decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    return (head.startswith("{") and '"sessionId"' in head and '"projectHash"' in head) or \
        _CHECKPOINT_HEAD.match(head) is not None


def parse_document(data: bytes, name: str = "") -> list[Exchange]:
    """The exchanges of one Gemini CLI chat file (``parse`` with a fresh context)."""
    return parse(Input(name=name, data=data, context=CursorContext(format=SOURCE_KIND))).exchanges


def detect(probe: Probe) -> bool:
    """A session object (``sessionId`` + ``projectHash`` + ``messages``), a JSONL chat whose first line is such a
    header, or a checkpoint (``{history: [{role, parts}]}``, or the bare array)."""
    doc = probe.document
    if isinstance(doc, dict) and "sessionId" not in doc and isinstance(doc.get("history"), list):
        return _history(doc) is not None
    if isinstance(doc, dict):
        return "sessionId" in doc and "projectHash" in doc and isinstance(doc.get("messages"), list)
    if isinstance(doc, list):
        return bool(doc) and all(isinstance(c, dict) and c.get("role") in ("user", "model") and
                                 isinstance(c.get("parts"), list) for c in doc[:5])
    first = probe.records[0] if probe.records else None
    if first is not None and "sessionId" in first and "projectHash" in first and "startTime" in first:
        return True
    text = probe.text
    if text.startswith("[") or re.match(r'\{\s*"history"\s*:', text):
        return _CHECKPOINT_HEAD.match(text) is not None and '"parts"' in text[:4096]
    return text.startswith("{") and '"sessionId"' in text[:4096] and '"projectHash"' in text[:4096] and (
        re.search(r'"messages"\s*:\s*\[', text) is not None or '"startTime"' in text[:4096])


# ~/.gemini/tmp/<project>/chats/session-*.json[l] (<project>: the short name ~/.gemini/projects.json gives the
# folder in current releases, sha256 of its path before), a sub-agent's chat one folder deeper, and the /chat save
# checkpoints beside chats/. GEMINI_CLI_HOME (in the daemon's environment) holds .gemini instead of the home;
# sources.skip = ["gemini"] turns it off.
_TMP = "${GEMINI_CLI_HOME:-~}/.gemini/tmp"
PLACES = (Place("Gemini CLI", linux=(_TMP,), macos=(_TMP,), windows=("${GEMINI_CLI_HOME:-%USERPROFILE%}/.gemini/tmp",),
                globs=("*/chats/session-*.json", "*/chats/session-*.jsonl", "*/chats/*/session-*.json",
                       "*/chats/*/session-*.jsonl", "*/checkpoint-*.json")),)

FORMAT = Format(SOURCE_KIND, "document", detect, parse, suffixes=(".json", ".jsonl"), beside=beside, agent=AGENT,
                summary="Gemini CLI chats and /chat save checkpoints (~/.gemini/tmp)", places=PLACES, ids="message")
