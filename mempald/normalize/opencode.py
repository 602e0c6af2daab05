"""OpenCode sessions (pure): one session's messages and parts in, exchanges out, whatever OpenCode kept them in.

OpenCode (opencode.ai) keeps a session as a session record (``{id: "ses_...", projectID, directory, parentID?,
title, version, time}``), message records (``{id: "msg_...", sessionID, role: user|assistant, time, ...}``; an
assistant message has ``parentID`` (the prompt it answers), ``modelID``, ``path: {cwd, root}``, ``error?``,
``summary?``) and part records (``{id: "prt_...", messageID, sessionID, type, ...}``). Three formats read them and
share this module, so one exchange has one id whichever way it was read (``source_kind`` ``opencode``, session
id, the prompt's message id): the storage folder of releases before 1.2 (``opencode_storage``), the SQLite
database of current releases (``opencode_db``) and ``opencode export`` documents (``opencode_export``).

One exchange per prompt: a user message's own text parts (``synthetic`` and ``ignored`` ones are OpenCode's
injections: a file's content read for an ``@file``, mode reminders; never the prompt) with its attachments as
``[image: name]`` / ``[file: name]`` lines, and every assistant message after it (or naming it as ``parentID``).
An assistant's text parts are the answer; ``tool`` parts become ``[tool: NAME] arg`` with the result folded
(``  -> output``, ``  -> error: ...``, ``  -> interrupted``); ``reasoning``, ``step-start``, ``step-finish``,
``snapshot``, ``patch``, ``retry`` and ``compaction`` parts are dropped and counted; a part type not known here is
counted (``unknown part type: X``), never a crash. A failed answer adds ``[error] NAME: message``. A compaction's
summary (an assistant message with ``summary: true`` after a user message holding a ``compaction`` part) is an
exchange of kind ``summary`` with no prompt. A sub-agent's session (``parentID`` set: the ``task`` tool started
it) has no prompt of the user's: its user messages are the task its parent agent wrote, kept in the answer as
``[sub-agent task] ...``, and its exchanges are of kind ``subagent`` (agent ``opencode/subagent``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mempald.normalize.common import MAX_ARG, MAX_RESULT, add_unique, as_str, one_line, touched_path
from mempald.normalize.ledger import Ledger, Ref
from mempald.normalize.model import Exchange, strip_injected

SOURCE_KIND = "opencode"
AGENT = "opencode"
SUBAGENT = "subagent"
FILE_TOOLS = frozenset({"read", "edit", "write", "patch", "multiedit", "view"})
_ARG_KEYS = ("command", "filePath", "file_path", "pattern", "url", "query", "path", "description", "prompt", "name")
_DROPPED = {"reasoning": "reasoning", "step-start": "step start", "step-finish": "step finish",
            "snapshot": "snapshot", "patch": "patch record", "retry": "retry", "compaction": "compaction marker"}
_IMAGE = ("image/",)


@dataclass(frozen=True)
class Session:
    id: str
    directory: str = ""  # the folder OpenCode ran in: the wing
    title: str = ""
    parent: str = ""  # a sub-agent's session: the session whose task tool started it


@dataclass
class Message:
    """One message record and its parts, each with the ref it is accounted under."""

    id: str
    ref: Ref
    info: Mapping[str, Any]
    parts: list[tuple[Ref, Mapping[str, Any]]] = field(default_factory=list)

    @property
    def created(self) -> float:
        time = self.info.get("time")
        value = time.get("created") if isinstance(time, Mapping) else None
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def iso_ms(value: Any) -> str | None:
    """An epoch in milliseconds as ISO-8601 UTC (None when it is not one)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        return datetime.fromtimestamp(float(value) / 1000, UTC).isoformat()
    except (OverflowError, OSError, ValueError):
        return None


def session_of(info: Mapping[str, Any], fallback_id: str = "", worktree: str = "") -> Session:
    """A session record's fields (``directory`` falls back to its project's worktree)."""
    directory = as_str(info.get("directory")) or (worktree if worktree not in ("", "/") else "")
    return Session(id=as_str(info.get("id")) or fallback_id, directory=directory, title=as_str(info.get("title")),
                   parent=as_str(info.get("parentID")))


def _arg(tool_input: Any) -> str:
    if isinstance(tool_input, Mapping):
        for key in _ARG_KEYS:
            val = tool_input.get(key)
            if isinstance(val, str) and val.strip():
                return val
    return ""


