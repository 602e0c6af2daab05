"""Claude Code session transcripts (``~/.claude/projects/<encoded-cwd>/<session>.jsonl``), SCHEMAS.md section 1.

One exchange per human prompt: the prompt (typed text, a slash command ``/x args`` or bash mode ``! cmd``) plus
everything the assistant said until the next prompt, with streaming parts (one line per content block) merged
by ``message.id``, tool calls and results summarised into short lines (``claude_code_text``), command output
folded in, and meta, progress, hook, snapshot and injected lines skipped with a reason in the ledger.

- A compaction summary is an exchange of kind ``summary`` (user empty), keyed by ``normalize.compaction``.
- Sub-agent work is kept as exchanges of kind ``subagent``: never as the user's prompt (user empty; the task
  the assistant gave it opens the text), agent ``claude/subagent[:<agentId>]``, ``parent`` the key of the
  exchange whose ``Task``/``Agent`` call started it. Inline sidechains of 1.0.x files are matched to their
  call by the prompt; a sub-agent file gets its parent from the cursor context (``claude_code_beside``).
  ``Warmup`` sidechains and ``agent-acompact-*`` are skipped: they hold nothing anyone typed or asked.
- A background task's notification (``origin.kind`` ``task-notification``, text ``<task-notification>``) is
  not the user's words: folded into the exchange in progress as one ``[task notification] <summary>`` line (its
  answer stays in that exchange), skipped when no exchange is open. Another ``origin.kind`` but ``human`` (a
  ``peer`` process posting into the session) opens an exchange with no prompt: ``[peer message from X] text``.
- A ``/btw`` side question (``agent-aside_question-*.jsonl``) replays the parent's history before the question:
  that copy is skipped (it is stored from the session file); the user's question, out of the system-reminder
  Claude Code wraps it in, is the prompt of one exchange (agent ``claude/side-question``) with its answer.
- The title: ``custom-title`` > ``ai-title`` > ``summary`` > ``last-prompt``; the wing: the first cwd.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from mempald.normalize import claude_code_text as text_of
from mempald.normalize import quotes
from mempald.normalize.claude_code_beside import beside
from mempald.normalize.claude_code_text import text_blocks
from mempald.normalize.common import add_unique, touched_path
from mempald.normalize.common import as_str as _s
from mempald.normalize.compaction import compaction_key
from mempald.normalize.format import Format, Input, Parsed, Place, Probe, loads
from mempald.normalize.ledger import Ledger
from mempald.normalize.model import CursorContext, Exchange, Line, strip_injected

SOURCE_KIND = "claude_code"
FILE_TOOLS = frozenset({"Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "NotebookRead"})
AGENT_TOOLS = frozenset({"Task", "Agent"})
_TITLE_RANK = {"custom-title": 5, "ai-title": 4, "agent-name": 3, "summary": 2, "last-prompt": 1}
_TITLE_KEY = {"custom-title": "customTitle", "ai-title": "aiTitle", "agent-name": "agentName", "summary": "summary",
              "last-prompt": "lastPrompt"}
_SKIP_TYPES = {t: t.replace("-", " ") for t in ("progress", "queue-operation", "permission-mode", "pr-link",
                                                "agent-setting", "bridge-session", "worktree-state", "mode",
                                                "atis-latch")} | {"file-history-snapshot": "file snapshot"}
TYPES = frozenset({"user", "assistant", "summary", "system", "attachment", *_TITLE_KEY, *_SKIP_TYPES})
ASIDE = "aside_question"  # the agent id (and file name) of a /btw side question: agent-aside_question-<hex>.jsonl


@dataclass
class _Open:
    record: dict[str, Any]
    offset: int
    user: str
    kind: str = "exchange"
    key: str = ""
    parent: str = ""
    agent: str = "claude"
    agent_type: str = ""
    reply: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    quotes: dict[str, list[str]] = field(default_factory=dict)  # file -> digests of lines written into it
    seen: set[tuple[str, str]] = field(default_factory=set)
    command: bool = False


@dataclass
class _Pending:  # a Task/Agent call waiting for its sidechain (1.0.x inline) or result
    parent: str
    prompt: str
    agent_type: str


class _Reader:
    def __init__(self, inp: Input) -> None:
        self.ctx = replace(inp.context, format=SOURCE_KIND)
        self.ledger = Ledger()
        self.out: list[Exchange] = []
        self.position = inp.context.position
        self.main: _Open | None = None
        self.side: _Open | None = None
        self.skip_side = ""  # reason the current sidechain is skipped (warmup), if it is
        self.calls: dict[str, str] = {}  # tool_use id -> tool name
        self.pending: dict[str, _Pending] = {}  # Task/Agent tool_use id -> its call, until its sidechain starts
        self.agent_calls: dict[str, _Pending] = {}  # every Task/Agent tool_use id -> its call
        self.links: dict[str, tuple[str, str]] = {}  # sub-agent id -> (parent exchange key, sub-agent type)
        self.aside = ASIDE in inp.name.rsplit("/", 1)[-1]  # a /btw side question's file

    # exchanges -------------------------------------------------------------------------------------------
    def open(self, rec: dict[str, Any], offset: int, user: str, **kw: Any) -> _Open:
        return _Open(rec, offset, user, key=str(rec.get("uuid") or f"offset:{offset}"), **kw)

    def close(self, which: str) -> None:
        cur = self.main if which == "main" else self.side
        if cur is None:
            return
        if which == "main":
            self.main = None
        else:
            self.side = None
        rec = cur.record
        assistant = "\n".join(cur.reply).strip()
        if not cur.user and not assistant:
            self.ledger.drop(cur.key, "empty exchange")
            return
        extra: tuple[tuple[str, str], ...] = (("subagent_type", cur.agent_type),) if cur.agent_type else ()
        if cur.quotes:
            extra += (("quotes", quotes.encode(cur.quotes)),)
        self.out.append(Exchange(
            source_kind=SOURCE_KIND, session_id=_s(rec.get("sessionId")) or self.ctx.session_id, key=cur.key,
            user=cur.user, assistant=assistant, timestamp=_s(rec.get("timestamp")) or None,
            cwd=_s(rec.get("cwd")) or None, git_branch=_s(rec.get("gitBranch")) or None, agent=cur.agent,
            title=self.ctx.title or None, position=self.position, offset=cur.offset, kind=cur.kind,
            tools=tuple(cur.tools), files=tuple(cur.files), parent=cur.parent, extra=extra,
            project=self.ctx.cwd or _s(rec.get("cwd")) or None,
        ))
        self.position += 1

    # records ---------------------------------------------------------------------------------------------
    def line(self, line: Line) -> None:
        rec = loads(line.raw)
        ref = line.offset
        if not isinstance(rec, dict):
            self.ledger.skipped(ref, "not JSON")
            return
        rtype = rec.get("type") if isinstance(rec.get("type"), str) else None
        if not self.ctx.session_id and isinstance(rec.get("sessionId"), str):
            self.ctx = replace(self.ctx, session_id=rec["sessionId"])
        if not self.ctx.cwd and isinstance(rec.get("cwd"), str) and rec["cwd"]:
            self.ctx = replace(self.ctx, cwd=rec["cwd"])
        if rtype in _TITLE_KEY:
            title = _s(rec.get(_TITLE_KEY[rtype]))
            self.ctx = self.ctx.with_title(title, _TITLE_RANK[rtype])
            self.ledger.skipped(ref, "title record" if title else "empty title record")
            return
        if rtype == "progress":
            data = rec.get("data")
            if isinstance(data, dict) and data.get("type") == "agent_progress":
                self.link(_s(data.get("agentId")), _s(rec.get("parentToolUseID")))
        if rtype in _SKIP_TYPES:
            self.ledger.skipped(ref, _SKIP_TYPES[rtype])
            return
        agent_id = _s(rec.get("agentId"))
        if agent_id.startswith("acompact"):
            self.ledger.skipped(ref, "compaction agent")
            return
        if self.aside or agent_id.startswith(ASIDE):
            self.side_question(rec, line)
            return
        if rtype == "system":
            self.system(rec, ref)
        elif rtype == "attachment":
            att = rec.get("attachment")
            kind = _s(att.get("type")) if isinstance(att, dict) else ""
            self.ledger.skipped(ref, f"attachment: {kind or '?'}")
        elif rtype in ("user", "assistant") and isinstance(rec.get("message"), dict):
            if rec.get("isSidechain") is True:
                self.sidechain(rec, line, agent_id)
            elif rtype == "user":
                self.user(rec, line)
            else:
                self.assistant(rec, line, self.main, "main")
        else:
            self.ledger.skipped(ref, "unknown record type" if rtype not in TYPES else f"{rtype} without a message")

    def system(self, rec: dict[str, Any], ref: int) -> None:
        # local_command records (/model, /config... run without the model) are the UI's echo of a setting
        # change, kept out of the exchanges; compact_boundary, turn_duration, hook summaries, api errors: state
        self.ledger.skipped(ref, f"system: {_s(rec.get('subtype')) or '?'}")

    def user(self, rec: dict[str, Any], line: Line) -> None:
        msg = rec["message"]
        content = msg.get("content")
        ref = line.offset
        if rec.get("isCompactSummary"):
            self.close("main")
            summary = strip_injected(text_blocks(content) or "").strip()
            self.main = self.open(rec, line.offset, "", kind="summary", reply=[summary])  # (key: the hook's copy's)
            self.main.key = compaction_key(_s(rec.get("sessionId")) or self.ctx.session_id, summary) or self.main.key
            self.ledger.stored(ref, self.main.key, "compaction summary")
            return
        text = text_blocks(content)
        if rec.get("isMeta"):
            self.ledger.skipped(ref, text_of.meta_reason(text, self.main is not None and self.main.command))
            return
        if text is None:
            self.tool_results(rec, content, ref, self.main)
            return
        kind, body = text_of.classify(text)
        origin = rec.get("origin")
        if kind == "notification" or (isinstance(origin, dict) and origin.get("kind") == "task-notification"):
            if self.main is None:
                return self.ledger.skipped(ref, "task notification")
            summary = body if kind == "notification" else text_of.notification_summary(text)
            self.main.reply.append(f"[task notification] {summary}".strip())
            self.ledger.folded(ref, self.main.key, "task notification")
            return
        posted = text_of.posted_by(origin)
        if posted:  # another process, a channel, an agent wrote it: an exchange with no prompt keeps its answer
            self.close("main")
            self.main = self.open(rec, line.offset, "", reply=[f"[{posted}] {text.strip()}"])
            self.ledger.stored(ref, self.main.key, f"{posted.split(' from ')[0]} (no prompt)")
            return
        if kind == "command" and body.split(" ", 1)[0] == "/compact" and self.main is not None and \
                self.main.kind == "summary":
            # 2.x writes the summary first, then the /compact line that asked for it: one exchange
            self.main.reply.append(f"[command: {body}]")
            self.ledger.folded(ref, self.main.key, "the command that compacted")
            return
        if kind in ("prompt", "command", "bash"):
            self.close("main")
            self.main = self.open(rec, line.offset, body, command=kind == "command")
            self.ledger.stored(ref, self.main.key, kind)
        elif kind in ("output", "interrupt") and self.main is not None:
            if body:
                self.main.reply.append(body if kind == "interrupt" else f"  -> {text_of.one_line_output(body)}")
            self.ledger.folded(ref, self.main.key, "command output" if kind == "output" else "interrupt")
        else:
            self.ledger.skipped(ref, body if kind in ("injected", "continued") else f"{kind} before any prompt")

    def tool_results(self, rec: dict[str, Any], content: Any, ref: int, cur: _Open | None) -> None:
        if cur is None:
            self.ledger.skipped(ref, "tool result before any prompt")
            return
        tur = rec.get("toolUseResult")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                if isinstance(tur, dict):
                    self.link(_s(tur.get("agentId")), _s(block.get("tool_use_id")))
                name = self.calls.get(_s(block.get("tool_use_id")), "")
                result = text_of.result_summary(name, block, rec)
                if result:
                    cur.reply.append(result)
        self.ledger.folded(ref, cur.key, "tool result")

    def assistant(self, rec: dict[str, Any], line: Line, cur: _Open | None, which: str) -> None:
        ref = line.offset
        if cur is None:  # an answer with no prompt before it in this read: keep it, with no prompt
            if which == "main":
                cur = self.main = self.open(rec, line.offset, "")
            else:
                cur = self.side = self.open(rec, line.offset, "", kind="subagent", parent=self.ctx.parent,
                                            agent=self.agent_name(_s(rec.get("agentId"))),
                                            agent_type=self.ctx.agent_type)
        msg = rec["message"]
        content = msg.get("content")
        mid = str(msg.get("id") or rec.get("uuid") or "")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        said = called = dup = False
        for block in blocks:
            if not isinstance(block, dict):
                continue
            sig = (mid, json.dumps(block, sort_keys=True, ensure_ascii=False)[:4096])
            if sig in cur.seen:
                dup = True
                continue
            cur.seen.add(sig)
            btype = block.get("type")
            if btype == "text" and isinstance(block.get("text"), str) and block["text"].strip():
                cur.reply.append(strip_injected(block["text"]).strip())
                said = True
            elif btype == "tool_use" and isinstance(block.get("name"), str):
                self.tool_use(block, rec, cur)
                called = True
        if said:
            self.ledger.stored(ref, cur.key, "answer")
        elif called:
            self.ledger.folded(ref, cur.key, "tool call")
        else:
            self.ledger.skipped(ref, "duplicate" if dup else "thinking" if any(
                isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking") for b in blocks)
                else "no text")

    def tool_use(self, block: dict[str, Any], rec: dict[str, Any], cur: _Open) -> None:
        name = block["name"]
        tool_input = block.get("input")
        self.calls[_s(block.get("id"))] = name
        cur.tools.append(name)
        cur.reply.append(text_of.tool_summary(name, tool_input))
        if not isinstance(tool_input, dict):
            return
        if name in FILE_TOOLS:
            path = touched_path(tool_input.get("file_path") or tool_input.get("notebook_path"),
                                _s(rec.get("cwd")) or None)
            add_unique(cur.files, path)
            quotes.add_written(cur.quotes, path, tool_input)
        elif name in AGENT_TOOLS and cur is self.main:
            call = _Pending(cur.key, _s(tool_input.get("prompt")).strip(), _s(tool_input.get("subagent_type")))
            self.pending[_s(block.get("id"))] = self.agent_calls[_s(block.get("id"))] = call

    def link(self, agent_id: str, tool_use_id: str) -> None:
        call = self.agent_calls.get(tool_use_id)
        if agent_id and call is not None:
            self.links[agent_id] = (call.parent, call.agent_type)

    # sub-agents --------------------------------------------------------------------------------------------
    def side_question(self, rec: dict[str, Any], line: Line) -> None:
        """A record of a /btw side question's file: the parent's history (skipped), then the question and its
        answer (one exchange)."""
        ref = line.offset
        msg = rec.get("message")
        if rec.get("type") not in ("user", "assistant") or not isinstance(msg, dict):
            self.ledger.skipped(ref, "side question: " + (_s(rec.get("type")) or "unknown") + " record")
            return
        text = text_blocks(msg.get("content")) if rec.get("type") == "user" else None
        question = text_of.side_question(text) if text is not None else None
        if question is not None:
            self.close("side")
            self.side = self.open(rec, line.offset, question or "[side question]", parent=self.ctx.parent,
                                  agent="claude/side-question")
            self.ledger.stored(ref, self.side.key, "side question")
        elif self.side is None:  # before the question: the parent's history, copied
            self.ledger.skipped(ref, "side question: copy of the parent's history")
        elif rec.get("type") == "assistant":
            self.assistant(rec, line, self.side, "side")
        elif text is None:
            self.tool_results(rec, msg.get("content"), ref, self.side)
        else:
            self.ledger.skipped(ref, "side question: after the answer")

    def sidechain(self, rec: dict[str, Any], line: Line, agent_id: str) -> None:
        ref = line.offset
        msg = rec["message"]
        text = text_blocks(msg.get("content")) if rec.get("type") == "user" else None
        if rec.get("type") == "user" and text is not None and not rec.get("isMeta"):
            if text.strip() == "Warmup":
                self.close("side")
                self.skip_side = "warmup sidechain"
                self.ledger.skipped(ref, self.skip_side)
                return
            self.skip_side = ""
            self.close("side")
            self.side = self.subagent(rec, line, agent_id, text.strip())
            self.ledger.stored(ref, self.side.key, "sub-agent task")
            return
        if self.skip_side:
            self.ledger.skipped(ref, self.skip_side)
            return
        if rec.get("type") == "user":
            if rec.get("isMeta"):
                self.ledger.skipped(ref, "meta")
            else:
                self.tool_results(rec, msg.get("content"), ref, self.side)
            return
        self.assistant(rec, line, self.side, "side")

    def agent_name(self, agent_id: str) -> str:
        return f"claude/subagent:{agent_id}" if agent_id else "claude/subagent"

    def subagent(self, rec: dict[str, Any], line: Line, agent_id: str, prompt: str) -> _Open:
        parent, agent_type = self.ctx.parent, self.ctx.agent_type
        if self.main is not None:  # an inline sidechain (1.0.x): its call is in this file, before it
            match = next((k for k, p in self.pending.items() if p.prompt and p.prompt == prompt), None)
            if match is None and self.pending:
                match = next(reversed(self.pending))
            call = self.pending.pop(match) if match is not None else None
            parent = call.parent if call else self.main.key
            agent_type = call.agent_type if call else agent_type
        label = f"[sub-agent{' ' + agent_type if agent_type else ''} task]"
        return self.open(rec, line.offset, "", kind="subagent", parent=parent, agent=self.agent_name(agent_id),
                         agent_type=agent_type, reply=[f"{label} {prompt}".strip()])

    def finish(self) -> Parsed:
        still_open = [c.offset for c in (self.main, self.side) if c is not None]
        self.close("side")
        self.close("main")
        # Number the exchanges in the order they started (a sub-agent's runs inside its parent's exchange).
        self.out.sort(key=lambda e: e.offset or 0)
        first = self.ctx.position
        self.out = [replace(e, position=first + i) for i, e in enumerate(self.out)]
        resume = None
        if still_open:  # read again from the first exchange that may still grow
            at = min(still_open)
            pos = next((e.position for e in self.out if e.offset is not None and e.offset >= at), None)
            resume = (at, pos) if pos is not None else None
        return Parsed(self.out, self.ledger, self.ctx, resume)


def parse(inp: Input) -> Parsed:
    """Exchanges of the given complete lines, in file order; never raises on bad lines (they are skipped)."""
    reader = _Reader(inp)
    for line in inp.lines:
        reader.line(line)
    return reader.finish()


def parse_lines(lines: Sequence[Line], *, first_position: int = 0) -> list[Exchange]:  # (a fresh context)
    return parse(Input(lines=lines, context=CursorContext(format=SOURCE_KIND, position=first_position))).exchanges


def agent_links(lines: Sequence[Line]) -> dict[str, tuple[str, str]]:
    """For a session file: each sub-agent it started (by agent id, from the ``Task``/``Agent`` results and the
    ``agent_progress`` records) -> (the key of the exchange whose call started it, the sub-agent type)."""
    reader = _Reader(Input(lines=lines))
    for line in lines:
        reader.line(line)
    return reader.links


def detect(probe: Probe) -> bool:
    """JSONL records with a Claude Code ``type`` and one of its envelope keys; or a cut first line that has
    them."""
    for rec in probe.records:
        if isinstance(rec.get("type"), str) and rec["type"] in TYPES and any(k in rec for k in (
                "parentUuid", "isSidechain", "sessionId", "leafUuid", "messageId")):
            return True
    first = probe.text.split("\n", 1)[0][:4096]
    return first.startswith("{") and '"parentUuid"' in first and ('"sessionId"' in first or '"isSidechain"' in first)


_HOME = ("~/.claude/projects",)
FORMAT = Format(SOURCE_KIND, "lines", detect, parse, suffixes=(".jsonl",), agent="claude", beside=beside,
                archive=True, places=(Place("Claude Code", linux=_HOME, macos=_HOME, windows=_HOME, globs=(
                    "**/*.jsonl",), setting="claude_projects"),), summary="Claude Code session transcripts")
