"""The reader of a Cline-family task's ``ui_messages.json`` (pure): the task as the user saw it.

``ui_messages.json`` is one JSON array the extension rewrites as the task grows; each message is
``{ts, type: "say"|"ask", say|ask: <kind>, text, images?, files?, partial?, ...}`` and its ``ts`` (epoch ms) is
its id, kept across rewrites (a streaming message is updated in place under the same ``ts``). Cline, Roo Code
and Kilo Code write the same shape.

One exchange per prompt, keyed by the prompt's ``ts``: the task (the first ``say: text``, or ``say: task``,
before any API request) and each ``say: user_feedback`` (a follow-up, an answer to a question, the words given
with a rejected tool) are the user's words, with ``[image]`` / ``[file: path]`` for what they attached. The
answer is the assistant's ``text``, questions (``followup``), plan responses and ``completion_result``; tool
asks (``tool``, ``command``, ``use_mcp_server``, ``browser_action*``, ``new_task``) become ``[tool: NAME] args``
with their output (``command_output``, ``mcp_server_response``, ``browser_action_result``, a sub-task's
result) folded as ``  -> ...``; errors as ``[error] ...``. Reasoning, API request records (their environment
details give the workspace), checkpoints and UI-only notices are skipped, each with its reason.

A Roo Code sub-task (its ``history_item.json`` names a ``parentTaskId``) opens with the task its parent's model
wrote, not the user's words: it is kept as ``[sub-task] ...`` in an exchange of kind ``subagent`` with no prompt,
in its root task's session and linked to the exchange whose ``newTask`` call started it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mempald.normalize.common import MAX_ARG, MAX_RESULT, add_unique, as_str, one_line, touched_path
from mempald.normalize.format import loads
from mempald.normalize.ledger import Ledger
from mempald.normalize.model import Exchange, strip_injected

SUBAGENT = "subagent"
_THINKING = re.compile(r"<thinking>.*?(?:</thinking>|$)", re.S)
_ANSWERS = frozenset({"text", "completion_result", "followup", "plan_mode_respond", "act_mode_respond"})
_TOOLS = frozenset({"tool", "command", "use_mcp_server", "browser_action_launch", "browser_action", "new_task",
                    "condense", "summarize_task"})
_RESULTS = {"command_output": "", "mcp_server_response": "", "browser_action_result": "",
            "subtask_result": "[sub-task result] ", "codebase_search_result": "", "user_feedback_diff": "[user edit] "}
_ERRORS = frozenset({"error", "api_req_failed", "mistake_limit_reached", "diff_error", "clineignore_error",
                     "rooignore_error", "error_retry", "condense_context_error"})
_SKIPS = {
    "reasoning": "reasoning", "api_req_started": "API request", "api_req_finished": "API request",
    "api_req_retried": "API request", "api_req_retry_delayed": "API request", "api_req_deleted": "API request",
    "deleted_api_reqs": "API request", "checkpoint_created": "checkpoint", "checkpoint_saved": "checkpoint",
    "shell_integration_warning": "UI notice", "shell_integration_warning_with_suggestion": "UI notice",
    "task_progress": "task progress list", "condense_context": "context condensed",
    "sliding_window_truncation": "context condensed", "mcp_server_request_started": "UI notice",
    "load_mcp_documentation": "UI notice", "resume_task": "resume prompt", "resume_completed_task": "resume prompt",
    "auto_approval_max_req_reached": "UI notice", "user_edit_todos": "todo list", "too_many_tools_warning":
    "UI notice", "hook": "hook notice", "hook_output": "hook notice", "info": "UI notice", "report_bug": "UI notice",
}
_ARG_KEYS = ("path", "command", "regex", "query", "url", "question", "serverName", "uri", "content", "context",
             "mode")
_FILE_TOOLS = frozenset({"readFile", "editedExistingFile", "newFileCreated", "appliedDiff", "insertContent",
                         "searchAndReplace", "fileDeleted"})


def iso_ms(ts: Any) -> str | None:
    """An epoch-milliseconds ``ts`` as ISO-8601 UTC (None when it is not one)."""
    if not isinstance(ts, int | float) or isinstance(ts, bool):
        return None
    try:
        return datetime.fromtimestamp(ts / 1000, UTC).isoformat()
    except (OverflowError, OSError, ValueError):
        return None


def _attachments(msg: dict[str, Any]) -> list[str]:
    out: list[str] = []
    images = msg.get("images")
    out += ["[image]" for img in images if isinstance(img, str) and img] if isinstance(images, list) else []
    files = msg.get("files")
    out += [f"[file: {one_line(f, MAX_ARG)}]" for f in files if isinstance(f, str) and f] if isinstance(
        files, list) else []
    return out


def _tool_line(kind: str, text: str) -> tuple[str, str, str]:
    """``(tool name, summary line, path it names)`` of a tool ask/say."""
    body = loads(text) if text.lstrip().startswith("{") else None
    if not isinstance(body, dict):
        name = {"command": "execute_command", "browser_action_launch": "browser_action"}.get(kind, kind)
        return name, f"[tool: {name}] {one_line(text, MAX_ARG)}".rstrip(), ""
    if kind == "use_mcp_server":
        name = "/".join(x for x in (as_str(body.get("serverName")), as_str(body.get("toolName"))) if x) or "mcp"
        arg = body.get("arguments") or as_str(body.get("uri"))
        return name, f"[tool: {name}] {one_line(arg, MAX_ARG) if arg else ''}".rstrip(), ""
    name = as_str(body.get("tool")) or as_str(body.get("action")) or kind
    arg = next((body[k] for k in _ARG_KEYS if isinstance(body.get(k), str) and body[k].strip()), "")
    path = as_str(body.get("path")) if name in _FILE_TOOLS else ""
    whole = as_str(body.get("content")) if name == "readFile" else ""  # Cline: the absolute path read
    if whole and "\n" not in whole and (whole.startswith("/") or whole[1:3] in (":\\", ":/")):
        path = whole
    return name, f"[tool: {name}] {one_line(arg, MAX_ARG)}".rstrip(), path


def _answer_text(kind: str, text: str) -> str:
    if kind in ("followup", "plan_mode_respond", "act_mode_respond") and text.lstrip().startswith("{"):
        body = loads(text)
        if isinstance(body, dict):
            said = as_str(body.get("question")) or as_str(body.get("response"))
            options = body.get("options") or body.get("suggest")
            opts = [as_str(o) or as_str(o.get("answer")) if isinstance(o, dict) else as_str(o)
                    for o in options] if isinstance(options, list) else []
            opts = [o for o in opts if o]
            return said + (f"\n[options: {one_line(' | '.join(opts), MAX_RESULT)}]" if opts else "")
    return _THINKING.sub("", text)


@dataclass
class Turn:
    key: str
    user: str
    ts: Any
    kind: str = "exchange"
    reply: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


@dataclass
class TaskReader:
    """Reads the messages of one task, in order; ``out`` and ``ledger`` hold what it found."""

    session_id: str
    agent: str
    cwd: str
    subtask: bool = False
    title: str | None = None
    out: list[Exchange] = field(default_factory=list)
    ledger: Ledger = field(default_factory=Ledger)
    turn: Turn | None = None
    asked: bool = False  # an API request was made: a later "text" is the assistant's
    keys: set[str] = field(default_factory=set)
    prefix: str = ""  # a sub-task's exchange keys start with its task id (its session is its root task's)
    parent: str = ""  # a sub-task: the key of the exchange in its parent task that started it
    spawned: dict[str, str] = field(default_factory=dict)  # a sub-task's text -> the exchange that started it

    def close(self) -> None:
        t, self.turn = self.turn, None
        if t is None:
            return
        self.out.append(Exchange(
            source_kind="cline", session_id=self.session_id, key=t.key, user=t.user,
            assistant="\n".join(r for r in t.reply if r).strip(), timestamp=iso_ms(t.ts), cwd=self.cwd or None,
            agent=self.agent if t.kind != SUBAGENT else f"{self.agent}/{SUBAGENT}", title=self.title,
            position=len(self.out), kind=t.kind, tools=tuple(t.tools), files=tuple(t.files),
            project=self.cwd or None, parent=self.parent if t.kind == SUBAGENT else ""))

    def _key(self, msg: dict[str, Any], ref: str) -> str:
        ts, own = msg.get("ts"), msg.get("id")
        key = self.prefix + (own if isinstance(own, str) and own else str(int(ts)) if isinstance(
            ts, int | float) and not isinstance(ts, bool) else ref)
        if key in self.keys:
            key = f"{key}:{ref}"
        self.keys.add(key)
        return key

    def message(self, i: int, msg: Any) -> None:
        ref = f"ui_messages.json#{i}"
        if not isinstance(msg, dict):
            self.ledger.skipped(ref, "not an object")
            return
        mtype = as_str(msg.get("type"))
        kind = as_str(msg.get(mtype)) if mtype in ("say", "ask") else ""
        text = as_str(msg.get("text"))
        if not kind:
            self.ledger.skipped(ref, f"unknown message type {mtype or '?'}")
            return
        opening = kind == "text" and mtype == "say" and not self.asked and self.turn is None and not self.out
        if kind in ("task", "user_feedback") or opening:
            self.prompt(ref, msg, text, opening=kind != "user_feedback")
        elif kind in _SKIPS:
            self.asked = self.asked or kind.startswith("api_req")
            self.ledger.skipped(ref, _SKIPS[kind])
        elif self.turn is None:
            self.ledger.skipped(ref, f"{kind} before any prompt")
        elif kind in _ANSWERS:
            said = _answer_text(kind, text).strip()
            if said:
                self.turn.reply.append(strip_injected(said))
                self.ledger.stored(ref, self.turn.key, "answer")
            else:
                self.ledger.skipped(ref, "empty")
        elif kind in _TOOLS:
            name, line, path = _tool_line(kind, text)
            if name == "newTask":
                body = loads(text)
                self.spawned[as_str(body.get("content")).strip() if isinstance(body, dict) else ""] = self.turn.key
            self.turn.tools.append(name)
            self.turn.reply.append(line)
            add_unique(self.turn.files, touched_path(path, self.cwd or None))
            self.ledger.folded(ref, self.turn.key, "tool call")
        elif kind in _RESULTS:
            if text.strip():
                self.turn.reply.append(f"  -> {_RESULTS[kind]}{one_line(text, MAX_RESULT)}")
            self.ledger.folded(ref, self.turn.key, "tool result")
        elif kind in _ERRORS:
            self.turn.reply.append(f"[error] {one_line(text, MAX_RESULT)}".rstrip())
            self.ledger.folded(ref, self.turn.key, "error")
        else:
            self.ledger.skipped(ref, f"unknown {mtype}: {kind}")

    def prompt(self, ref: str, msg: dict[str, Any], text: str, *, opening: bool) -> None:
        self.close()
        words = "\n".join(x for x in [strip_injected(text).strip(), *_attachments(msg)] if x)
        if not words:
            self.ledger.skipped(ref, "empty prompt")
            return
        key = self._key(msg, ref)
        if opening and self.subtask:  # a sub-task's opening: its parent's model wrote it
            self.turn = Turn(key, "", msg.get("ts"), SUBAGENT, [f"[sub-task] {words}"])
            self.ledger.stored(ref, key, "sub-task")
            return
        self.turn = Turn(key, words, msg.get("ts"))
        self.ledger.stored(ref, key, "prompt")
        if opening and self.title is None:
            self.title = one_line(words, 80)