def _tool_lines(part: Mapping[str, Any]) -> tuple[str, list[str]]:
    name = as_str(part.get("tool")) or "tool"
    raw_state = part.get("state")
    state: Mapping[str, Any] = raw_state if isinstance(raw_state, Mapping) else {}
    arg = _arg(state.get("input")) or as_str(state.get("title"))
    lines = [f"[tool: {name}] {one_line(arg, MAX_ARG)}".rstrip()]
    status = as_str(state.get("status"))
    if status == "completed":
        output = state.get("output")
        if isinstance(output, str) and output.strip():
            lines.append("  -> " + one_line(output, MAX_RESULT))
    elif status == "error":
        error = as_str(state.get("error"))
        lines.append("  -> error: " + one_line(error, MAX_RESULT) if error.strip() else "  -> error")
    elif status in ("pending", "running"):
        lines.append("  -> interrupted")
    return name, lines


def _attachment(part: Mapping[str, Any]) -> str:
    mime = as_str(part.get("mime"))
    src = part.get("source")
    label = as_str(part.get("filename")) or (as_str(src.get("path")) if isinstance(src, Mapping) else "")
    if not label:
        url = as_str(part.get("url"))
        label = url if url and not url.startswith("data:") else "unnamed"
    kind = "image" if mime.startswith(_IMAGE) else "file"
    return f"[{kind}: {one_line(label, MAX_ARG)}]"


def _error_line(error: Any) -> str:
    if not isinstance(error, Mapping):
        return ""
    data = error.get("data")
    message = as_str(data.get("message")) if isinstance(data, Mapping) else ""
    name = as_str(error.get("name")) or "error"
    return f"[error] {name}: {one_line(message, MAX_RESULT)}" if message else f"[error] {name}"


