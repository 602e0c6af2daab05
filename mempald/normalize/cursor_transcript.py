"""Cursor's agent transcripts: ``~/.cursor/projects/<project slug>/agent-transcripts/``, written by the Cursor IDE's
agent and by the ``cursor-agent`` CLI (a ``document`` format, read whole when it changes; exchange keys from the
prompts, ``ids="message"``).

What was verified, and where (public parsers and files people committed, read through the tool library):

- the layouts: ``agent-transcripts/<uuid>/<uuid>.jsonl`` (current releases: codeburn's ``cursor-agent.ts``,
  agent-sessions' guide "verified against Cursor 3.5.38", agentgrep's cursor-cli backend), sub-agents in
  ``agent-transcripts/<uuid>/subagents/<uuid2>.jsonl`` (codeburn, agentgrep, potsherd's format notes), and the
  legacy ``agent-transcripts/<uuid>.txt`` (codeburn, a real transcript committed in a public repository). The
  ``<uuid>`` is the conversation's id, the ``composerId`` of Cursor's ``state.vscdb`` (potsherd) and the agent id
  of the CLI's ``~/.cursor/chats/*/<uuid>/store.db``; nothing inside the file carries it.
- ``<project slug>``: the workspace's absolute path with every run of characters other than letters and digits
  made one ``-``, no leading dash (``/Users/lola.salehu@akeneo.com/Desktop/coding/Return-It`` ->
  ``Users-lola-salehu-akeneo-com-Desktop-coding-Return-It`` in a real file; ``_`` and ``.`` too); on Windows the
  drive letter in lower case (``C:\\Programm`` -> ``c-Programm``); a window with no folder is a number (its
  creation time in ms) or ``empty-window``. The folder also holds ``terminals/``, ``mcps/``, ``assets/``,
  ``agent-tools/``: never conversations, so the place's globs name only ``agent-transcripts``.
- a ``.jsonl`` record is exactly ``{"role": "user" | "assistant", "message": {"content": [parts]}}`` (no id, no
  time, no type); parts ``{type: text, text}`` and ``{type: tool_use, name, input}`` (``input`` an object, or the
  patch itself for ``ApplyPatch``; a name may hold a newline); reasoning is written into the text as prose, and
  ``[REDACTED]`` paragraphs stand for what Cursor withheld. Defensively read too: ``tool_result`` parts, ``tool``
  records, ``thinking`` / ``reasoning`` parts (dropped) and ``{"type": "turn_ended"}`` markers. **The last
  record has no newline after it** (all four files potsherd characterised): a reader of complete lines would
  never see a session's last answer, so the file is read whole (``reads="document"``), its last line kept when it
  is whole JSON (a line still being written is skipped, and read with the next change). Byte-identical repeated
  records occur and are kept.
- user messages (``cursor_transcript_text``): ``<user_query>`` holds the prompt, ``<timestamp>`` its time; the
  sub-agent's and background task's follow-ups are Cursor's, never prompts (they continue the exchange before).
- the legacy ``.txt`` grows as its session goes (moollm's notes on ``~/.cursor``: "growing in real-time"); its
  assistant marker is ``assistant:`` or ``A:``, its thinking ``[Thinking]`` or ``<think>`` (real files of both).

One format reads both shapes: a default root (``~/.cursor/projects``) belongs to one format, and a place's format
is fixed for every file under it (``mempald.sources.places``), so ``parse`` tells them apart by their first byte.

Not stored twice: Cursor writes the same conversation into its ``state.vscdb`` (read by ``cursor``) and the CLI
into its ``store.db``; every reading gives an exchange the source kind ``cursor``, the conversation's uuid as
session and ``cursor_bubbles.prompt_key(uuid, typed prompt, seen)`` as key, so they land on the same drawers. A
sub-agent's transcript is one exchange of kind ``subagent`` in its parent's session (its first user message is
the task its parent gave it, not the user's), linked to the parent exchange whose ``Subagent`` call gave that task
(``cursor_transcript_beside``). The wing: the workspace folder the slug names, found on disk
(``beside``: every dash may have been a ``/``, a ``.``, a space...), else a ``Workspace Path`` a message names,
else the wing ``cursor``.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from mempald.normalize import cursor_transcript_text as txt
from mempald.normalize.common import MAX_RESULT, add_unique, as_str, one_line
from mempald.normalize.cursor_bubbles import prompt_key
from mempald.normalize.cursor_transcript_beside import FOLDER, beside, where
from mempald.normalize.format import Format, Input, Parsed, Place, Probe, loads
from mempald.normalize.ledger import Ledger
from mempald.normalize.model import Exchange, strip_injected

NAME = "cursor_transcript"
SOURCE_KIND = "cursor"  # the kind Cursor's store gives the same exchanges (``cursor``): one set of drawers
AGENT = "cursor"
# The wing of a chat with no workspace folder (a window with none open, a folder gone). WORKAROUND, narrow: a format
# cannot declare the wing of exchanges with no cwd, and the file's folders would name it ``agent-transcripts`` or
# the slug, so such an exchange's ``project`` (read only for its wing) is this name rather than a path.
NO_WORKSPACE = "cursor"
ROLES = ("user", "assistant", "system", "tool")
_REDACTED = re.compile(r"^[ \t]*\[REDACTED\][ \t]*$", re.M)
_HEAD = re.compile(r'^\{\s*"role"\s*:\s*"(?:user|assistant|system|tool)"\s*,\s*"message"\s*:')
_FOREIGN = frozenset({"type", "uuid", "sessionId", "parentUuid", "payload"})  # keys of other agents' records


class _Conversation:
    """The exchanges of one transcript as its messages come, in order."""

    def __init__(self, inp: Input, ledger: Ledger) -> None:
        self.cid, self.sub, _slug = where(inp.name)
        self.cwd = inp.context.cwd
        self.parent = inp.context.parent if self.sub else ""  # the exchange that started a sub-agent (``beside``)
        self.ledger = ledger
        self.out: list[Exchange] = []
        self.seen: dict[str, int] = {}
        self.key = ""
        self.user = ""
        self.when: str | None = None
        self.last_when: str | None = None
        self.answer: list[str] = []
        self.tools: list[str] = []
        self.files: list[str] = []
        self.attached: list[str] = []

    def close(self) -> None:
        if self.key and (self.user or any(a.strip() for a in self.answer) or self.attached):
            text = re.sub(r"\n{3,}", "\n\n", "\n\n".join(a.strip("\n") for a in self.answer if a.strip())).strip()
            extra = (("attachments", "\n".join(self.attached)),) if self.attached else ()
            self.out.append(Exchange(
                SOURCE_KIND, self.cid, self.key, self.user, text, timestamp=self.when or self.last_when,
                cwd=self.cwd or None, agent=f"{AGENT}/subagent" if self.sub else AGENT, position=len(self.out),
                tools=tuple(self.tools), files=tuple(self.files), extra=extra,
                kind="subagent" if self.sub else "exchange", parent=self.parent,
                project=self.cwd or NO_WORKSPACE))  # (see NO_WORKSPACE)
        self.key, self.user, self.when = "", "", None
        self.answer, self.tools, self.files, self.attached = [], [], [], []

    def prompt(self, ref: str, text: str) -> None:
        said = txt.said(text)
        self.last_when = said.when or self.last_when
        if said.workspace and not self.cwd:
            self.cwd = said.workspace
        if self.sub:  # a sub-agent's "user" messages are its parent's task and the harness's nudges
            self.open()
            task = said.prompt or strip_injected(text).strip()
            if task:
                self.answer.append(f"[task] {task}" if not self.answer else f"[from the parent] {one_line(task)}")
                self.ledger.folded(ref, self.key, "task from the parent agent")
            else:
                self.ledger.skipped(ref, "empty message")
            return
        if said.cursors:
            if self.key:
                if said.note:
                    self.answer.append(said.note)
                self.ledger.folded(ref, self.key, txt.CURSORS_OWN)
            else:
                self.ledger.skipped(ref, txt.CURSORS_OWN)
            return
        if not said.prompt and not said.attached:
            self.ledger.skipped(ref, "empty prompt")
            return
        self.close()
        self.user, self.when, self.attached = said.prompt, said.when, said.attached
        self.key = prompt_key(self.cid, said.prompt, self.seen) if said.prompt else f"{self.cid}:m{len(self.out)}"
        self.ledger.stored(ref, self.key, "prompt")

    def open(self) -> None:
        if not self.key:  # an answer with no prompt before it (a sub-agent's, or a transcript's cut head)
            self.key = f"subagent:{self.sub}" if self.sub else f"{self.cid}:a{len(self.out)}"

    def reply(self, ref: str, parts: list[str], tools: list[str], files: list[str], spoke: bool,
              thought: bool) -> None:
        if not any(p.strip() for p in parts):
            self.ledger.skipped(ref, "thinking only" if thought else "empty message")
            return
        self.open()
        self.answer += parts
        for t in tools:
            add_unique(self.tools, t)
        for f in files:
            add_unique(self.files, f)
        if spoke:
            self.ledger.stored(ref, self.key, "answer")
        else:
            self.ledger.folded(ref, self.key, "tool call")

    def result(self, ref: str, text: str) -> None:
        if not self.key:
            self.ledger.skipped(ref, "tool result before any message")
            return
        if text.strip():
            self.answer.append("  -> " + one_line(text, MAX_RESULT))
        self.ledger.folded(ref, self.key, "tool result")


def _result_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(as_str(v.get("text")) if isinstance(v, dict) else as_str(v) for v in value)
    return as_str(value.get("text")) if isinstance(value, dict) else ""


def _record(conv: _Conversation, ref: str, rec: dict[str, Any]) -> None:
    role = rec.get("role")
    message = rec.get("message")
    content = message.get("content") if isinstance(message, dict) else rec.get("content")
    parts = [p for p in content if isinstance(p, dict)] if isinstance(content, list) else (
        [{"type": "text", "text": content}] if isinstance(content, str) else [])
    if role == "user":
        if any(p.get("type") == "tool_result" for p in parts) and not any(p.get("type") == "text" for p in parts):
            conv.result(ref, "\n".join(_result_text(p.get("content")) for p in parts))
            return
        conv.prompt(ref, "\n".join(as_str(p.get("text")) for p in parts if p.get("type") in ("text", None)))
    elif role == "assistant":
        out: list[str] = []
        tools: list[str] = []
        files: list[str] = []
        spoke = thought = False
        for p in parts:
            kind = p.get("type")
            if kind == "text":
                text, had = txt.unthink(_REDACTED.sub("", strip_injected(as_str(p.get("text")))))
                text, thought = text.strip("\n"), thought or had
                if text.strip():
                    out.append(text)
                    spoke = True
            elif kind in ("tool_use", "tool-call", "tool_call"):
                name, line, touched = txt.tool_summary(as_str(p.get("name")) or as_str(p.get("toolName")),
                                                       p.get("input", p.get("args")), conv.cwd or None)
                add_unique(tools, name)
                out.append(line)
                for f in touched:
                    add_unique(files, f)
            elif kind == "tool_result":
                out.append("  -> " + one_line(_result_text(p.get("content")), MAX_RESULT))
            elif kind in ("thinking", "reasoning", "redacted_thinking"):
                thought = True
        conv.reply(ref, out, tools, files, spoke, thought)
    elif role == "tool":
        conv.result(ref, "\n".join(_result_text(p.get("content", p.get("result"))) for p in parts))
    elif role == "system":
        conv.ledger.skipped(ref, "system prompt")
    elif isinstance(rec.get("type"), str):
        conv.ledger.skipped(ref, f"{rec['type']} marker")
    else:
        conv.ledger.skipped(ref, "not a message (no role)")


def _jsonl(text: str, conv: _Conversation) -> None:
    lines = text.split("\n")
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        rec = loads(raw)
        if not isinstance(rec, dict):
            last = n == len(lines) or not any(x.strip() for x in lines[n:])
            conv.ledger.skipped(f"line {n}", "incomplete last line (still being written)" if last and rec is None
                                else "not JSON" if rec is None else "not an object")
            continue
        _record(conv, f"line {n}", rec)


def _text(text: str, conv: _Conversation) -> None:
    found, before = txt.messages(text)
    if not found:
        if before:
            conv.ledger.skipped("line 1", "not a Cursor transcript (no user: / assistant: messages)")
        return
    if before:
        conv.ledger.skipped(f"line {before[0]}", "text before the first message")
    for role, body, line in found:
        ref = f"line {line}"
        if role == "user":
            conv.prompt(ref, body)
        else:
            said = txt.answer(body, conv.cwd or None)
            parts = ["\n".join(said.text)] if said.text else []
            conv.reply(ref, parts, said.tools, said.files, said.spoke, said.thought)


def parse(inp: Input) -> Parsed:
    """The exchanges of a whole transcript, ``.jsonl`` or ``.txt`` (module docstring). Never raises."""
    ledger = Ledger()
    conv = _Conversation(inp, ledger)
    text = inp.data.decode("utf-8", errors="replace").lstrip("\ufeff")
    if not text.strip():
        ledger.skipped("file", "empty")
    elif text.lstrip().startswith("{") or inp.name.lower().endswith(".jsonl"):
        _jsonl(text, conv)
    else:
        _text(text, conv)
    conv.close()
    return Parsed(conv.out, ledger, replace(inp.context, format=NAME, session_id=conv.cid, cwd=conv.cwd))


def detect(probe: Probe) -> bool:
    """A ``.jsonl`` file whose records are ``{"role", "message"}`` and nothing else, or a ``.txt`` file opening with
    a ``user:`` line and holding Cursor's ``<user_query>`` or an ``assistant:`` line."""
    base = probe.base.lower()
    if base.endswith(".jsonl"):
        heads = [r for r in probe.records[:3] if "role" in r]
        if heads:
            return all(r.get("role") in ROLES and isinstance(r.get("message"), dict) and not _FOREIGN & set(r)
                       for r in heads)
        return _HEAD.match(probe.text) is not None
    if base.endswith(".txt") and re.match(r"user:[ \t]*\r?\n", probe.text):
        return "<user_query>" in probe.text or re.search(r"^(?:assistant|A):[ \t]*$", probe.text, re.M) is not None
    return False


_GLOBS = (f"*/{FOLDER}/*/*.jsonl", f"*/{FOLDER}/*/subagents/*.jsonl", f"*/{FOLDER}/*.txt", f"*/{FOLDER}/*/*.txt")
PLACES = (Place("Cursor (agent transcripts)", linux=("~/.cursor/projects",), macos=("~/.cursor/projects",),
                windows=("%USERPROFILE%/.cursor/projects",), globs=_GLOBS),)

# (archived byte for byte: Cursor prunes this tree, a ``.agent-data-cleanup-<date>`` marker left behind)
FORMAT = Format(NAME, "document", detect, parse, suffixes=(".jsonl", ".txt"), agent=AGENT, places=PLACES, copy=True,
                ids="message", beside=beside, archive=True,
                summary="Cursor's agent transcripts (~/.cursor/projects/*/agent-transcripts)")