class _Reader:
    def __init__(self, session: Session, ledger: Ledger) -> None:
        self.session = session
        self.ledger = ledger
        self.subagent = bool(session.parent)
        self.out: list[Exchange] = []
        self.turn: dict[str, Any] | None = None
        self.turns: dict[str, dict[str, Any]] = {}  # prompt message id -> its open or closed turn
        self.pending_summary = False

    # -- turns --------------------------------------------------------------------------------------------
    def start(self, key: str, user: str, ts: Any, kind: str = "exchange") -> dict[str, Any]:
        self.turn = {"key": key, "user": user, "reply": [], "tools": [], "files": [], "model": "", "cwd": "",
                     "ts": iso_ms(ts), "kind": kind}
        self.turns[key] = self.turn
        return self.turn

    def finish(self) -> list[Exchange]:
        sess = self.session
        for turn in self.turns.values():
            kind = SUBAGENT if self.subagent and turn["kind"] == "exchange" else turn["kind"]
            extra: list[tuple[str, str]] = [("model", turn["model"])] if turn["model"] else []
            if sess.parent:
                extra.append(("parent_session", sess.parent))
            cwd = turn["cwd"] or sess.directory
            self.out.append(Exchange(
                source_kind=SOURCE_KIND, session_id=sess.id, key=turn["key"], user=turn["user"],
                assistant="\n".join(turn["reply"]).strip(), timestamp=turn["ts"],
                agent=f"{AGENT}/{SUBAGENT}" if self.subagent else AGENT, title=sess.title or None,
                position=len(self.out), kind=kind, tools=tuple(turn["tools"]), extra=tuple(extra),
                files=tuple(turn["files"]), cwd=cwd or None, project=sess.directory or cwd or None,
            ))
        return self.out

    # -- messages -----------------------------------------------------------------------------------------
    def message(self, msg: Message) -> None:
        role = msg.info.get("role")
        if role == "user":
            self.user(msg)
        elif role == "assistant":
            self.assistant(msg)
        else:
            self.ledger.skipped(msg.ref, f"{as_str(role) or 'untyped'} message")
            for ref, _ in msg.parts:
                self.ledger.skipped(ref, "part of an unread message")

    def user(self, msg: Message) -> None:
        said: list[tuple[Ref, str]] = []
        attached: list[tuple[Ref, str]] = []
        skipped: list[tuple[Ref, str]] = []
        compaction = False
        for ref, part in msg.parts:
            ptype = as_str(part.get("type"))
            if ptype == "text":
                text = strip_injected(as_str(part.get("text"))).strip()
                if part.get("synthetic") is True:
                    skipped.append((ref, "synthetic text (OpenCode's injection)"))
                elif part.get("ignored") is True:
                    skipped.append((ref, "ignored text"))
                elif text:
                    said.append((ref, text))
                else:
                    skipped.append((ref, "injected context" if part.get("text") else "empty"))
            elif ptype == "file":
                attached.append((ref, _attachment(part)))
            elif ptype == "compaction":
                compaction = True
                skipped.append((ref, "compaction request"))
            elif ptype == "agent":
                skipped.append((ref, "agent mention"))
            elif ptype == "subtask":
                skipped.append((ref, "subtask request"))
            elif ptype in _DROPPED:
                skipped.append((ref, _DROPPED[ptype]))
            else:
                skipped.append((ref, f"unknown part type: {ptype or 'none'}"))
        for ref, reason in skipped:
            self.ledger.skipped(ref, reason)
        text = "\n".join(t for _, t in said)
        if self.subagent and (text or attached):  # the task its parent agent wrote: never the user's prompt
            turn = self.turn or self.start(msg.id, "", msg.info.get("time", {}).get("created")
                                           if isinstance(msg.info.get("time"), Mapping) else None)
            turn["reply"].append(f"[sub-agent task] {text}".rstrip())
            turn["reply"].extend(line for _, line in attached)
            self.ledger.stored(msg.ref, turn["key"], "sub-agent task")
            for ref, _ in [*said, *attached]:
                self.ledger.folded(ref, turn["key"], "sub-agent task")
            return
        if not (text or attached):
            self.pending_summary = compaction
            self.turn = None  # what answers an injection is not an answer to the last prompt
            self.ledger.skipped(msg.ref, "compaction request" if compaction else "no typed text")
            return
        self.pending_summary = False
        user = "\n".join(x for x in [text, *(line for _, line in attached)] if x)
        created = msg.info.get("time")
        turn = self.start(msg.id, user, created.get("created") if isinstance(created, Mapping) else None)
        self.ledger.stored(msg.ref, turn["key"], "prompt")
        for ref, _ in said:
            self.ledger.stored(ref, turn["key"], "prompt text")
        for ref, _ in attached:
            self.ledger.folded(ref, turn["key"], "attachment")

    def assistant(self, msg: Message) -> None:
        info = msg.info
        parent = as_str(info.get("parentID"))
        turn = self.turns.get(parent) if parent and not self.subagent else None
        turn = turn or self.turn
        created = info.get("time")
        ts = created.get("created") if isinstance(created, Mapping) else None
        if info.get("summary") is True or (turn is None and self.pending_summary):
            turn = self.start(msg.id, "", ts, "summary")
            self.pending_summary = False
        elif turn is None:
            turn = self.start(msg.id, "", ts)  # an answer before any prompt: kept, with no prompt
        if not turn["model"] and isinstance(info.get("modelID"), str):
            turn["model"] = info["modelID"]
        path = info.get("path")
        if not turn["cwd"] and isinstance(path, Mapping) and isinstance(path.get("cwd"), str):
            turn["cwd"] = path["cwd"]
        kept = False
        for ref, part in msg.parts:
            kept = self.answer_part(turn, ref, part) or kept
        error = _error_line(info.get("error"))
        if error:
            turn["reply"].append(error)
        if kept:
            self.ledger.stored(msg.ref, turn["key"], "answer")
        elif error:
            self.ledger.folded(msg.ref, turn["key"], "error")
        else:
            self.ledger.folded(msg.ref, turn["key"], "answer with no text")

    def answer_part(self, turn: dict[str, Any], ref: Ref, part: Mapping[str, Any]) -> bool:
        ptype = as_str(part.get("type"))
        if ptype == "text":
            text = strip_injected(as_str(part.get("text"))).strip()
            if text and part.get("synthetic") is not True:
                turn["reply"].append(text)
                self.ledger.stored(ref, turn["key"], "answer text")
                return True
            self.ledger.skipped(ref, "synthetic text (OpenCode's injection)" if text else "empty")
        elif ptype == "tool":
            name, lines = _tool_lines(part)
            turn["tools"].append(name)
            turn["reply"].extend(lines)
            state = part.get("state")
            tool_input = state.get("input") if isinstance(state, Mapping) else None
            if name in FILE_TOOLS and isinstance(tool_input, Mapping):
                for key in ("filePath", "file_path", "path"):
                    add_unique(turn["files"], touched_path(tool_input.get(key), turn["cwd"] or self.session.directory))
            self.ledger.folded(ref, turn["key"], "tool call")
        elif ptype == "file":
            turn["reply"].append(_attachment(part))
            self.ledger.folded(ref, turn["key"], "attachment")
        elif ptype == "subtask":
            turn["reply"].append(f"[sub-agent: {one_line(as_str(part.get('agent')), 60)}] "
                                 f"{one_line(as_str(part.get('description')), MAX_ARG)}".rstrip())
            self.ledger.folded(ref, turn["key"], "subtask")
        elif ptype in _DROPPED:
            self.ledger.skipped(ref, _DROPPED[ptype])
        elif ptype == "agent":
            self.ledger.skipped(ref, "agent mention")
        else:
            self.ledger.skipped(ref, f"unknown part type: {ptype or 'none'}")
        return False


def _order(msg: Message) -> tuple[float, str]:
    return msg.created, msg.id


def read_session(session: Session, messages: Sequence[Message], ledger: Ledger) -> list[Exchange]:
    """The exchanges of one session, every message and part accounted for in ``ledger``."""
    reader = _Reader(session, ledger)
    for msg in sorted(messages, key=_order):
        msg.parts.sort(key=lambda p: as_str(p[1].get("id")) or str(p[0]))
        reader.message(msg)
    return reader.finish()
